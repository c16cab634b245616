package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One benchmark run: an embedded PostgreSQL (with pg_stat_statements), the mock model, a cluster
 * of separate node JVMs of the chosen shape, then the measurements in order: launch to /readyz per
 * node, idle memory, the first model request of a fresh chat, a warm-up, the measured load (with
 * CPU, memory and database counters around it), and optionally the launch of {@code up}.
 */
public final class BenchRun {

    public enum Shape { ALL_IN_ONE, CLUSTER }

    /**
     * @param rate          messages per second (open loop); 0 for a closed loop of {@code chats} chats
     * @param inFlight      if above 0, instead of a load phase: this many chats send one message each at once
     * @param nodeJvmOptions heap, GC and compiler options of the node JVMs
     * @param startTogether  launch the cluster's nodes all at once, not one after the other
     * @param classData      a folder for each node's class-data archive, as {@code ./clawfleet node} keeps one; null for none
     */
    public record Options(Shape shape, int workers, LoadDriver.Api api, int chats, double rate, int maxOutstanding,
                          Duration warmup, Duration duration, long modelLatencyMs, int inFlight,
                          List<String> nodeJvmOptions, boolean profile, boolean timeUp, Path jar, Path logs,
                          Map<String, String> postgresSettings, int tenants, int clientHistory, boolean startTogether,
                          Path classData) {

        /** The options without {@code --start-together} and class-data archives. */
        public Options(Shape shape, int workers, LoadDriver.Api api, int chats, double rate, int maxOutstanding,
                       Duration warmup, Duration duration, long modelLatencyMs, int inFlight, List<String> nodeJvmOptions,
                       boolean profile, boolean timeUp, Path jar, Path logs, Map<String, String> postgresSettings, int tenants,
                       int clientHistory) {
            this(shape, workers, api, chats, rate, maxOutstanding, warmup, duration, modelLatencyMs, inFlight, nodeJvmOptions,
                    profile, timeUp, jar, logs, postgresSettings, tenants, clientHistory, false, null);
        }

        /** The options without {@code --history}: clients send only the new message. */
        public Options(Shape shape, int workers, LoadDriver.Api api, int chats, double rate, int maxOutstanding,
                       Duration warmup, Duration duration, long modelLatencyMs, int inFlight, List<String> nodeJvmOptions,
                       boolean profile, boolean timeUp, Path jar, Path logs, Map<String, String> postgresSettings, int tenants) {
            this(shape, workers, api, chats, rate, maxOutstanding, warmup, duration, modelLatencyMs, inFlight, nodeJvmOptions,
                    profile, timeUp, jar, logs, postgresSettings, tenants, 0);
        }

        /** The options without {@code --tenants}: one tenant. */
        public Options(Shape shape, int workers, LoadDriver.Api api, int chats, double rate, int maxOutstanding,
                       Duration warmup, Duration duration, long modelLatencyMs, int inFlight, List<String> nodeJvmOptions,
                       boolean profile, boolean timeUp, Path jar, Path logs, Map<String, String> postgresSettings) {
            this(shape, workers, api, chats, rate, maxOutstanding, warmup, duration, modelLatencyMs, inFlight, nodeJvmOptions,
                    profile, timeUp, jar, logs, postgresSettings, 0);
        }
    }

    static final int PARTITIONS = 64;
    /** Tenants whose keys are in use at once with {@code --tenants N} (issue 13: 1,000 of 10,000). */
    static final int ACTIVE_TENANTS = 1_000;

    private final Options options;
    private final BenchReport report = new BenchReport();

    public BenchRun(Options options) {
        this.options = options;
    }

