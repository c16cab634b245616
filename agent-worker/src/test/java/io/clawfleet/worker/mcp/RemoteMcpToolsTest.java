package io.clawfleet.worker.mcp;

import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.testkit.McpPeers;
import io.clawfleet.worker.tools.RuledTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot's remote MCP servers as tools, against the reference server ({@code server-everything}, Streamable HTTP) in
 * its own process: tools, resources and prompts become tools that reach it, the servers' access rules decide which
 * chats get which, the API's entry shadows the file's, private addresses are refused, a server that is down opens its
 * circuit, and a server's {@code list_changed} makes the worker list it again.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RemoteMcpToolsTest {

    private static final BotRef BOT = new BotRef("t1", "main");
    private static final ToolCallContext ADMIN = new ToolCallContext("t1", "main", 1, "api", "admin", "u", true, 1, 0, null);

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final Map<String, McpServers.Remote> api = new ConcurrentHashMap<>();
    private final List<Process> processes = new CopyOnWriteArrayList<>();
    private final io.clawfleet.shared.metrics.MicrometerMetrics metrics = new io.clawfleet.shared.metrics.MicrometerMetrics("test");
    private Vertx vertx;
    private RemoteMcpTools remote;
    private String everything;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        remote = tools(List.of("127.0.0.1"));
        result(remote.start());
        int port = McpPeers.freePort();
        processes.add(McpPeers.everythingHttp(port));
        everything = "http://127.0.0.1:" + port + "/mcp";
    }

    private RemoteMcpTools tools(List<String> allowed) {
        EgressGuard guard = new EgressGuard(allowed, host -> vertx.executeBlocking(() -> List.of(InetAddress.getAllByName(host))));
        return new RemoteMcpTools(vertx, guard, bot -> Future.succeededFuture(Map.copyOf(api)), 10_000, 2, 60_000, clock::get, metrics);
    }

    @AfterEach
    void stop() {
        processes.forEach(Process::destroyForcibly);
        result(vertx.close());
    }

    private static McpServers.Remote server(String name, String url, McpServers.Rules rules) {
        return new McpServers.Remote(name, url, Map.of(), 0, rules);
    }

    private static Tool named(List<Tool> tools, String name) {
        return tools.stream().filter(tool -> tool.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError(name + " not in " + tools.stream().map(Tool::name).toList()));
    }

    @Test
    void aRemoteServersToolsResourcesAndPromptsBecomeToolsThatReachIt() {
        List<McpServers.Remote> servers = List.of(server("everything", everything, McpServers.Rules.ADMIN_ONLY));
        List<Tool> tools = result(remote.tools(BOT, servers, true));

        assertThat(tools).extracting(Tool::name).contains("mcp__everything__echo", "mcp__everything__get-sum",
                "mcp__everything__list_resources", "mcp__everything__read_resource", "mcp__everything__get_prompt");
        assertThat(tools).allSatisfy(tool -> assertThat(((RuledTool) tool).access()).isEqualTo(McpServers.Access.ADMIN));
        Tool echo = named(tools, "mcp__everything__echo");
        assertThat(echo.definition().parameters().getJsonObject("properties").containsKey("message")).isTrue();
        assertThat(result(echo.execute(ADMIN, new JsonObject().put("message", "hello from a bot")))).isEqualTo("Echo: hello from a bot");
        assertThat(result(named(tools, "mcp__everything__get-sum").execute(ADMIN, new JsonObject().put("a", 2).put("b", 3))))
                .isEqualTo("The sum of 2 and 3 is 5.");

        // resources through a tool
        JsonArray resources = new JsonArray(result(named(tools, "mcp__everything__list_resources").execute(ADMIN, new JsonObject())));
        String uri = resources.stream().map(r -> ((JsonObject) r).getString("uri"))
                .filter(u -> u.startsWith("demo://resource/static/document/")).findFirst().orElseThrow();
        assertThat(result(named(tools, "mcp__everything__read_resource").execute(ADMIN, new JsonObject().put("uri", uri))))
                .isNotBlank();

        // prompts are listed with the skills, and read through a tool
        assertThat(result(remote.describe(BOT, servers))).contains("everything (127.0.0.1)", "prompt simple-prompt",
                "mcp__everything__get_prompt");
        assertThat(result(named(tools, "mcp__everything__get_prompt").execute(ADMIN, new JsonObject().put("name", "simple-prompt"))))
                .startsWith("user: ").hasSizeGreaterThan(10);

        // a tool's error result is an error the model reads; one session serves every call
        Future<String> unknown = named(tools, "mcp__everything__get-sum").execute(ADMIN, new JsonObject().put("a", "x"));
        assertThat(result(unknown.recover(e -> Future.succeededFuture(e instanceof ToolException ? "tool error" : "other: " + e))))
                .isEqualTo("tool error");
        assertThat(remote.sessions()).isEqualTo(1);
    }

    @Test
    void accessRulesDecideWhichChatsGetWhichToolsAndAnAdminOnlyServerIsNotEvenAskedForANormalChat() {
        List<McpServers.Remote> adminOnly = List.of(server("everything", everything, McpServers.Rules.ADMIN_ONLY));
        assertThat(result(remote.tools(BOT, adminOnly, false))).isEmpty();
        assertThat(remote.sessions()).isZero();

        McpServers.Rules rules = new McpServers.Rules(McpServers.Access.EVERYONE,
                Map.of("get-env", McpServers.Access.OFF, "get-sum", McpServers.Access.ADMIN));
        List<Tool> tools = result(remote.tools(BOT, List.of(server("everything", everything, rules)), false));
        assertThat(tools).extracting(Tool::name).contains("mcp__everything__echo").doesNotContain("mcp__everything__get-env");
        assertThat(((RuledTool) named(tools, "mcp__everything__echo")).access()).isEqualTo(McpServers.Access.EVERYONE);
        assertThat(((RuledTool) named(tools, "mcp__everything__get-sum")).access()).isEqualTo(McpServers.Access.ADMIN);
    }

    @Test
    void theApisEntryShadowsTheFilesOfTheSameName() {
        api.put("everything", new McpServers.Remote("everything", everything, Map.of("X-Token", "secret-value-123"), 0,
                McpServers.Rules.ADMIN_ONLY));
        List<McpServers.Remote> servers = result(remote.servers(BOT, List.of(
                server("everything", "https://elsewhere.example/mcp", McpServers.Rules.ADMIN_ONLY),
                server("docs", "https://docs.example/mcp", McpServers.Rules.ADMIN_ONLY))));
        assertThat(servers).extracting(McpServers.Remote::name).containsExactly("everything", "docs");
        assertThat(servers.getFirst().url()).isEqualTo(everything);
        assertThat(servers.getFirst().headers()).containsEntry("X-Token", "secret-value-123");
    }

    @Test
    void aPrivateAddressIsRefusedUnlessTheOperatorAllowsIt() {
        RemoteMcpTools strict = tools(List.of());
        List<McpServers.Remote> servers = List.of(server("everything", everything, McpServers.Rules.ADMIN_ONLY));
        assertThat(result(strict.tools(BOT, servers, true))).isEmpty();
        assertThat(result(strict.describe(BOT, servers))).contains("everything (127.0.0.1): unavailable").contains("127.0.0.1");
    }

    @Test
    void aServerThatIsDownOpensItsCircuitAndIsNotWaitedFor() throws Exception {
        List<McpServers.Remote> servers = List.of(server("everything", everything, McpServers.Rules.ADMIN_ONLY));
        Tool echo = named(result(remote.tools(BOT, servers, true)), "mcp__everything__echo");
        processes.forEach(Process::destroyForcibly);
        processes.getFirst().waitFor(5, TimeUnit.SECONDS);
        JsonObject args = new JsonObject().put("message", "x");
        for (int i = 0; i < 2; i++) {
            assertThat(failure(echo.execute(ADMIN, args))).contains("did not answer");
        }
        assertThat(failure(echo.execute(ADMIN, args))).contains("unavailable after repeated failures", "tried again in 60 s");
        // each outcome is counted by tenant, bot and server
        assertThat(metrics.scrape()).containsPattern("clawfleet_mcp_remote_calls_total\\{[^}]*bot=\"main\"[^}]*outcome=\"circuit_open\""
                + "[^}]*server=\"everything\"[^}]*tenant=\"t1\"[^}]*} 1.0")
                .containsPattern("clawfleet_mcp_remote_calls_total\\{[^}]*outcome=\"unreachable\"[^}]*} 2.0");
    }

    private static String failure(Future<String> call) {
        return result(call.map(ok -> "succeeded: " + ok).recover(e -> Future.succeededFuture(e.getMessage())));
    }

    @Test
    void aServersListChangedReachesEveryWorkerAndTheToolsAreListedAgain() throws Exception {
        // a server whose tool list the test changes, telling its clients on the notification stream (GET)
        List<String> names = new CopyOnWriteArrayList<>(List.of("first"));
        List<HttpServerResponse> streams = new CopyOnWriteArrayList<>();
        HttpServer peer = result(vertx.createHttpServer().requestHandler(req -> {
            if (req.method().name().equals("GET")) {
                req.response().setChunked(true).putHeader("content-type", "text/event-stream").write(": open\n\n");
                streams.add(req.response());
                return;
            }
            req.body().onSuccess(body -> {
                JsonObject message = body.toJsonObject();
                Object id = message.getValue("id");
                if (id == null) {
                    req.response().setStatusCode(202).end();
                    return;
                }
                JsonObject result = switch (message.getString("method")) {
                    case "initialize" -> new JsonObject().put("protocolVersion", "2025-11-25")
                            .put("capabilities", new JsonObject().put("tools", new JsonObject().put("listChanged", true)))
                            .put("serverInfo", new JsonObject().put("name", "changing").put("version", "1"));
                    case "tools/list" -> new JsonObject().put("tools", new JsonArray(names.stream()
                            .map(n -> (Object) new JsonObject().put("name", n).put("inputSchema", new JsonObject().put("type", "object")))
                            .toList()));
                    default -> new JsonObject();
                };
                req.response().putHeader("content-type", "application/json").putHeader("mcp-session-id", "s-1")
                        .end(new JsonObject().put("jsonrpc", "2.0").put("id", id).put("result", result).encode());
            });
        }).listen(0, "127.0.0.1"));
        // a second worker in the same cluster (here: the same event bus) that also uses the server
        RemoteMcpTools other = tools(List.of("127.0.0.1"));
        result(other.start());
        List<McpServers.Remote> servers = List.of(server("changing", "http://127.0.0.1:" + peer.actualPort() + "/mcp",
                McpServers.Rules.ADMIN_ONLY));
        assertThat(result(remote.tools(BOT, servers, true))).extracting(Tool::name).containsExactly("mcp__changing__first");
        assertThat(result(other.tools(BOT, servers, true))).extracting(Tool::name).containsExactly("mcp__changing__first");
        Await.until("both workers listen for changes", Duration.ofSeconds(10), () -> streams.size() == 2);

        // when the server's tools change and it says so on one stream
        names.add("second");
        streams.getFirst().write("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n");

        // then both workers list it again
        for (RemoteMcpTools worker : List.of(remote, other)) {
            Await.until("the new tool listed", Duration.ofSeconds(10), () -> result(worker.tools(BOT, servers, true)).size() == 2);
        }
    }
}
