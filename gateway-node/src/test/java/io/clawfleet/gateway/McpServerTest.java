package io.clawfleet.gateway;

import io.clawfleet.testkit.EchoWorker;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.InputStream;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot as an MCP server over Streamable HTTP (issue 16): the session's life, the JSON-RPC errors, talking to the bot
 * (JSON and resumable SSE), its chats, memory, workspace files and skills, notifications, and what one tenant's key
 * or session can never reach of another's. Two gateways share the database: a session opened on one goes on on the other.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class McpServerTest {

    private static final String OPERATOR = "operator-key-0123456789abcdef";
    private TestGateway gateway;
    private TestGateway second;
    private TestGateway.Tenant acme;
    private TestGateway.Tenant other;
    private String base;
    private String acmeChat;

    @BeforeAll
    void start() throws Exception {
        gateway = TestGateway.start(Map.of("operatorKey", OPERATOR, "nodeId", "gw1", "http.replyTimeoutMs", "20000"));
        new EchoWorker(gateway.node().vertx(), gateway.pool(), 16);
        second = TestGateway.on(gateway.db()).startNode(Map.of("operatorKey", OPERATOR, "nodeId", "gw2",
                "http.replyTimeoutMs", "20000"));
        base = "http://127.0.0.1:" + gateway.node().httpPort();
        acme = gateway.tenant("acme", "Acme", null);
        other = gateway.tenant("other", "Other", null);
        acmeChat = key(acme, "chat-key", new JsonArray().add("chat"), null);
        assertThat(gateway.client().call("POST", "/api/v1/bots", acme.key(), new JsonObject().put("id", "helper")
                .put("name", "Helper")).statusCode()).isEqualTo(201);
        put(acme, "main", "memory/MEMORY.md", "# Memory\nThe user likes green tea.\nThe user lives in Lyon.\n");
        put(acme, "main", ".mcp.json", "{\"mcpServers\":{}}");
        put(acme, "main", "skills/greet/SKILL.md", "---\nname: greet\ndescription: Greet a visitor warmly\n---\nSay hello by name.\n");
        put(other, "main", "memory/MEMORY.md", "Other tenant's secret: blue cheese.\n");
    }

    @AfterAll
    void stop() {
        if (second != null) {
            second.stop();
        }
        if (gateway != null) {
            gateway.stop();
        }
    }

    private String key(TestGateway.Tenant tenant, String name, JsonArray scopes, JsonArray bots) throws Exception {
        JsonObject body = new JsonObject().put("name", name).put("scopes", scopes);
        if (bots != null) {
            body.put("botIds", bots);
        }
        HttpResponse<String> made = gateway.client().call("POST", "/api/v1/keys", tenant.key(), body);
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        return new JsonObject(made.body()).getJsonObject("key").getString("key");
    }

    private void put(TestGateway.Tenant tenant, String bot, String path, String content) throws Exception {
        HttpResponse<String> written = gateway.client().call("PUT", "/api/v1/bots/" + bot + "/workspace/files/" + path, tenant.key(),
                new JsonObject().put("content", content));
        assertThat(written.statusCode()).as(written.body()).isIn(200, 201);
    }

    private McpTestClient client(String key) {
        return new McpTestClient(base, "main", key);
    }

    @Test
    void initializeNegotiatesTheVersionAndOpensASession() throws Exception {
        McpTestClient mcp = client(acmeChat);
        JsonObject result = mcp.initialize("2025-06-18");
        assertThat(result.getString("protocolVersion")).isEqualTo("2025-06-18");
        assertThat(result.getJsonObject("capabilities").fieldNames()).contains("tools", "resources", "prompts", "logging");
        assertThat(result.getJsonObject("serverInfo").getString("name")).isEqualTo("clawfleet-bot-main");
        assertThat(mcp.sessionId).hasSizeGreaterThan(40);
        assertThat(client(acmeChat).initialize("1999-01-01").getString("protocolVersion")).isEqualTo("2025-11-25");
        HttpResponse<String> metrics = gateway.client().call("GET", "/metrics", OPERATOR, null);
        assertThat(metrics.body()).containsPattern("clawfleet_mcp_requests_total\\{[^}]*bot=\"main\"[^}]*method=\"initialize\"[^}]*tenant=\"acme\"");
        assertThat(gateway.value("SELECT count(*) FROM mcp_sessions WHERE id = $1", mcp.sessionId))
                .as("the session id itself is not stored").isEqualTo(0L);
    }

    @Test
    void sessionsAreRequiredKnownAndEndWithDelete() throws Exception {
        McpTestClient mcp = client(acmeChat);
        JsonObject ping = new JsonObject().put("jsonrpc", "2.0").put("id", 1).put("method", "ping");
        assertThat(mcp.post(ping, Map.of()).statusCode()).as("no session header").isEqualTo(400);
        mcp.sessionId = "no-such-session";
        HttpResponse<String> unknown = mcp.post(ping, Map.of());
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(unknown.body()).getJsonObject("error").getInteger("code")).isEqualTo(-32001);

        mcp.initialize("2025-11-25");
        assertThat(mcp.result("ping", new JsonObject())).isEqualTo(new JsonObject());
        assertThat(mcp.delete().statusCode()).isEqualTo(204);
        assertThat(mcp.post(ping, Map.of()).statusCode()).as("after DELETE").isEqualTo(404);
        assertThat(mcp.delete().statusCode()).isEqualTo(404);
    }

    @Test
    void badJsonRpcGetsTheSpecsErrors() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        HttpResponse<String> parse = mcp.postRaw("{not json", Map.of());
        assertThat(parse.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(parse.body()).getJsonObject("error").getInteger("code")).isEqualTo(-32700);
        HttpResponse<String> batch = mcp.postRaw("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", Map.of());
        assertThat(new JsonObject(batch.body()).getJsonObject("error").getInteger("code")).isEqualTo(-32600);
        HttpResponse<String> noVersion = mcp.postRaw("{\"id\":1,\"method\":\"ping\"}", Map.of());
        assertThat(new JsonObject(noVersion.body()).getJsonObject("error").getInteger("code")).isEqualTo(-32600);
        assertThat(mcp.request("no/such/method", new JsonObject()).getJsonObject("error").getInteger("code")).isEqualTo(-32601);
        assertThat(mcp.request("tools/call", new JsonObject().put("name", "rm_rf")).getJsonObject("error").getInteger("code"))
                .isEqualTo(-32602);
        assertThat(mcp.request("tools/call", new JsonObject().put("name", "send_message").put("arguments", new JsonObject()))
                .getJsonObject("error").getInteger("code")).as("text missing").isEqualTo(-32602);
        assertThat(mcp.request("logging/setLevel", new JsonObject().put("level", "loud")).getJsonObject("error")
                .getInteger("code")).isEqualTo(-32602);
        assertThat(mcp.result("logging/setLevel", new JsonObject().put("level", "warning"))).isEqualTo(new JsonObject());
        HttpResponse<String> badVersion = mcp.post(new JsonObject().put("jsonrpc", "2.0").put("id", 5).put("method", "ping"),
                Map.of("mcp-protocol-version", "2020-01-01"));
        assertThat(badVersion.statusCode()).isEqualTo(400);
    }

    @Test
    void sendMessageAnswersWithTheBotsReplyOnceForARetriedRequest() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        assertThat(mcp.result("tools/list", new JsonObject()).getJsonArray("tools").stream()
                .map(t -> ((JsonObject) t).getString("name")).toList())
                .containsExactly("send_message", "list_chats", "read_history", "search_memory");
        JsonObject call = new JsonObject().put("jsonrpc", "2.0").put("id", "retry-1").put("method", "tools/call")
                .put("params", new JsonObject().put("name", "send_message").put("arguments", new JsonObject().put("text", "hello")));
        JsonObject first = new JsonObject(mcp.post(call, Map.of()).body());
        assertThat(MCP_TEXT(first)).isEqualTo("re: hello");
        JsonObject again = new JsonObject(mcp.post(call, Map.of()).body());
        assertThat(MCP_TEXT(again)).isEqualTo("re: hello");
        assertThat(gateway.value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.tenant_id = 'acme' "
                + "AND c.channel = 'mcp' AND i.text = 'hello'")).as("one message, one turn").isEqualTo(1L);

        JsonObject history = mcp.callTool("read_history", new JsonObject());
        assertThat(McpTestClient.text(history)).contains("user: hello", "bot: re: hello");
        JsonObject chats = mcp.callTool("list_chats", new JsonObject());
        assertThat(chats.getJsonObject("structuredContent").getJsonArray("chats").stream()
                .map(c -> ((JsonObject) c).getString("channel")).toList()).contains("mcp");
    }

    private static String MCP_TEXT(JsonObject response) {
        return McpTestClient.text(response.getJsonObject("result"));
    }

    @Test
    void aStreamedReplyEndsWithTheResultAndResumesFromItsLastEvent() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        JsonObject call = new JsonObject().put("jsonrpc", "2.0").put("id", 7).put("method", "tools/call")
                .put("params", new JsonObject().put("name", "send_message").put("_meta", new JsonObject().put("progressToken", "p1"))
                        .put("arguments", new JsonObject().put("text", "stream me").put("chat", "streams")));
        List<McpTestClient.Event> events = mcp.postStream(call);
        assertThat(events.get(0).id()).endsWith(":0");
        assertThat(events.get(0).data()).isEmpty();
        McpTestClient.Event last = events.get(events.size() - 1);
        assertThat(last.id()).endsWith(":end");
        assertThat(last.json().getInteger("id")).isEqualTo(7);
        assertThat(MCP_TEXT(last.json())).isEqualTo("re: stream me");
        String stream = last.id().substring(0, last.id().lastIndexOf(':'));

        // The client lost everything after the priming event: it gets the whole reply as progress, then the result.
        HttpResponse<InputStream> resumed = mcp.openGet(stream + ":0");
        assertThat(resumed.statusCode()).isEqualTo(200);
        List<McpTestClient.Event> replay = McpTestClient.events(resumed.body(), 10);
        assertThat(replay).hasSize(2);
        assertThat(replay.get(0).json().getJsonObject("params").getString("message")).isEqualTo("re: stream me");
        assertThat(replay.get(0).json().getJsonObject("params").getValue("progressToken")).isEqualTo("p1");
        assertThat(MCP_TEXT(replay.get(1).json())).isEqualTo("re: stream me");
        // It had 5 characters: it gets the rest, nothing twice.
        List<McpTestClient.Event> rest = McpTestClient.events(mcp.openGet(stream + ":5").body(), 10);
        assertThat(rest.get(0).json().getJsonObject("params").getString("message")).isEqualTo("tream me");
        // It had the result: nothing more.
        assertThat(McpTestClient.events(mcp.openGet(stream + ":end").body(), 10)).isEmpty();
        // Another session cannot resume this session's stream.
        McpTestClient stranger = client(acmeChat);
        stranger.initialize("2025-11-25");
        assertThat(stranger.openGet(stream + ":0").statusCode()).isEqualTo(404);
    }

    @Test
    void workspaceFilesAreResourcesExceptHiddenOnes() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        JsonArray resources = mcp.result("resources/list", new JsonObject()).getJsonArray("resources");
        List<String> uris = resources.stream().map(r -> ((JsonObject) r).getString("uri")).toList();
        assertThat(uris).contains("clawfleet://bots/main/workspace/memory/MEMORY.md", "clawfleet://bots/main/workspace/skills/greet/SKILL.md");
        assertThat(uris).noneMatch(uri -> uri.contains(".mcp.json"));
        JsonObject read = mcp.result("resources/read", new JsonObject().put("uri", "clawfleet://bots/main/workspace/memory/MEMORY.md"));
        assertThat(read.getJsonArray("contents").getJsonObject(0).getString("text")).contains("green tea");
        assertThat(read.getJsonArray("contents").getJsonObject(0).getString("mimeType")).isEqualTo("text/markdown");
        assertThat(mcp.request("resources/read", new JsonObject().put("uri", "clawfleet://bots/main/workspace/.mcp.json"))
                .getJsonObject("error").getInteger("code")).isEqualTo(-32002);
        assertThat(mcp.request("resources/read", new JsonObject().put("uri", "clawfleet://bots/main/workspace/nope.md"))
                .getJsonObject("error").getInteger("code")).isEqualTo(-32002);
        assertThat(mcp.request("resources/read", new JsonObject().put("uri", "clawfleet://bots/helper/workspace/memory/MEMORY.md"))
                .getJsonObject("error").getInteger("code")).as("another bot's file").isEqualTo(-32602);
        assertThat(mcp.request("resources/read", new JsonObject().put("uri", "clawfleet://bots/main/workspace/../x"))
                .getJsonObject("error").getInteger("code")).isEqualTo(-32602);
    }

    @Test
    void skillsArePromptsAndMemoryIsSearchable() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        JsonArray prompts = mcp.result("prompts/list", new JsonObject()).getJsonArray("prompts");
        assertThat(prompts.stream().map(p -> ((JsonObject) p).getString("name")).toList()).contains("greet");
        JsonObject prompt = mcp.result("prompts/get", new JsonObject().put("name", "greet"));
        assertThat(prompt.getString("description")).isEqualTo("Greet a visitor warmly");
        assertThat(prompt.getJsonArray("messages").getJsonObject(0).getJsonObject("content").getString("text"))
                .contains("Say hello by name.");
        assertThat(mcp.request("prompts/get", new JsonObject().put("name", "nope")).getJsonObject("error").getInteger("code"))
                .isEqualTo(-32602);
        String found = McpTestClient.text(mcp.callTool("search_memory", new JsonObject().put("query", "GREEN tea")));
        assertThat(found).isEqualTo("memory/MEMORY.md:2: The user likes green tea.");
        assertThat(McpTestClient.text(mcp.callTool("search_memory", new JsonObject().put("query", "blue cheese"))))
                .as("another tenant's memory").startsWith("Nothing");
    }

    @Test
    void aSubscribedSessionIsToldWhenItsFileChanges() throws Exception {
        McpTestClient mcp = client(acmeChat);
        mcp.initialize("2025-11-25");
        McpTestClient bystander = client(acmeChat);
        bystander.initialize("2025-11-25");
        String uri = "clawfleet://bots/main/workspace/notes/todo.md";
        put(acme, "main", "notes/todo.md", "- buy milk");
        assertThat(mcp.result("resources/subscribe", new JsonObject().put("uri", uri))).isEqualTo(new JsonObject());
        CompletableFuture<List<McpTestClient.Event>> events = read(mcp, 3);
        CompletableFuture<List<McpTestClient.Event>> others = read(bystander, 3);
        Thread.sleep(300);
        put(acme, "main", "notes/todo.md", "- buy milk\n- call mum");
        List<McpTestClient.Event> got = events.get(20, TimeUnit.SECONDS);
        assertThat(got.get(0).data()).as("the priming event").isEmpty();
        List<String> methods = got.subList(1, got.size()).stream().map(e -> e.json().getString("method")).toList();
        assertThat(methods).containsExactlyInAnyOrder("notifications/resources/list_changed", "notifications/resources/updated");
        assertThat(got.stream().skip(1).filter(e -> e.json().getString("method").endsWith("updated")).findFirst().orElseThrow()
                .json().getJsonObject("params").getString("uri")).isEqualTo(uri);
        // a session not subscribed is told the list changed, each time, and never that the file did
        Thread.sleep(300);
        put(acme, "main", "notes/other.md", "x");
        assertThat(others.get(20, TimeUnit.SECONDS).stream().skip(1).map(e -> e.json().getString("method")).toList())
                .containsExactly("notifications/resources/list_changed", "notifications/resources/list_changed");
    }

    /** Opens the session's notification stream and reads {@code count} events from it in the background. */
    private static CompletableFuture<List<McpTestClient.Event>> read(McpTestClient mcp, int count) throws Exception {
        HttpResponse<InputStream> stream = mcp.openGet(null);
        assertThat(stream.statusCode()).isEqualTo(200);
        return CompletableFuture.supplyAsync(() -> {
            try (InputStream body = stream.body()) {
                return McpTestClient.events(body, count);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void aSessionGoesOnOnAnotherGateway() throws Exception {
        McpTestClient first = client(acmeChat);
        first.initialize("2025-11-25");
        assertThat(McpTestClient.text(first.callTool("send_message", new JsonObject().put("text", "over here"))))
                .isEqualTo("re: over here");
        McpTestClient other = new McpTestClient("http://127.0.0.1:" + second.node().httpPort(), "main", acmeChat);
        other.sessionId = first.sessionId;
        assertThat(other.result("tools/list", new JsonObject()).getJsonArray("tools")).hasSize(4);
        assertThat(McpTestClient.text(other.callTool("read_history", new JsonObject()))).contains("bot: re: over here");
        assertThat(other.delete().statusCode()).isEqualTo(204);
        assertThat(first.post(new JsonObject().put("jsonrpc", "2.0").put("id", 1).put("method", "ping"), Map.of()).statusCode())
                .as("ended on the other gateway").isEqualTo(404);
    }

    @Test
    void oneTenantsKeysAndSessionsReachNothingOfAnothers() throws Exception {
        McpTestClient mine = client(acmeChat);
        mine.initialize("2025-11-25");
        // Another tenant's key with this session id, on its own bot main: no such session.
        McpTestClient thief = client(other.key());
        thief.sessionId = mine.sessionId;
        HttpResponse<String> stolen = thief.post(new JsonObject().put("jsonrpc", "2.0").put("id", 1).put("method", "ping"), Map.of());
        assertThat(stolen.statusCode()).isEqualTo(404);
        // Another key of the same tenant: the session is bound to the key that opened it.
        McpTestClient colleague = client(acme.key());
        colleague.sessionId = mine.sessionId;
        assertThat(colleague.post(new JsonObject().put("jsonrpc", "2.0").put("id", 1).put("method", "ping"), Map.of()).statusCode())
                .isEqualTo(404);
        // The same session on another bot of the tenant: not found either.
        McpTestClient helper = new McpTestClient(base, "helper", acmeChat);
        helper.sessionId = mine.sessionId;
        assertThat(helper.post(new JsonObject().put("jsonrpc", "2.0").put("id", 1).put("method", "ping"), Map.of()).statusCode())
                .isEqualTo(404);
        // Another tenant's bot: there is no such bot for this key.
        assertThat(new McpTestClient(base, "helper", other.key()).post(new JsonObject().put("jsonrpc", "2.0").put("id", 0)
                .put("method", "initialize").put("params", new JsonObject().put("protocolVersion", "2025-11-25")), Map.of())
                .statusCode()).isEqualTo(404);
        // A key limited to one bot does not reach another; a read-only key does not talk to bots.
        String helperOnly = key(acme, "helper-only", new JsonArray().add("chat"), new JsonArray().add("helper"));
        assertThat(catching(() -> client(helperOnly).initialize("2025-11-25"))).contains("403");
        new McpTestClient(base, "helper", helperOnly).initialize("2025-11-25");
        String reader = key(acme, "reader", new JsonArray().add("read"), null);
        assertThat(catching(() -> client(reader).initialize("2025-11-25"))).contains("403");
        assertThat(catching(() -> client(null).initialize("2025-11-25"))).contains("401");
        // Deleting a tenant's bot... and the other tenant's rows: its sessions are its own.
        assertThat(gateway.value("SELECT count(*) FROM mcp_sessions WHERE tenant_id = 'other'")).isEqualTo(0L);
    }

    @Test
    void browserOriginsOtherThanLoopbackOrAllowedAreRefused() throws Exception {
        McpTestClient mcp = client(acmeChat);
        JsonObject init = new JsonObject().put("jsonrpc", "2.0").put("id", 0).put("method", "initialize")
                .put("params", new JsonObject().put("protocolVersion", "2025-11-25"));
        assertThat(mcp.post(init, Map.of("origin", "http://evil.example.com")).statusCode()).isEqualTo(403);
        assertThat(mcp.post(init, Map.of("origin", "http://localhost:6274")).statusCode()).isEqualTo(200);
        assertThat(mcp.post(init, Map.of()).statusCode()).as("no Origin: not a browser").isEqualTo(200);
    }

    private interface Call {
        void run() throws Exception;
    }

    private static String catching(Call call) {
        try {
            call.run();
            return "no failure";
        } catch (Throwable e) {
            return String.valueOf(e.getMessage());
        }
    }
}