    public BenchReport run() throws Exception {
        if (!ProcessStats.available()) {
            throw new IllegalStateException("the benchmark reads CPU and memory from /proc; it runs on Linux only");
        }
        Files.createDirectories(options.logs());
        conditions();
        try (Cleanup cleanup = new Cleanup()) {
            Map<String, String> settings = new LinkedHashMap<>(Map.of("shared_preload_libraries", "pg_stat_statements",
                    "pg_stat_statements.track_planning", "on"));
            settings.putAll(options.postgresSettings());
            EmbeddedDatabase postgres = cleanup.add(EmbeddedDatabase.start(null, 0, settings));
            DbUrl db = postgres.createDatabase("bench");
            Vertx vertx = Vertx.vertx();
            cleanup.add(() -> vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS));
            MockLlmServer model = new MockLlmServer(vertx, options.modelLatencyMs()).withPromptCache();
            model.start("127.0.0.1", 0).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
            String llmUrl = "http://127.0.0.1:" + model.port() + "/v1";

            Map<String, ClusterHarness.Node> nodes = startCluster(cleanup, db, llmUrl);
            PostgresStats pg = cleanup.add(new PostgresStats(db));
            report.condition("pids", new io.vertx.core.json.JsonArray(java.util.stream.Stream.concat(
                    nodes.values().stream().map(ClusterHarness.Node::pid), java.util.stream.Stream.of(pg.postmasterPid())).toList()));
            awaitAllOwned(db);
            // --tenants N: the load's chats belong to many tenants (at most 1,000 active, one chat each at least).
            List<String> keys = options.tenants() > 0
                    ? TenantsAtScale.seed(db, options.tenants(), Math.min(ACTIVE_TENANTS, options.chats()), report)
                    : List.of(ClusterHarness.API_KEY);
            String gateway = nodes.values().iterator().next().url();
            Thread.sleep(3_000);
            for (var node : nodes.values()) {
                report.add("idle RSS " + node.id(), ProcessStats.rssKib(node.pid()) / 1024.0, "MiB", "<= 300");
            }
            report.add("idle RSS postgresql (all processes)", pg.serverRssKib() / 1024.0, "MiB");
            FreshChat.measure(vertx, gateway, model, report);
            if (options.inFlight() > 0) {
                warmUpForInFlight(vertx, gateway, keys, model);
                new InFlightCheck(vertx, gateway, model, report).run(options.inFlight(), options.duration(), nodes, pg);
            } else {
                load(vertx, gateway, nodes, pg, keys, model);
            }
            if (options.tenants() > 0) {
                TenantsAtScale.measureAuth(db, options.tenants(), Math.min(ACTIVE_TENANTS, options.tenants()), report);
                // a tenant of 1,000 chats × 1,000 messages deleted while another keeps sending
                TenantsAtScale.measureDeletion(db, gateway, keys.get(0), 1_000, 1_000, report);
            }
            if (options.timeUp()) {
                cleanup.close();
                timeUp(llmUrl);
            }
        }
        return report;
    }

    private void conditions() throws Exception {
        report.condition("shape", options.shape().name().toLowerCase(java.util.Locale.ROOT)
                + (options.shape() == Shape.CLUSTER ? " (1 gateway + " + options.workers() + " workers)" : " (1 JVM, all roles)"));
        report.condition("api", options.api().name().toLowerCase(java.util.Locale.ROOT));
        report.condition("load", options.inFlight() > 0 ? options.inFlight() + " chats at once, one message each"
                : options.rate() > 0 ? "open loop " + options.rate() + " msg/s over " + options.chats() + " chats"
                : "closed loop, " + options.chats() + " chats");
        if (options.clientHistory() > 0) {
            report.condition("clientHistory", "each OpenAI request carries up to " + options.clientHistory()
                    + " earlier messages of its chat");
        }
        report.condition("warmupSeconds", options.warmup().toSeconds());
        report.condition("seconds", options.duration().toSeconds());
        report.condition("modelLatencyMs", options.modelLatencyMs());
        report.condition("nodeJvmOptions", String.join(" ", options.nodeJvmOptions()));
        report.condition("postgresSettings", new io.vertx.core.json.JsonObject(Map.copyOf(options.postgresSettings())));
        report.condition("cpus", Runtime.getRuntime().availableProcessors());
        report.condition("loadAverageAtStart", Files.readString(Path.of("/proc/loadavg")).trim());
        report.condition("java", Runtime.version().toString());
        report.condition("busTransport", insecureBus() ? "plain TCP (CLAWFLEET_CLUSTER_INSECURE=true)" : "mutual TLS 1.3");
    }

    /**
     * The cluster shape's event bus in plain TCP, to measure what TLS costs: the bench's own environment says so
     * ({@code CLAWFLEET_CLUSTER_INSECURE=true ./clawfleet bench --shape cluster}); by default the nodes run mutual TLS.
     */
    private static boolean insecureBus() {
        return "true".equalsIgnoreCase(System.getenv("CLAWFLEET_CLUSTER_INSECURE"));
    }

    private Map<String, ClusterHarness.Node> startCluster(Cleanup cleanup, DbUrl db, String llmUrl) throws Exception {
        int count = options.shape() == Shape.CLUSTER ? 1 + options.workers() : 1;
        ClusterHarness harness = cleanup.add(new ClusterHarness(db, llmUrl, options.jar(), options.logs(), count));
        List<String> jvm = new ArrayList<>(options.nodeJvmOptions());
        if (options.profile()) {
            jvm.add("-XX:StartFlightRecording=settings=profile,dumponexit=true,filename="
                    + options.logs().toAbsolutePath().resolve("%p.jfr"));
        }
        harness.jvmOptions(jvm);
        // A JVM that makes its class-data archive runs without JFR ("JFR will be disabled during CDS dumping"), so a
        // profiled node starts plain: a profile is of the load, not of the start.
        if (options.classData() != null && !options.profile()) {
            harness.nodeJvmOptions(id -> classDataArchive(options.classData(), id, jvm, options.jar()));
        }
        // The benchmark measures the system, not the admission limits that protect it from abuse.
        harness.env("CLAWFLEET_LIMITS_TENANT_MESSAGES_PER_SECOND", "0")
                .env("CLAWFLEET_LIMITS_MAX_UNANSWERED_PER_CHAT", "0")
                .env("CLAWFLEET_LIMITS_MAX_INFLIGHT_REQUESTS", "1000000")
                .env("CLAWFLEET_HTTP_MAX_WAIT_SECONDS", "60");
        if (insecureBus()) {
            harness.env("CLAWFLEET_CLUSTER_INSECURE", "true");
        }
        Map<String, ClusterHarness.Node> nodes = new LinkedHashMap<>();
        if (options.shape() == Shape.ALL_IN_ONE) {
            startTimed(harness, nodes, "all-in-one", "gateway,worker,sandbox,scheduler");
        } else if (options.startTogether()) {
            startTogether(harness, nodes);
        } else {
            startTimed(harness, nodes, "gateway-1", "gateway");
            for (int i = 1; i <= options.workers(); i++) {
                startTimed(harness, nodes, "worker-" + i, "worker");
            }
        }
        return nodes;
    }

    /**
     * The JVM options that give node {@code id} a class-data archive of its own in {@code folder}, as the launcher
     * gives {@code ./clawfleet node} one: made at the node's first exit, used from its next launch, one per node (nodes
     * that stop together would write the same file at once) and per JVM options. An archive older than the jar goes:
     * the JVM neither uses nor remakes it.
     */
    static List<String> classDataArchive(Path folder, String id, List<String> jvm, Path jar) {
        try {
            Files.createDirectories(folder);
            String key = Integer.toHexString((System.getProperty("java.home") + "\n" + String.join(" ", jvm)).hashCode());
            Path archive = folder.resolve(id + "-" + key + ".jsa");
            if (Files.exists(archive) && Files.getLastModifiedTime(jar).compareTo(Files.getLastModifiedTime(archive)) > 0) {
                Files.delete(archive);
            }
            return List.of("-XX:+AutoCreateSharedArchive", "-XX:SharedArchiveFile=" + archive.toAbsolutePath(),
                    "-Xlog:cds=off", "-Xlog:cds+dynamic=off");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot keep class-data archives in " + folder, e);
        }
    }

    /**
     * Launches the gateway and every worker at once, as an orchestrator starts a cluster (issue 19: five nodes ready
     * within 8 s), and times each from the common launch to its /readyz, and all of them.
     */
    private void startTogether(ClusterHarness harness, Map<String, ClusterHarness.Node> nodes) throws Exception {
        long start = System.nanoTime();
        Map<String, ClusterHarness.Node> launched = new LinkedHashMap<>();
        launched.put("gateway-1", harness.start("gateway-1", "gateway"));
        for (int i = 1; i <= options.workers(); i++) {
            launched.put("worker-" + i, harness.start("worker-" + i, "worker"));
        }
        long deadline = start + TimeUnit.MINUTES.toNanos(2);
        Map<String, Long> readyAt = new LinkedHashMap<>();
        while (readyAt.size() < launched.size()) {
            for (var node : launched.values()) {
                if (readyAt.containsKey(node.id())) {
                    continue;
                }
                if (!node.alive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("node " + node.id() + " did not get ready; see " + node.log().toAbsolutePath());
                }
                if (harness.ready(node)) {
                    readyAt.put(node.id(), (System.nanoTime() - start) / 1_000_000);
                }
            }
            Thread.sleep(20);
        }
        for (var node : launched.values()) {
            report.add("launch to /readyz, node " + node.id() + " (all started together)", readyAt.get(node.id()), "ms");
            report.add("CPU used until ready, node " + node.id(), ProcessStats.cpuMillis(node.pid()), "ms");
            nodes.put(node.id(), node);
        }
        report.add("launch to /readyz, all " + launched.size() + " nodes started together",
                java.util.Collections.max(readyAt.values()), "ms", "<= 8000 (5 nodes)");
    }

    /** Starts one node and times launch to /readyz; one at a time, so no start competes with another. */
    private void startTimed(ClusterHarness harness, Map<String, ClusterHarness.Node> nodes, String id, String roles)
            throws Exception {
        long start = System.nanoTime();
        ClusterHarness.Node node = harness.start(id, roles);
        long deadline = start + TimeUnit.MINUTES.toNanos(2);
        while (!harness.ready(node)) {
            if (!node.alive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("node " + id + " did not get ready; see " + node.log().toAbsolutePath());
            }
            Thread.sleep(20);
        }
        report.add("launch to /readyz, node " + id, (System.nanoTime() - start) / 1_000_000, "ms", "<= 2000");
        // CPU to get ready says what startup costs; wall time also says how busy the machine was.
        report.add("CPU used until ready, node " + id, ProcessStats.cpuMillis(node.pid()), "ms");
        nodes.put(id, node);
    }

    static void awaitAllOwned(DbUrl db) throws Exception {
        try (Connection connection = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password() == null ? "" : db.password());
             Statement statement = connection.createStatement()) {
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (System.nanoTime() < deadline) {
                try (ResultSet rows = statement.executeQuery(
                        "SELECT count(*) FROM partition_leases WHERE owner_node IS NOT NULL AND expires_at > now()")) {
                    rows.next();
                    if (rows.getInt(1) == PARTITIONS) {
                        return;
                    }
                }
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("the workers did not claim all " + PARTITIONS + " partitions within a minute");
    }

    private void load(Vertx vertx, String gateway, Map<String, ClusterHarness.Node> nodes, PostgresStats pg, List<String> keys,
                      MockLlmServer model) throws Exception {
        LoadDriver driver = new LoadDriver(vertx, gateway, keys, options.api(), "bench", options.chats())
                .clientHistory(options.clientHistory());
        try {
            phase(driver, options.warmup());
            Thread.sleep(1_500); // let every backend flush its statistics (at most once a second)
            Map<String, Long> cpuBefore = LoadFigures.cpu(nodes);
            long benchCpuBefore = ProcessStats.cpuMillis(ProcessHandle.current().pid());
            Map<String, Map<String, Long>> threadsBefore = LoadFigures.threadCpu(nodes);
            pg.resetStatements();
            PostgresStats.Snapshot before = pg.snapshot();
            long modelCallsBefore = model.requestCount();
            long modelBytesBefore = model.requestBytes();
            long promptTokensBefore = model.promptTokens();
            long cachedTokensBefore = model.cachedTokens();
            model.resetLargestRequest();
            try (RssSampler rss = new RssSampler(nodes, pg)) {
                LoadDriver.Phase phase = phase(driver, options.duration());
                long modelCalls = model.requestCount() - modelCallsBefore;
                // What the node sent the model while chats went on: the prompt of a chat in its stride (history, summary,
                // tools), compactions included; bounded by the history window and the compaction budget, whatever the chat's age.
                report.add("model requests per message", modelCalls / (double) Math.max(1, phase.answered()), "");
                report.add("model request body, mean", (model.requestBytes() - modelBytesBefore) / (double) Math.max(1, modelCalls), "bytes");
                report.add("model request body, largest", model.largestRequest(), "bytes");
                // The mock caches as OpenAI does (the longest prefix seen before, from 1,024 tokens, in 128-token steps):
                // what the order of the prompt (tools, the bot's system text, then the chat's) lets a provider serve cheaply.
                report.add("input tokens read from the prompt cache", 100.0 * (model.cachedTokens() - cachedTokensBefore)
                        / Math.max(1, model.promptTokens() - promptTokensBefore), "%");
                Thread.sleep(1_500);
                PostgresStats.Snapshot after = pg.snapshot();
                Map<String, Long> cpuAfter = LoadFigures.cpu(nodes);
                report.add("CPU per message, load generator + mock model (this JVM)",
                        (ProcessStats.cpuMillis(ProcessHandle.current().pid()) - benchCpuBefore) / (double) Math.max(1, phase.answered()), "ms");
                LoadFigures.threadNotes(report, "message", threadsBefore, LoadFigures.threadCpu(nodes), Math.max(1, phase.answered()));
                LoadFigures.add(report, phase, nodes, cpuBefore, cpuAfter, before, after, rss);
                pg.topStatements(12, Math.max(1, phase.answered()))
                        .forEach(s -> report.note("statement " + s));
            }
        } finally {
            driver.close();
        }
    }

    /**
     * Before the in-flight check, the load's closed loop at full speed for the warm-up time: a worker that holds
     * thousands of chats has been up a while, and without it a third of the check's CPU was the JIT compiling (cold
     * nodes, issue 19). The model is slow only from the check on.
     */
    private void warmUpForInFlight(Vertx vertx, String gateway, List<String> keys, MockLlmServer model) throws Exception {
        if (options.warmup().isZero()) {
            return;
        }
        model.latencyMs(0);
        LoadDriver driver = new LoadDriver(vertx, gateway, keys, options.api(), "bench", options.chats());
        try {
            LoadDriver.Phase warm = driver.closedLoop(options.warmup());
            report.note(String.format(java.util.Locale.ROOT, "warm-up before the check: closed loop, %d chats, %d s at "
                    + "zero model latency, %d messages answered", options.chats(), options.warmup().toSeconds(), warm.answered()));
        } finally {
            driver.close();
            model.latencyMs(options.modelLatencyMs());
        }
        Thread.sleep(1_500); // the warm-up's last commits and notices settle before the check's readings
        model.resetPeakInFlight();
    }

    private LoadDriver.Phase phase(LoadDriver driver, Duration duration) throws Exception {
        return options.rate() > 0 ? driver.openLoop(duration, options.rate(), options.maxOutstanding())
                : driver.closedLoop(duration);
    }

    private void timeUp(String llmUrl) throws Exception {
        Path data = Files.createTempDirectory("clawfleet-bench-up");
        try {
            Path log = options.logs().resolve("up.log");
            // With an archive of its own, as ./clawfleet up keeps one (the first run after a build makes it).
            List<String> jvm = new ArrayList<>(options.nodeJvmOptions());
            if (options.classData() != null) {
                jvm.addAll(classDataArchive(options.classData(), "up", options.nodeJvmOptions(), options.jar()));
            }
            report.add("launch to /readyz, up, first start (initdb)",
                    UpStartup.launchToReadyMillis(options.jar(), jvm, data, llmUrl, log), "ms");
            report.add("launch to /readyz, up, restart",
                    UpStartup.launchToReadyMillis(options.jar(), jvm, data, llmUrl, log), "ms", "<= 5000");
        } finally {
            try (var files = Files.walk(data)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
