package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.mcp.WarmSessions;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Warm stdio MCP sessions on a sandbox node (issue 16), against the real reference server (server-everything) in
 * the real sandbox: one server per tenant, bot and server, reused by later calls; stopped when idle, past its life,
 * when the node needs room, at a call's time limit, when it crashes, when the node stops; the output cap per answer;
 * and the latency of a warm call against a server started for each call (printed, and written to
 * {@code target/mcp-warm-latency.txt}; never asserted).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class WarmMcpSessionsTest {

    @TempDir
    Path temp;
    private Vertx vertx;
    private WorkerExecutor blocking;
    private final List<SandboxService> services = new ArrayList<>();

    @BeforeEach
    void start() throws IOException {
        assumeTrue(HostSupport.detect("auto", 65_534, 65_534).isolation() != Isolation.NONE, "this host cannot run processes");
        McpPeers.everything();
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        vertx = Vertx.vertx();
        blocking = vertx.createSharedWorkerExecutor("test-warm-mcp", 4);
    }

    @AfterEach
    void stop() {
        services.forEach(SandboxService::stop);
        if (vertx != null) {
            result(vertx.close());
        }
    }

    private SandboxService service(Map<String, String> overrides) {
        return service(overrides, new MicrometerMetrics("test"));
    }

    private SandboxService service(Map<String, String> overrides, MicrometerMetrics metrics) {
        Map<String, String> settings = new HashMap<>(Map.of("sandbox.readOnlyPaths", McpPeers.folder().toString()));
        settings.putAll(overrides);
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), settings);
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        HostSupport host = HostSupport.detect("auto", sandbox.runAsUid(), sandbox.runAsGid());
        var http = vertx.createHttpClient();
        Map<String, String> environment = System.getenv();
        SandboxService service = new SandboxService(vertx, config, new ProcessSandbox(host, sandbox, temp.resolve("runs")),
                new WebFetcher(vertx, http, sandbox.web(), name -> Future.failedFuture("no names in this test")),
                new BraveSearch(http, sandbox.web(), environment), blocking, environment, metrics);
        services.add(service);
        return service;
    }

    /** A .mcp.json with the reference server as "everything". */
    private static String mcpJson() {
        return "{\"mcpServers\": {\"everything\": " + new JsonObject().put("command", McpPeers.node())
                .put("args", new JsonArray().add(McpPeers.everything().toString()).add("stdio")).encode() + "}}";
    }

    private static ToolCall call(String tenant, String bot, String tool, JsonObject arguments, Map<String, String> env, long timeoutMs) {
        return new ToolCall(ToolCall.TYPE, UUID.randomUUID().toString(), tenant, 1, tool, arguments.encode(),
                Map.of(".mcp.json", mcpJson()), env, timeoutMs, false, null, bot, null);
    }

    private static ToolCall echo(String tenant, String bot, String message) {
        return call(tenant, bot, "mcp__everything__echo", new JsonObject().put("message", message), Map.of(), 30_000);
    }

    /** A call that takes {@code seconds} on the server. */
    private static ToolCall longOperation(String bot, int seconds, long timeoutMs) {
        return call("acme", bot, "mcp__everything__trigger-long-running-operation",
                new JsonObject().put("duration", seconds).put("steps", Math.max(1, seconds)), Map.of(), timeoutMs);
    }

    private static ToolResult run(SandboxService service, ToolCall call) {
        return result(service.execute(call), Duration.ofSeconds(90));
    }

    private static ToolResult echoed(SandboxService service, String tenant, String bot, String message) {
        ToolResult result = run(service, echo(tenant, bot, message));
        assertThat(result.status()).as(result.output()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).isEqualTo("Echo: " + message);
        return result;
    }

    private static WarmSessions.Info only(SandboxService service) {
        assertThat(service.warmSessions().sessions()).hasSize(1);
        return service.warmSessions().sessions().getFirst();
    }

    private static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    private static boolean ended(long pid) {
        return ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true);
    }

    @Test
    void callsOfOneBotShareOneServerAndOtherBotsTenantsOrEntriesGetTheirOwn() throws Exception {
        MicrometerMetrics metrics = new MicrometerMetrics("test");
        SandboxService service = service(Map.of(), metrics);
        // given two calls of one bot / then one server answered both
        echoed(service, "acme", "main", "one");
        echoed(service, "acme", "main", "two");
        assertThat(service.warmSessions().starts()).isEqualTo(1);
        WarmSessions.Info shared = only(service);
        assertThat(shared.calls()).isEqualTo(2);
        // when another bot of the tenant, another tenant, and the same bot with another value of a variable call
        echoed(service, "acme", "helper", "three");
        echoed(service, "globex", "main", "four");
        ToolResult withValue = run(service, call("acme", "main", "mcp__everything__echo", new JsonObject().put("message", "five"),
                Map.of("MODE", "blue"), 30_000));
        assertThat(withValue.output()).isEqualTo("Echo: five");
        // then each got a server of its own, and the first is still the first bot's
        List<WarmSessions.Info> sessions = service.warmSessions().sessions();
        assertThat(service.warmSessions().starts()).isEqualTo(4);
        assertThat(sessions).hasSize(4);
        assertThat(sessions.stream().map(WarmSessions.Info::pid).distinct()).hasSize(4);
        assertThat(sessions.stream().map(s -> s.key().tenantId() + "/" + s.key().botId()))
                .containsExactlyInAnyOrder("acme/main", "acme/helper", "globex/main", "acme/main");
        assertThat(sessions).filteredOn(s -> s.pid() == shared.pid()).singleElement().extracting(WarmSessions.Info::calls).isEqualTo(2L);
        // and the metrics count them by tenant and bot
        assertThat(metrics.scrape())
                .contains("clawfleet_sandbox_mcp_sessions{bot=\"main\",node=\"test\",tenant=\"acme\"} 2.0")
                .contains("clawfleet_sandbox_mcp_sessions{bot=\"main\",node=\"test\",tenant=\"globex\"} 1.0")
                .contains("clawfleet_sandbox_mcp_session_starts_total{bot=\"main\",node=\"test\",tenant=\"acme\"} 2.0")
                .contains("clawfleet_sandbox_mcp_session_starts_total{bot=\"helper\",node=\"test\",tenant=\"acme\"} 1.0");
        // and the node stopping stops every one
        service.stop();
        assertThat(service.warmSessions().size()).isZero();
        assertThat(sessions).allSatisfy(s -> assertThat(ended(s.pid())).as("server %d ended", s.pid()).isTrue());
        assertThat(metrics.scrape()).contains("clawfleet_sandbox_mcp_sessions{bot=\"main\",node=\"test\",tenant=\"acme\"} 0.0");
    }

    @Test
    void aWarmCallSkipsTheServersStart() throws Exception {
        int warmCalls = 50;
        int coldCalls = 5;
        SandboxService warm = service(Map.of());
        SandboxService cold = service(Map.of("sandbox.mcpMaxSessions", "0"));
        // given a session started by a first call, and a node with warm sessions off; each path run once first
        echoed(warm, "acme", "main", "start");
        echoed(cold, "acme", "main", "start");
        // when both answer echo calls
        List<Double> warmMs = new ArrayList<>();
        for (int i = 0; i < warmCalls; i++) {
            long started = System.nanoTime();
            echoed(warm, "acme", "main", "warm " + i);
            warmMs.add((System.nanoTime() - started) / 1e6);
        }
        List<Double> coldMs = new ArrayList<>();
        for (int i = 0; i < coldCalls; i++) {
            long started = System.nanoTime();
            echoed(cold, "acme", "main", "cold " + i);
            coldMs.add((System.nanoTime() - started) / 1e6);
        }
        // then the warm node started one server for them all, the other none to keep
        assertThat(warm.warmSessions().starts()).isEqualTo(1);
        assertThat(only(warm).calls()).isEqualTo(warmCalls + 1);
        assertThat(cold.warmSessions().starts()).isZero();
        assertThat(cold.warmSessions().size()).isZero();
        String report = String.format(java.util.Locale.ROOT, """
                MCP stdio call latency, server-everything echo through SandboxService.execute (isolation: %s):
                  warm session:          median %.1f ms over %d calls
                  one process per call:  median %.1f ms over %d calls
                """, HostSupport.detect("auto", 65_534, 65_534).isolation().id(), median(warmMs), warmCalls, median(coldMs), coldCalls);
        System.out.print(report);
        Files.createDirectories(Path.of("target"));
        Files.writeString(Path.of("target", "mcp-warm-latency.txt"), report);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int middle = sorted.size() / 2;
        return sorted.size() % 2 == 1 ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
    }

    @Test
    void anIdleSessionIsStopped() throws Exception {
        SandboxService service = service(Map.of("sandbox.mcpSessionIdleMs", "400"));
        // given a session that answered a call
        echoed(service, "acme", "main", "hello");
        long pid = only(service).pid();
        // when nothing calls it for longer than its idle limit / then it is stopped, its server with it
        eventually("the idle session stopped", () -> service.warmSessions().size() == 0);
        eventually("its server ended", () -> ended(pid));
        // and the next call starts a new one
        echoed(service, "acme", "main", "again");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
    }

    @Test
    void aSessionPastItsMaxLifeFinishesItsCallAndIsStoppedAfter() throws Exception {
        SandboxService service = service(Map.of("sandbox.mcpSessionMaxLifeMs", "1000"));
        // given a call that keeps its session busy past the session's life
        Future<ToolResult> call = service.execute(longOperation("main", 2, 30_000));
        // (its server's pid read while the call holds it: once free, the reaper may stop it at any moment)
        eventually("the session's server started", () -> service.warmSessions().sessions().stream().anyMatch(s -> s.pid() > 0));
        long pid = only(service).pid();
        ToolResult slow = result(call, Duration.ofSeconds(90));
        // then the call is answered, not cut
        assertThat(slow.status()).as(slow.output()).isEqualTo(ToolResult.OK);
        assertThat(slow.output()).startsWith("Long running operation completed");
        // and the session is stopped once it is free
        eventually("the old session stopped", () -> service.warmSessions().size() == 0);
        eventually("its server ended", () -> ended(pid));
        echoed(service, "acme", "main", "new life");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
    }

    @Test
    void aFullNodeStopsItsLeastRecentlyUsedIdleSession() throws Exception {
        SandboxService service = service(Map.of("sandbox.mcpMaxSessions", "2"));
        // given sessions of bots a and b, a used last
        echoed(service, "acme", "a", "1");
        echoed(service, "acme", "b", "2");
        echoed(service, "acme", "a", "3");
        long b = service.warmSessions().sessions().stream().filter(s -> s.key().botId().equals("b")).findFirst().orElseThrow().pid();
        // when bot c calls / then b's session made room for c's
        echoed(service, "acme", "c", "4");
        assertThat(service.warmSessions().sessions()).extracting(s -> s.key().botId()).containsExactlyInAnyOrder("a", "c");
        assertThat(service.warmSessions().starts()).isEqualTo(3);
        eventually("b's server ended", () -> ended(b));
    }

    @Test
    void withEverySessionBusyACallRunsItsServerOnItsOwn() throws Exception {
        SandboxService service = service(Map.of("sandbox.mcpMaxSessions", "1"));
        // given the node's only session busy with a long call of bot a
        var busy = service.execute(longOperation("a", 3, 30_000));
        eventually("a's session busy", () -> service.warmSessions().sessions().stream().anyMatch(WarmSessions.Info::busy));
        // when bot b calls / then it is answered by a server of its own, and the node keeps only a's session
        echoed(service, "acme", "b", "not kept");
        assertThat(service.warmSessions().sessions()).extracting(s -> s.key().botId()).containsExactly("a");
        assertThat(service.warmSessions().starts()).isEqualTo(1);
        ToolResult slow = result(busy, Duration.ofSeconds(60));
        assertThat(slow.output()).as(slow.status()).startsWith("Long running operation completed");
    }

    @Test
    void callsToOneSessionTakeTurns() throws Exception {
        SandboxService service = service(Map.of());
        echoed(service, "acme", "main", "start");
        // given a long call in progress on the bot's session
        long submitted = System.nanoTime();
        var slow = service.execute(longOperation("main", 2, 30_000));
        eventually("the session busy", () -> only(service).busy());
        Thread.sleep(300);
        // when the same bot calls again / then it is answered after the long call, by the same server
        echoed(service, "acme", "main", "after");
        assertThat(System.nanoTime() - submitted).isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(2));
        assertThat(result(slow, Duration.ofSeconds(30)).status()).isEqualTo(ToolResult.OK);
        assertThat(service.warmSessions().starts()).isEqualTo(1);
        assertThat(only(service).calls()).isEqualTo(3);
    }

    @Test
    void aCallThatWaitsForItsTurnPastItsLimitIsNotSentAndTheSessionStays() throws Exception {
        SandboxService service = service(Map.of());
        echoed(service, "acme", "main", "start");
        // given a long call in progress on the bot's session
        var slow = service.execute(longOperation("main", 3, 30_000));
        eventually("the session busy", () -> only(service).busy());
        Thread.sleep(300);
        // when another call of the bot may wait only one second / then it gives up unsent
        ToolResult waited = run(service, call("acme", "main", "mcp__everything__echo", new JsonObject().put("message", "late"),
                Map.of(), 1_000));
        assertThat(waited.status()).isEqualTo(ToolResult.TIMEOUT);
        assertThat(waited.output()).isEqualTo("the MCP server 'everything' was busy with another call of this bot for all of this "
                + "call's 1000 ms; this call was not sent");
        // and the long call and the session go on
        assertThat(result(slow, Duration.ofSeconds(30)).status()).isEqualTo(ToolResult.OK);
        echoed(service, "acme", "main", "still here");
        assertThat(service.warmSessions().starts()).isEqualTo(1);
    }

    @Test
    void aCallPastItsTimeLimitStopsItsSessionAndTheNextCallGetsAFreshOne() throws Exception {
        SandboxService service = service(Map.of());
        echoed(service, "acme", "main", "start");
        long pid = only(service).pid();
        // when a call takes longer than its limit
        ToolResult late = run(service, longOperation("main", 10, 1_500));
        // then it times out as a one-off run would, and its server is killed (it may be stuck)
        assertThat(late.status()).isEqualTo(ToolResult.TIMEOUT);
        assertThat(late.output()).startsWith("the MCP server 'everything' did not answer tools/call within 1500 ms; it was stopped");
        eventually("its server ended", () -> ended(pid));
        assertThat(service.warmSessions().size()).isZero();
        // and the next call works, on a new server
        echoed(service, "acme", "main", "fresh");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
        assertThat(only(service).pid()).isNotEqualTo(pid);
    }

    @Test
    void aSessionWhoseServerDiedBetweenCallsIsReplacedAtTheNextCall() throws Exception {
        SandboxService service = service(Map.of());
        echoed(service, "acme", "main", "start");
        long pid = only(service).pid();
        // given its server killed from outside (a crash, the OOM killer)
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        eventually("the server ended", () -> ended(pid));
        // when the bot calls again / then the call is answered by a new server
        echoed(service, "acme", "main", "after the crash");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
        assertThat(only(service).pid()).isNotEqualTo(pid);
    }

    @Test
    void aServerThatDiesDuringACallFailsThatCallOnly() throws Exception {
        SandboxService service = service(Map.of());
        echoed(service, "acme", "main", "start");
        long pid = only(service).pid();
        // given a call in progress
        var interrupted = service.execute(longOperation("main", 5, 30_000));
        eventually("the session busy", () -> only(service).busy());
        Thread.sleep(300);
        // when its server dies / then that call fails, saying so
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        ToolResult failed = result(interrupted, Duration.ofSeconds(30));
        assertThat(failed.status()).isEqualTo(ToolResult.ERROR);
        assertThat(failed.output()).startsWith("the MCP server 'everything': the server closed its output before answering tools/call");
        // and the next call gets a new server
        echoed(service, "acme", "main", "after");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
    }

    @Test
    void theOutputCapAppliesToEachAnswerNotToTheSessionsLife() throws Exception {
        SandboxService service = service(Map.of("sandbox.maxOutputBytes", "4096"));
        // given answers of about 1.5 KB each / when ten of them come from one session
        String line = "x".repeat(1_400);
        for (int i = 0; i < 10; i++) {
            echoed(service, "acme", "main", line + i);
        }
        // then all were answered by one server, together well past the cap
        assertThat(service.warmSessions().starts()).isEqualTo(1);
        long pid = only(service).pid();
        // when one answer is past the cap / then that call fails as a one-off run would, and the session is stopped
        ToolResult big = run(service, echo("acme", "main", "y".repeat(5_000)));
        assertThat(big.status()).isEqualTo(ToolResult.ERROR);
        assertThat(big.output()).startsWith("the MCP server 'everything' wrote more than 4096 bytes (sandbox.maxOutputBytes); it was stopped");
        eventually("its server ended", () -> ended(pid));
        echoed(service, "acme", "main", "small again");
        assertThat(service.warmSessions().starts()).isEqualTo(2);
    }
}
