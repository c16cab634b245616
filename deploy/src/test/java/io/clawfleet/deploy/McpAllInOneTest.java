package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.McpPeers;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stdio MCP servers as a tenant meets them: all roles in one JVM, the mock model asking for tools, the
 * npm reference server (server-everything) declared in {@code .mcp.json}. An admin chat is offered and
 * calls its tools; a normal chat is neither; a tool error, a hanging or badly declared server and a
 * changed {@code .mcp.json} behave as documented in docs/SANDBOX.md. The same server over Streamable HTTP, in its
 * own process, is a remote server given with the API or the file (issue 16, docs/MCP.md).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class McpAllInOneTest {

    private static final String KEY = "mcp-e2e-key-0123456789";
    private static final String CANARY_ENV = "CLAWFLEET_TEST_CANARY";

    private Vertx vertx;
    private MockLlmServer model;
    private NodeRuntime node;
    private String base;
    private String admin;
    private ApiChat api;
    private Process remote;
    private String remoteUrl;

    @BeforeAll
    void start() throws Exception {
        McpPeers.everything();
        int port = McpPeers.freePort();
        remote = McpPeers.everythingHttp(port);
        remoteUrl = "http://127.0.0.1:" + port + "/mcp";
        vertx = Vertx.vertx();
        model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        ClawfleetConfig config = TestNodes.config("gateway,worker,sandbox", Map.of("apiKey", KEY, "agent.autonomy", "full",
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock",
                "sandbox.readOnlyPaths", McpPeers.folder().toString(), "egress.allowedHosts", "127.0.0.1"));
        node = TestNodes.start(config, db, Roles.of(config));
        base = "http://127.0.0.1:" + node.httpPort();
        api = new ApiChat(base, KEY);
        admin = "admin-" + UUID.randomUUID();
        ask(admin, "hello");
        // The operator grants the role (clawfleet admin grant --chat api:<chat>); no chat can take it.
        assertThat(call("PUT", "/api/v1/chats/api/" + admin + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
    }

    @BeforeEach
    void declareTheReferenceServer() throws Exception {
        declare(servers(""));
    }

    @AfterAll
    void stop() {
        if (node != null) {
            result(node.stop(), Duration.ofSeconds(60));
        }
        if (vertx != null) {
            result(vertx.close());
        }
        if (remote != null) {
            remote.destroyForcibly();
        }
    }

    /** A .mcp.json with the reference server as "everything", plus {@code more} entries. */
    private static String servers(String more) {
        JsonObject everything = new JsonObject().put("command", McpPeers.node())
                .put("args", new JsonArray().add(McpPeers.everything().toString()).add("stdio"));
        return "{\"mcpServers\": {\"everything\": " + everything.encode() + (more.isEmpty() ? "" : ", " + more) + "}}";
    }

    private void declare(String mcpJson) throws Exception {
        HttpResponse<String> put = call("PUT", "/api/v1/workspace/files/.mcp.json", new JsonObject().put("content", mcpJson));
        assertThat(put.statusCode()).as(put.body()).isIn(200, 201);
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return api.call(method, path, body);
    }

    private String ask(String chat, String text) throws Exception {
        return api.ask(chat, text);
    }

    /**
     * The latest model request of a turn that holds {@code text}: the admin chat, shared by these tests, is compacted
     * in the background after a turn, so the model's last request may be that chat's compaction, not the turn asked.
     */
    private String turnRequest(String text) {
        String body = model.lastRequestBody(b -> b.contains(text) && !b.contains("\"name\":\"save_memory\""));
        assertThat(body).as("a turn's model request holding '" + text + "'").isNotNull();
        return body;
    }

    @Test
    void anAdminChatIsOfferedTheServersToolsAndCallsThem() throws Exception {
        assertThat(ask(admin, "what can you do?")).isNotBlank();
        assertThat(turnRequest("what can you do?")).contains("\"mcp__everything__echo\"").contains("Echoes back the input string");
        assertThat(ask(admin, "call:mcp__everything__echo {\"message\":\"high water at 06:12\"}"))
                .contains("Echo: high water at 06:12");
    }

    @Test
    void aNormalChatIsNeitherOfferedNorAllowedMcpTools() throws Exception {
        String normal = "normal-" + UUID.randomUUID();
        assertThat(ask(normal, "what can you do?")).isNotBlank();
        assertThat(turnRequest(normal)).doesNotContain("mcp__");
        assertThat(ask(normal, "call:mcp__everything__echo {\"message\":\"hi\"}"))
                .contains("error (denied): using MCP tools is only allowed in an admin chat");
    }

    @Test
    void aToolErrorReachesTheModelAsAnError() throws Exception {
        declare(servers("\"gauge\": {\"command\": \"" + McpPeers.node() + "\", \"args\": [\""
                + McpPeers.folder().resolve("mcp-failing-tool.js") + "\"]}"));
        // the tool's name "tide.check" is made a valid function name
        assertThat(ask(admin, "call:mcp__gauge__tide_check {}")).contains("error (error): the tide gauge is offline");
    }

    @Test
    void aChangedMcpJsonIsUsedOnTheNextTurnWithoutARestart() throws Exception {
        assertThat(ask(admin, "call:mcp__everything__echo {\"message\":\"one\"}")).contains("Echo: one");
        declare(servers("").replace("\"everything\"", "\"reference\""));
        assertThat(ask(admin, "call:mcp__reference__echo {\"message\":\"two\"}")).contains("Echo: two");
        assertThat(ask(admin, "call:mcp__everything__echo {\"message\":\"three\"}")).contains("there is no tool named 'mcp__everything__echo'");
    }

    @Test
    void aHangingOrBadlyDeclaredServerCostsOnlyItsOwnTools() throws Exception {
        declare(servers("\"sleepy\": {\"command\": \"sleep\", \"args\": [\"60\"], \"timeoutMs\": 1500}, "
                + "\"leaky\": {\"command\": \"x\", \"env\": {\"OPENAI_API_KEY\": \"sk-not-here\"}}"));
        // the other server's tools still work, in the same turn that found the hanging one
        assertThat(ask(admin, "call:mcp__everything__echo {\"message\":\"still here\"}")).contains("Echo: still here");
        String listed = ask(admin, "call:skills_list {}");
        assertThat(listed).contains("- everything: 13 tools")
                .contains("- sleepy: unavailable: the MCP server 'sleepy' did not answer initialize within 1500 ms; it was stopped")
                .contains("- server 'leaky': \"env\": OPENAI_API_KEY must be \"${OPENAI_API_KEY}\"");
        assertThat(ask(admin, "call:mcp__sleepy__anything {}")).contains("there is no tool named 'mcp__sleepy__anything'");
    }

    @Test
    void theNodesSecretsNeverReachTheServer() throws Exception {
        String canary = System.getenv(CANARY_ENV);
        assertThat(canary).as(CANARY_ENV + " is set by deploy/pom.xml for this test").isNotBlank();
        String env = ask(admin, "call:mcp__everything__get-env {}");
        assertThat(env).contains("\"PATH\"").doesNotContain(canary).doesNotContain(CANARY_ENV);
        assertThat(model.lastRequestBody()).doesNotContain(canary);
    }

    @Test
    void aRemoteServerGivenWithTheApiServesEveryChatItsRulesAllowAndGoesWhenRemoved() throws Exception {
        JsonObject servers = new JsonObject().put("servers", new JsonObject().put("remote", new JsonObject()
                .put("url", remoteUrl).put("bearerToken", "tok-remote-e2e-0123456789").put("access", "everyone")
                .put("tools", new JsonObject().put("get-env", "off").put("get-sum", "admin"))));
        HttpResponse<String> put = call("PUT", "/api/v1/mcp-servers", servers);
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        try {
            assertThat(ask(admin, "call:mcp__remote__get-sum {\"a\": 20, \"b\": 22}")).contains("The sum of 20 and 22 is 42.");
            // a normal chat is offered the tools for everyone, not the admin's nor the one switched off
            String normal = "normal-" + UUID.randomUUID();
            assertThat(ask(normal, "call:mcp__remote__echo {\"message\":\"from anyone\"}")).contains("Echo: from anyone");
            assertThat(turnRequest("from anyone")).contains("\"mcp__remote__echo\"").doesNotContain("mcp__remote__get-sum")
                    .doesNotContain("mcp__remote__get-env").doesNotContain("mcp__everything__");
            assertThat(ask(normal, "call:mcp__remote__get-sum {\"a\": 1, \"b\": 2}"))
                    .contains("error (denied): using this MCP tool is only allowed in an admin chat");
            // its prompts are listed with the skills, to the chats that may use it, and read through a tool
            assertThat(ask(normal, "call:skills_list {}")).contains("- remote (127.0.0.1): ", "prompt simple-prompt")
                    .doesNotContain("- everything");
            assertThat(ask(admin, "call:mcp__remote__get_prompt {\"name\": \"simple-prompt\"}")).contains("user: ");
        } finally {
            assertThat(call("DELETE", "/api/v1/mcp-servers", null).statusCode()).isEqualTo(204);
        }
        // removed, it is gone from the next turn of every worker
        assertThat(ask(admin, "call:mcp__remote__echo {\"message\":\"gone\"}")).contains("there is no tool named 'mcp__remote__echo'");
    }

    @Test
    void aRemoteServerNamedInMcpJsonIsReachedFromTheWorker() throws Exception {
        declare(servers("\"web\": {\"type\": \"http\", \"url\": \"" + remoteUrl + "\"}"));
        assertThat(ask(admin, "call:mcp__web__echo {\"message\":\"over http\"}")).contains("Echo: over http");
        String listed = ask(admin, "call:skills_list {}");
        assertThat(listed).contains("- web (127.0.0.1): ").contains("prompt simple-prompt");
    }
}
