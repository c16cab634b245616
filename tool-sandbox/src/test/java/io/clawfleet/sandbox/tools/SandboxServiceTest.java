package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.exec.Sandboxes;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A sandbox node's handling of tool calls, without a cluster: the shell policy, code skills (the two
 * shipped examples), web_fetch against a local server (loopback explicitly allowed, as only tests
 * should), the SSRF guard on redirects, web_search against a stand-in for Brave, the bulkhead, and
 * the node's secrets kept out of every result.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SandboxServiceTest {

    private static final String BRAVE_KEY = "brave-test-key-0123456789";

    @TempDir
    Path temp;
    private Vertx vertx;
    private HttpServer web;
    private HttpClient http;
    private WorkerExecutor blocking;
    private final Map<String, String> environment = new HashMap<>(System.getenv());
    /** The metrics of the last service made. */
    private MicrometerMetrics metrics;

    @BeforeEach
    void start() throws IOException {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        vertx = Vertx.vertx();
        web = result(vertx.createHttpServer().requestHandler(request -> {
            var response = request.response();
            switch (request.path()) {
                case "/page" -> response.putHeader("content-type", "text/html; charset=utf-8").end("""
                        <html><head><title>Tide tables</title><script>var secret = 1;</script></head>
                        <body><h1>High water</h1><p>At <b>06:12</b> and 18:40.</p><ul><li>one</li><li>two</li></ul></body></html>""");
                case "/plain" -> response.putHeader("content-type", "text/plain").end("just text");
                case "/to-page" -> response.setStatusCode(302).putHeader("location", "/page").end();
                case "/to-metadata" -> response.setStatusCode(302)
                        .putHeader("location", "http://169.254.169.254/latest/meta-data/iam/security-credentials/").end();
                case "/to-decimal-loopback" -> response.setStatusCode(301).putHeader("location", "http://2130706433:"
                        + request.localAddress().port() + "/plain").end();
                case "/to-file" -> response.setStatusCode(302).putHeader("location", "file:///etc/passwd").end();
                case "/loop" -> response.setStatusCode(302).putHeader("location", "/loop").end();
                case "/big" -> response.putHeader("content-type", "text/plain").end("x".repeat(5_000));
                case "/image" -> response.putHeader("content-type", "image/png").end(io.vertx.core.buffer.Buffer.buffer(new byte[] {1, 2}));
                case "/missing" -> response.setStatusCode(404).putHeader("content-type", "text/plain").end("no such page");
                case "/brave" -> brave(request, response);
                default -> response.setStatusCode(500).end();
            }
        }).listen(0, "127.0.0.1"));
        http = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(false));
        blocking = vertx.createSharedWorkerExecutor("test-sandbox", 4);
    }

    private static void brave(io.vertx.core.http.HttpServerRequest request, io.vertx.core.http.HttpServerResponse response) {
        if (!BRAVE_KEY.equals(request.getHeader("X-Subscription-Token"))) {
            response.setStatusCode(401).end();
            return;
        }
        JsonArray results = new JsonArray().add(new JsonObject().put("title", "Clawfleet").put("url", "https://example.com/claw")
                .put("description", "Bots <strong>at scale</strong> for " + request.getParam("q")));
        response.putHeader("content-type", "application/json").end(new JsonObject().put("web", new JsonObject().put("results", results)).encode());
    }

    @AfterEach
    void stop() {
        result(vertx.close());
    }

    private SandboxService service(Map<String, String> overrides) {
        ClawfleetConfig.Sandbox sandbox = config(overrides).sandbox();
        return service(overrides, HostSupport.detect("auto", sandbox.runAsUid(), sandbox.runAsGid()), temp.resolve("runs"));
    }

    private ClawfleetConfig config(Map<String, String> overrides) {
        Map<String, String> config = new HashMap<>(Map.of(
                "allowShell", "true",
                "sandbox.web.allowedPrivateRanges", "127.0.0.1/32",
                "sandbox.web.allowedPorts", "",
                "sandbox.web.maxResponseBytes", "2048",
                "sandbox.web.braveApiUrl", "http://127.0.0.1:" + web.actualPort() + "/brave"));
        config.putAll(overrides);
        return ConfigLoader.load(null, Map.of(), config);
    }

    /** A node on {@code host}, making its run directories under {@code workRoot}. */
    private SandboxService service(Map<String, String> overrides, HostSupport host, Path workRoot) {
        ClawfleetConfig clawfleet = config(overrides);
        ClawfleetConfig.Sandbox sandbox = clawfleet.sandbox();
        return new SandboxService(vertx, clawfleet, new ProcessSandbox(host, sandbox, workRoot),
                new WebFetcher(vertx, http, sandbox.web(), name -> Future.succeededFuture(resolve(name))),
                new BraveSearch(http, sandbox.web(), environment), blocking, environment, metrics = new MicrometerMetrics("test"));
    }

    /** A resolver for tests: a few names resolve to what an attacker would like. */
    private static List<InetAddress> resolve(String name) {
        try {
            return switch (name) {
                case "localhost.test" -> List.of(InetAddress.getByName("127.0.0.1"));
                case "metadata.test" -> List.of(InetAddress.getByName("169.254.169.254"));
                case "mixed.test" -> List.of(InetAddress.getByName("93.184.215.14"), InetAddress.getByName("10.0.0.5"));
                default -> throw new IllegalStateException("unknown host " + name);
            };
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ToolCall call(String tool, JsonObject arguments) {
        return call(tool, arguments, Map.of(), 20_000);
    }

    private static ToolCall call(String tool, JsonObject arguments, Map<String, String> files, long timeoutMs) {
        return new ToolCall(UUID.randomUUID().toString(), "acme", 1, tool, arguments.encode(), files, Map.of(), timeoutMs);
    }

    private ToolResult shell(SandboxService service, String command) {
        return result(service.execute(call("shell_exec", new JsonObject().put("command", command))));
    }

    private void assumeProcesses() {
        assumeTrue(HostSupport.detect("auto", 65_534, 65_534).isolation() != Isolation.NONE, "this host cannot run processes");
    }

    // ---- shell_exec ----

    @Test
    void anAllowedCommandRunsWithTheFilesSentAndReturnsItsOutput() {
        assumeProcesses();
        SandboxService service = service(Map.of("allowedShellCommands", "wc,cat"));
        ToolResult result = result(service.execute(call("shell_exec", new JsonObject().put("command", "wc -l notes.md"),
                Map.of("notes.md", "a\nb\nc\n"), 10_000)));
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.exitCode()).isZero();
        assertThat(result.output()).isEqualTo("3 notes.md\n");
    }

    @Test
    void theShellIsOffUnlessAllowed() {
        ToolResult result = shell(service(Map.of("allowShell", "false")), "ls");
        assertThat(result.status()).isEqualTo(ToolResult.DENIED);
        assertThat(result.output()).contains("CLAWFLEET_ALLOW_SHELL");
    }

    @Test
    void onlyAllowlistedCommandsRunAndNeverByPath() {
        SandboxService service = service(Map.of("allowedShellCommands", "ls,cat"));
        assertThat(shell(service, "rm -rf notes").output()).contains("'rm' is not an allowed command; allowed: ls, cat");
        assertThat(shell(service, "/bin/cat /etc/hostname").status()).isEqualTo(ToolResult.DENIED);
        assertThat(shell(service, "./cat").output()).contains("names a path");
    }

    @Test
    void shellMetacharactersAreNeverInterpreted() {
        assumeProcesses();
        SandboxService service = service(Map.of("allowedShellCommands", "echo"));
        // unquoted, they are refused with a reason
        ToolResult chained = shell(service, "echo hi; cat /etc/passwd");
        assertThat(chained.status()).isEqualTo(ToolResult.INVALID_ARGS);
        assertThat(chained.output()).contains("without a shell");
        // quoted, they are text: nothing is substituted, nothing else runs
        ToolResult quoted = shell(service, "echo 'hi; cat /etc/passwd' \"$(id)\" '`id`' $HOME");
        assertThat(quoted.output()).isEqualTo("hi; cat /etc/passwd $(id) `id` $HOME\n");
    }

    @Test
    void anUnknownProgramIsNamed() {
        assumeProcesses();
        ToolResult result = shell(service(Map.of()), "no-such-program-xyz");
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.output()).contains("no program named 'no-such-program-xyz'");
    }

    @Test
    void aCommandPastItsTimeIsKilledAndSaysSo() {
        assumeProcesses();
        ToolResult result = result(service(Map.of()).execute(call("shell_exec", new JsonObject().put("command", "sleep 30"),
                Map.of(), 1_000)));
        assertThat(result.status()).isEqualTo(ToolResult.TIMEOUT);
    }

    @Test
    void theNodesSecretsAreRedactedFromWhateverARunSendsBack() {
        assumeProcesses();
        // given the node's environment holds a secret, and a run that somehow has it (here: in a file it was sent)
        String canary = Sandboxes.canary();
        SandboxService service = service(Map.of());
        ToolResult result = result(service.execute(call("shell_exec", new JsonObject().put("command",
                "sh -c 'cat leak.txt; cat leak.txt >&2; cp leak.txt copy.txt; env; tr \"\\0\" \"\\n\" < /proc/$PPID/environ'"),
                Map.of("leak.txt", "the secret is " + canary + "\n"), 10_000)));
        // then it is in no output, no error output and no file that comes back
        assertThat(result.output()).contains("the secret is [REDACTED]").doesNotContain(canary);
        assertThat(result.stderr()).doesNotContain(canary);
        assertThat(result.changedFiles()).containsEntry("copy.txt", "the secret is [REDACTED]\n");
    }

    // ---- code skills ----

    private static Map<String, String> exampleSkills() throws IOException {
        Path root = Path.of("..", "examples", "skills");
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile).collect(Collectors.toMap(
                    p -> "skills/" + root.relativize(p).toString().replace('\\', '/'), p -> {
                        try {
                            return Files.readString(p);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }));
        }
    }

    private static Map<String, String> folder(Map<String, String> files, String skill) {
        return files.entrySet().stream().filter(e -> e.getKey().startsWith("skills/" + skill + "/"))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
    }

    @Test
    void theNodeJsExampleSkillConverts() throws IOException {
        assumeProcesses();
        assumeTrue(Stream.of("/usr/bin/node", "/usr/local/bin/node").anyMatch(p -> Files.isExecutable(Path.of(p))), "Node.js is needed");
        ToolResult result = result(service(Map.of()).execute(call("unit-convert__convert",
                new JsonObject().put("value", 10).put("from", "km").put("to", "mi"), folder(exampleSkills(), "unit-convert"), 10_000)));
        assertThat(result.status()).as(result.output() + result.stderr()).isEqualTo(ToolResult.OK);
        JsonObject wrapped = new JsonObject(result.output());
        assertThat(wrapped.getBoolean("success")).isTrue();
        assertThat(wrapped.getJsonObject("data").getDouble("value")).isEqualTo(6.21371192237);
        assertThat(wrapped.getJsonObject("data").getString("unit")).isEqualTo("mi");
    }

    @Test
    void theNodeJsExampleSkillsOwnFailureIsPassedOn() throws IOException {
        assumeProcesses();
        assumeTrue(Stream.of("/usr/bin/node", "/usr/local/bin/node").anyMatch(p -> Files.isExecutable(Path.of(p))), "Node.js is needed");
        ToolResult result = result(service(Map.of()).execute(call("unit-convert__convert",
                new JsonObject().put("value", 1).put("from", "km").put("to", "kg"), folder(exampleSkills(), "unit-convert"), 10_000)));
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(new JsonObject(result.output()).getString("error")).contains("cannot convert km to kg");
    }

    @Test
    void theScriptExampleSkillCountsAndSavesANote() throws IOException {
        assumeProcesses();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "python3 is needed");
        Map<String, String> files = folder(exampleSkills(), "text-tools");
        SandboxService service = service(Map.of());
        ToolResult count = result(service.execute(call("text-tools__count", new JsonObject().put("text", "one two\nthree"), files, 10_000)));
        assertThat(new JsonObject(count.output())).isEqualTo(new JsonObject().put("success", true)
                .put("data", new JsonObject().put("lines", 2).put("words", 3).put("characters", 13)));
        ToolResult saved = result(service.execute(call("text-tools__save_note",
                new JsonObject().put("title", "groceries").put("text", "milk"), files, 10_000)));
        assertThat(saved.status()).as(saved.output() + saved.stderr()).isEqualTo(ToolResult.OK);
        assertThat(saved.changedFiles()).containsExactly(Map.entry("memory/notes/groceries.md", "milk\n"));
    }

    @Test
    void aSkillGetsOnlyTheVariablesItDeclaresAndTheNodeAllows() {
        assumeProcesses();
        environment.put("WEATHER_KEY", "weather-secret-value");
        environment.put("OTHER_KEY", "other-secret-value");
        Map<String, String> files = Map.of(
                "skills/env-probe/SKILL.md", """
                        ---
                        name: env-probe
                        description: prints its environment
                        requires: {env: [WEATHER_KEY, NOT_ALLOWED]}
                        entry: probe.sh
                        code_tools:
                          - {name: env, description: print the environment, security: {level: read}}
                        ---
                        """,
                "skills/env-probe/probe.sh", "printf '{\"env\": \"%s\"}' \"$(env | sort | tr '\\n' ' ')\"\n");
        ToolResult result = result(service(Map.of("sandbox.allowedEnv", "WEATHER_KEY,OTHER_KEY"))
                .execute(call("env-probe__env", new JsonObject(), files, 10_000)));
        String env = new JsonObject(result.output()).getJsonObject("data").getString("env");
        // the declared and allowed variable reaches the skill (redacted in what comes back, as a node secret)
        assertThat(env).contains("WEATHER_KEY=[REDACTED]").contains("CLAWFLEET_TOOL=env").contains("CLAWFLEET_SKILL=env-probe");
        assertThat(env).doesNotContain("OTHER_KEY").doesNotContain("other-secret-value").doesNotContain("NOT_ALLOWED");
        assertThat(result.stderr()).contains("not given to the skill: NOT_ALLOWED");
    }

    @Test
    void aSkillThatHangsTimesOutAndOneThatPrintsNoJsonFails() {
        assumeProcesses();
        Map<String, String> files = Map.of(
                "skills/bad/package.json", """
                        {"main": "bad.sh", "clawfleet": {"tools": [
                          {"name": "hang", "description": "never ends"}, {"name": "noise", "description": "prints text"}]}}""",
                "skills/bad/bad.sh", "if [ \"$1\" = hang ]; then while :; do :; done; fi; echo 'not json'\n");
        SandboxService service = service(Map.of());
        ToolResult hang = result(service.execute(call("bad__hang", new JsonObject(), files, 1_000)));
        assertThat(hang.status()).isEqualTo(ToolResult.TIMEOUT);
        assertThat(new JsonObject(hang.output())).isEqualTo(new JsonObject().put("success", false)
                .put("error", "Skill execution timeout (1000ms)"));
        ToolResult noise = result(service.execute(call("bad__noise", new JsonObject(), files, 5_000)));
        assertThat(noise.status()).isEqualTo(ToolResult.ERROR);
        assertThat(new JsonObject(noise.output()).getString("error")).contains("did not print JSON: not json");
    }

    @Test
    void aToolNoSkillDeclaresIsRefused() {
        ToolResult result = result(service(Map.of()).execute(call("ghost__run", new JsonObject(), Map.of(), 5_000)));
        assertThat(result.status()).isEqualTo(ToolResult.INVALID_ARGS);
        assertThat(result.output()).contains("no skill among the files sent declares the tool ghost__run");
    }

    // ---- web_fetch ----

    private ToolResult fetch(SandboxService service, String url) {
        return result(service.execute(call("web_fetch", new JsonObject().put("url", url))));
    }

    private String local(String path) {
        return "http://127.0.0.1:" + web.actualPort() + path;
    }

    @Test
    void aPageIsFetchedAsText() {
        ToolResult result = fetch(service(Map.of()), local("/to-page"));
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).startsWith("URL: " + local("/page") + "\nStatus: 200\nContent-Type: text/html\nTitle: Tide tables\n\n")
                .contains("High water\n").contains("At 06:12 and 18:40.").contains("- one\n- two").doesNotContain("secret");
    }

    @Test
    void loopbackIsRefusedUnlessExplicitlyAllowed() {
        ToolResult result = fetch(service(Map.of("sandbox.web.allowedPrivateRanges", "")), local("/plain"));
        assertThat(result.status()).isEqualTo(ToolResult.DENIED);
        assertThat(result.output()).contains("127.0.0.1 is the loopback network");
    }

    @Test
    void everyRedirectIsCheckedAgain() {
        SandboxService service = service(Map.of());
        ToolResult metadata = fetch(service, local("/to-metadata"));
        assertThat(metadata.status()).isEqualTo(ToolResult.DENIED);
        assertThat(metadata.output()).contains("169.254.169.254").contains("metadata");
        assertThat(fetch(service, local("/to-file")).output()).contains("only http:// and https://");
        assertThat(fetch(service, local("/loop")).output()).contains("more than 5 redirects");
        // a decimal-encoded loopback in a redirect is loopback too: allowed here only because 127.0.0.1 is
        assertThat(fetch(service, local("/to-decimal-loopback")).output()).contains("just text");
        assertThat(fetch(service(Map.of("sandbox.web.allowedPrivateRanges", "")), local("/to-decimal-loopback")).status())
                .isEqualTo(ToolResult.DENIED);
    }

    @Test
    void namesThatResolveToInternalAddressesAreRefused() {
        SandboxService service = service(Map.of("sandbox.web.allowedPrivateRanges", ""));
        assertThat(fetch(service, "http://metadata.test/latest/").output()).contains("metadata.test resolves to 169.254.169.254");
        assertThat(fetch(service, "http://mixed.test/").output()).contains("mixed.test resolves to 10.0.0.5");
        assertThat(fetch(service, "http://localhost.test:" + web.actualPort() + "/plain").status()).isEqualTo(ToolResult.DENIED);
    }

    @Test
    void theFetchConnectsToTheAddressItCheckedSoARebindingNameCannotSwapIt() {
        // given a name that resolves to the allowed local server once, then to the metadata service (DNS rebinding)
        java.util.concurrent.atomic.AtomicInteger lookups = new java.util.concurrent.atomic.AtomicInteger();
        ClawfleetConfig clawfleet = config(Map.of());
        WebFetcher fetcher = new WebFetcher(vertx, http, clawfleet.sandbox().web(), name -> {
            try {
                return Future.succeededFuture(List.of(InetAddress.getByName(lookups.getAndIncrement() == 0 ? "127.0.0.1"
                        : "169.254.169.254")));
            } catch (java.net.UnknownHostException e) {
                return Future.failedFuture(e);
            }
        });
        // when it is fetched
        WebFetcher.Page page = result(fetcher.fetch("http://rebind.test:" + web.actualPort() + "/plain"));
        // then the page comes from the address that was checked, looked up once (the name itself resolves nowhere else)
        assertThat(page.text()).isEqualTo("just text");
        assertThat(lookups).hasValue(1);
    }

    @Test
    void everyBlockedRangeAndEncodingIsRefusedBeforeAnyConnection() {
        SandboxService service = service(Map.of("sandbox.web.allowedPrivateRanges", ""));
        for (String host : List.of("127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.1", "0", "10.0.0.1",
                "172.16.5.4", "192.168.0.1", "169.254.169.254", "2852039166", "0xa9fea9fe", "100.100.100.200", "[::1]",
                "[::ffff:127.0.0.1]", "[::ffff:a9fe:a9fe]", "[fd00:ec2::254]", "[fe80::1]", "[64:ff9b::a9fe:a9fe]")) {
            ToolResult result = fetch(service, "http://" + host + "/latest/meta-data/");
            assertThat(result.status()).as(host + ": " + result.output()).isEqualTo(ToolResult.DENIED);
        }
    }

    @Test
    void bigAndBinaryAndMissingPagesAreHandled() {
        SandboxService service = service(Map.of());
        ToolResult big = fetch(service, local("/big"));
        assertThat(big.truncated()).isTrue();
        assertThat(big.output()).contains("x".repeat(2048)).doesNotContain("x".repeat(2049)).contains("[cut:");
        assertThat(fetch(service, local("/image")).output()).contains("(image/png, 2 bytes: not text, not shown)");
        ToolResult missing = fetch(service, local("/missing"));
        assertThat(missing.status()).isEqualTo(ToolResult.ERROR);
        assertThat(missing.output()).contains("Status: 404").contains("no such page");
    }

    // ---- web_search ----

    @Test
    void aSearchReturnsNumberedResults() {
        environment.put("BRAVE_API_KEY", BRAVE_KEY);
        ToolResult result = result(service(Map.of()).execute(call("web_search", new JsonObject().put("query", "chat bots"))));
        assertThat(result.status()).as(result.output()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).isEqualTo("1. Clawfleet\n   https://example.com/claw\n   Bots at scale for chat bots");
    }

    @Test
    void aSearchWithoutAKeySaysHowToSetOneUp() {
        environment.remove("BRAVE_API_KEY");
        ToolResult result = result(service(Map.of()).execute(call("web_search", new JsonObject().put("query", "x"))));
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.output()).contains("set BRAVE_API_KEY").doesNotContain(BRAVE_KEY);
    }

    // ---- bulkhead ----

    @Test
    void aFullNodeRefusesAtOnceWithoutStartingTheRun() {
        assumeProcesses();
        SandboxService service = service(Map.of("sandbox.maxConcurrentWorkers", "1", "sandbox.maxQueued", "0"));
        Future<ToolResult> first = service.execute(call("shell_exec", new JsonObject().put("command", "sleep 2"), Map.of(), 10_000));
        Throwable second = io.clawfleet.shared.testing.Await.failure(service.execute(call("shell_exec",
                new JsonObject().put("command", "echo never"))));
        assertThat(second).isInstanceOf(SandboxFailure.class).hasMessageContaining("busy");
        assertThat(((SandboxFailure) second).code()).isEqualTo(SandboxFailures.BUSY);
        assertThat(result(first).status()).isEqualTo(ToolResult.OK);
        assertThat(shell(service, "echo again").output()).isEqualTo("again\n");
    }

    @Test
    void aCallThatWaitedPastItsQueueTimeoutIsDroppedWithoutStarting() throws IOException {
        assumeProcesses();
        // given a node with one slot, busy with a run, on the context that serves its calls
        SandboxService service = service(Map.of("sandbox.maxConcurrentWorkers", "1", "sandbox.maxQueued", "4"));
        io.vertx.core.Context context = vertx.getOrCreateContext();
        Future<ToolResult> first = onContext(context, () -> service.execute(call("shell_exec",
                new JsonObject().put("command", "sleep 1"), Map.of(), 10_000)));
        // when a call that may wait only 100 ms for a slot comes
        ToolCall late = new ToolCall(UUID.randomUUID().toString(), "acme", 1, "shell_exec",
                new JsonObject().put("command", "echo late").encode(), Map.of(), Map.of(), 10_000, false, 100);
        Throwable dropped = io.clawfleet.shared.testing.Await.failure(onContext(context, () -> service.execute(late)));
        // then it is dropped unstarted, and does not run when the slot frees
        assertThat(((SandboxFailure) dropped).code()).isEqualTo(SandboxFailures.EXPIRED);
        assertThat(result(first).status()).isEqualTo(ToolResult.OK);
        assertThat(shell(service, "echo after").output()).isEqualTo("after\n");
        double ran = metrics.registry().find("clawfleet.sandbox.runs").counters().stream()
                .filter(c -> !c.getId().getTag("status").startsWith("failed_")).mapToDouble(c -> c.count()).sum();
        assertThat(ran).as("runs started: the first and the one after, not the dropped one").isEqualTo(2);
    }

    private static <T> Future<T> onContext(io.vertx.core.Context context, java.util.function.Supplier<Future<T>> action) {
        io.vertx.core.Promise<T> promise = io.vertx.core.Promise.promise();
        context.runOnContext(v -> action.get().onComplete(promise));
        return promise.future();
    }

    // ---- what the node could not do is a failure, what the run did is a result ----

    private static int failureCode(Future<ToolResult> execution) {
        Throwable failure = io.clawfleet.shared.testing.Await.failure(execution);
        assertThat(failure).isInstanceOf(SandboxFailure.class);
        return ((SandboxFailure) failure).code();
    }

    @Test
    void aNodeThatCannotMakeARunDirectoryFailsTheCallUnstarted() throws IOException {
        assumeProcesses();
        // given a node whose work directory cannot be created (as on a full or read-only disk)
        Path notADirectory = Files.writeString(temp.resolve("not-a-directory"), "x");
        SandboxService service = service(Map.of(), HostSupport.detect("auto", 65_534, 65_534), notADirectory.resolve("runs"));
        // when a command is sent / then the node fails the call, saying it never started, instead of answering a result
        assertThat(failureCode(service.execute(call("shell_exec", new JsonObject().put("command", "echo hi")))))
                .isEqualTo(SandboxFailures.BROKEN_BEFORE_START);
    }

    @Test
    void aSandboxProgramThatStoppedWorkingFailsTheCallInsteadOfLookingLikeTheCommandsExit() throws IOException {
        assumeProcesses();
        // given a node whose bubblewrap worked at start and now fails every sandbox it is asked for
        HostSupport real = HostSupport.detect("auto", 65_534, 65_534);
        Path broken = Files.writeString(temp.resolve("bwrap"), "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n");
        Files.setPosixFilePermissions(broken, PosixFilePermissions.fromString("rwxr-xr-x"));
        HostSupport host = new HostSupport(Isolation.BUBBLEWRAP, null, broken.toString(), real.prlimit(), real.setsid(),
                real.setpriv(), real.kill(), real.root(), false, false);
        SandboxService service = service(Map.of(), host, temp.resolve("runs"));
        // when a command is sent / then the call fails as the node's fault, unstarted
        assertThat(failureCode(service.execute(call("shell_exec", new JsonObject().put("command", "echo hi")))))
                .isEqualTo(SandboxFailures.BROKEN_BEFORE_START);
    }

    @Test
    void aCommandThatPrintsTheSandboxsErrorWordsIsStillItsOwnResult() {
        assumeProcesses();
        // given a working node / when a command imitates a broken sandbox
        ToolResult result = shell(service(Map.of()), "sh -c 'echo \"bwrap: setting up uid map: Permission denied\" >&2; exit 1'");
        // then it is the command's failure, a result, and the node's circuit is none of its business
        assertThat(result.status()).isEqualTo(ToolResult.ERROR);
        assertThat(result.exitCode()).isEqualTo(1);
    }

    @Test
    void aNodeThatCannotIsolateProgramsRefusesThemUnstartedAndStillFetches() {
        // given a node that cannot run programs at all
        HostSupport none = new HostSupport(Isolation.NONE, "no util-linux", null, null, null, null, null, false, false, false);
        SandboxService service = service(Map.of(), none, temp.resolve("runs"));
        // when a command is sent / then another node should take it
        assertThat(failureCode(service.execute(call("shell_exec", new JsonObject().put("command", "echo hi")))))
                .isEqualTo(SandboxFailures.UNSUPPORTED);
        // and web_fetch still works there
        ToolResult fetched = fetch(service, local("/plain"));
        assertThat(fetched.status()).as(fetched.output()).isEqualTo(ToolResult.OK);
    }

    @Test
    void filesThatAreAlsoFoldersAreTheCallsFaultNotTheNodes() {
        assumeProcesses();
        ToolResult result = result(service(Map.of()).execute(call("shell_exec", new JsonObject().put("command", "ls"),
                Map.of("a", "file", "a/b", "file under a file"), 10_000)));
        assertThat(result.status()).isEqualTo(ToolResult.INVALID_ARGS);
        assertThat(result.output()).contains("'a' is both a file and a folder");
    }
}
