package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.exec.Sandboxes;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.testkit.McpPeers;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Stdio MCP servers on a sandbox node, against the real reference server (server-everything) and a few
 * broken ones: the tool list, a call, an error result, content that is not text, a server that does not
 * exist, crashes, talks nonsense or hangs, and the node's environment kept from the server.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class McpToolTest {

    @TempDir
    Path temp;
    private Vertx vertx;
    private WorkerExecutor blocking;
    private final Map<String, String> environment = new HashMap<>(System.getenv());
    private final List<SandboxService> services = new java.util.ArrayList<>();

    @BeforeEach
    void start() throws IOException {
        assumeTrue(HostSupport.detect("auto", 65_534, 65_534).isolation() != Isolation.NONE, "this host cannot run processes");
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        vertx = Vertx.vertx();
        blocking = vertx.createSharedWorkerExecutor("test-mcp", 4);
    }

    @AfterEach
    void stop() {
        // Warm MCP servers stay up between calls: the node stopping stops them.
        services.forEach(SandboxService::stop);
        if (vertx != null) {
            result(vertx.close());
        }
    }

    private SandboxService service(Map<String, String> overrides) {
        Map<String, String> settings = new HashMap<>(Map.of("sandbox.readOnlyPaths", McpPeers.folder().toString()));
        settings.putAll(overrides);
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), settings);
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        HostSupport host = HostSupport.detect("auto", sandbox.runAsUid(), sandbox.runAsGid());
        var http = vertx.createHttpClient();
        SandboxService service = new SandboxService(vertx, config, new ProcessSandbox(host, sandbox, temp.resolve("runs")),
                new WebFetcher(vertx, http, sandbox.web(), name -> Future.failedFuture("no names in this test")),
                new BraveSearch(http, sandbox.web(), environment), blocking, environment, new MicrometerMetrics("test"));
        services.add(service);
        return service;
    }

    /** A .mcp.json with the reference server as "everything", plus {@code more} entries. */
    private static String mcpJson(String more) {
        JsonObject everything = new JsonObject().put("command", McpPeers.node())
                .put("args", new JsonArray().add(McpPeers.everything().toString()).add("stdio"));
        return "{\"mcpServers\": {\"everything\": " + everything.encode() + (more.isEmpty() ? "" : ", " + more) + "}}";
    }

    private static ToolCall call(String tool, JsonObject arguments, String mcpJson, long timeoutMs) {
        return new ToolCall(UUID.randomUUID().toString(), "acme", 1, tool, arguments.encode(), Map.of(".mcp.json", mcpJson),
                Map.of(), timeoutMs);
    }

    private ToolResult run(SandboxService service, String tool, JsonObject arguments, String mcpJson) {
        return result(service.execute(call(tool, arguments, mcpJson, 30_000)), java.time.Duration.ofSeconds(60));
    }

    @Test
    void theReferenceServersToolsAreListedWithTheirSchemas() {
        ToolResult result = run(service(Map.of()), "mcp__everything", new JsonObject(), mcpJson(""));
        assertThat(result.status()).as(result.output()).isEqualTo(ToolResult.OK);
        JsonArray tools = new JsonObject(result.output()).getJsonArray("tools");
        JsonObject echo = tools.stream().map(JsonObject.class::cast).filter(t -> t.getString("name").equals("echo")).findFirst().orElseThrow();
        assertThat(echo.getJsonObject("inputSchema").getJsonObject("properties").containsKey("message")).isTrue();
        assertThat(tools.stream().map(t -> ((JsonObject) t).getString("name")).toList()).contains("get-sum", "get-tiny-image");
    }

    @Test
    void aToolCallReturnsItsTextContent() {
        ToolResult result = run(service(Map.of()), "mcp__everything__echo", new JsonObject().put("message", "tide at 06:12"), mcpJson(""));
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).isEqualTo("Echo: tide at 06:12");
    }

    @Test
    void aResultMarkedIsErrorIsAnError() {
        ToolResult result = run(service(Map.of()), "mcp__everything__echo", new JsonObject(), mcpJson(""));
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.output()).contains("Invalid arguments for tool echo");
    }

    @Test
    void contentThatIsNotTextIsDescribedNotDropped() {
        ToolResult result = run(service(Map.of()), "mcp__everything__get-tiny-image", new JsonObject(), mcpJson(""));
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).containsPattern("\\[image image/png, about \\d+ bytes, not shown]");
    }

    @Test
    void aServerWhoseProgramDoesNotExistFailsClearly() {
        ToolResult result = run(service(Map.of()), "mcp__ghost", new JsonObject(),
                mcpJson("\"ghost\": {\"command\": \"/nonexistent/mcp-ghost\"}"));
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.output()).startsWith("the MCP server 'ghost': the server closed its")
                .contains("before answering initialize (it exited with code 127)").contains("/nonexistent/mcp-ghost: No such file");
    }

    @Test
    void aServerThatCrashesOrTalksNonsenseFailsWithWhatItSaid() {
        String servers = "\"crash\": {\"command\": \"sh\", \"args\": [\"-c\", \"echo out of cheese >&2; exit 3\"]}, "
                + "\"chatty\": {\"command\": \"sh\", \"args\": [\"-c\", \"echo hello there; sleep 5\"]}";
        SandboxService service = service(Map.of());
        ToolResult crash = run(service, "mcp__crash", new JsonObject(), mcpJson(servers));
        assertThat(crash.status()).isEqualTo(ToolResult.ERROR);
        assertThat(crash.output()).isEqualTo("the MCP server 'crash': the server closed its output before answering initialize "
                + "(it exited with code 3); its stderr ends: out of cheese");
        ToolResult chatty = run(service, "mcp__chatty__anything", new JsonObject(), mcpJson(servers));
        assertThat(chatty.output()).isEqualTo("the MCP server 'chatty': the server wrote something other than JSON-RPC on stdout "
                + "before answering initialize: hello there");
    }

    @Test
    void aServerThatHangsIsKilledAtItsTimeLimit() {
        String servers = "\"sleepy\": {\"command\": \"sleep\", \"args\": [\"60\"], \"timeoutMs\": 1500}";
        long started = System.nanoTime();
        // the worker sends the server's own limit as the call's
        ToolResult result = result(service(Map.of()).execute(call("mcp__sleepy", new JsonObject(), mcpJson(servers), 1_500)));
        assertThat(result.status()).isEqualTo(ToolResult.TIMEOUT);
        assertThat(result.output()).isEqualTo("the MCP server 'sleepy' did not answer initialize within 1500 ms; it was stopped");
        assertThat(System.nanoTime() - started).isLessThan(TimeUnit.SECONDS.toNanos(20));
    }

    @Test
    void aServerThatFloodsItsOutputIsStoppedAtTheCap() {
        String servers = "\"flood\": {\"command\": \"cat\", \"args\": [\"/dev/zero\"]}";
        ToolResult result = run(service(Map.of("sandbox.maxOutputBytes", "4096")), "mcp__flood", new JsonObject(), mcpJson(servers));
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.output()).isEqualTo("the MCP server 'flood' wrote more than 4096 bytes (sandbox.maxOutputBytes); it was stopped");
    }

    @Test
    void aBadServerEntryIsNamedAndOnlyThatServerFails() {
        String servers = "\"broken\": {\"command\": \"x\", \"env\": {\"API_KEY\": \"sk-literal\"}}";
        SandboxService service = service(Map.of());
        ToolResult broken = run(service, "mcp__broken", new JsonObject(), mcpJson(servers));
        assertThat(broken.status()).isEqualTo(ToolResult.INVALID_ARGS);
        assertThat(broken.output()).startsWith("server 'broken': \"env\": API_KEY must be \"${API_KEY}\"");
        assertThat(run(service, "mcp__everything__echo", new JsonObject().put("message", "still here"), mcpJson(servers)).output())
                .isEqualTo("Echo: still here");
    }

    @Test
    void theServerGetsOnlyTheVariablesItDeclaresAndTheNodeAllows() {
        String canary = Sandboxes.canary();
        environment.put("MCP_TEST_TOKEN", "mcp-token-0123456789");
        String declaring = "{\"mcpServers\": {\"everything\": " + new JsonObject().put("command", McpPeers.node())
                .put("args", new JsonArray().add(McpPeers.everything().toString()).add("stdio"))
                .put("env", new JsonObject().put("MCP_TEST_TOKEN", "${MCP_TEST_TOKEN}").put(Sandboxes.CANARY_ENV, "${" + Sandboxes.CANARY_ENV + "}"))
                .encode() + "}}";
        // given a node that allows the token but not the canary, which the server declares too
        ToolResult result = run(service(Map.of("sandbox.allowedEnv", "MCP_TEST_TOKEN")), "mcp__everything__get-env",
                new JsonObject(), declaring);
        // then the token reaches it (redacted on the way back, as the node's secret) and the canary does not
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).contains("\"MCP_TEST_TOKEN\": \"[REDACTED]\"").doesNotContain("mcp-token-0123456789")
                .doesNotContain(Sandboxes.CANARY_ENV).doesNotContain(canary);
        // and a server that declares nothing gets none of the node's variables, whatever the node allows
        ToolResult plain = run(service(Map.of("sandbox.allowedEnv", "MCP_TEST_TOKEN," + Sandboxes.CANARY_ENV)),
                "mcp__everything__get-env", new JsonObject(), mcpJson(""));
        assertThat(plain.output()).doesNotContain("MCP_TEST_TOKEN").doesNotContain(Sandboxes.CANARY_ENV).doesNotContain(canary)
                .contains("\"PATH\"");
    }
}
