package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench --noisy-neighbor} (issue 14): does a tenant flooding a worker hurt another tenant's latency?
 * One all-in-one node with a bounded number of turn slots and in-memory messages, the mock model answering
 * after a fixed delay, and two tenants. Tenant B sends steadily at a low rate; its latencies are measured
 * first alone, then while tenant A sends as fast as the client lets it (open loop far above what the
 * slots can answer, up to a cap of unanswered messages, so A keeps a deep backlog queued on the worker).
 * The figure that matters is B's p99 with A flooding over B's p99 alone: at most 2 is the target.
 */
public final class NoisyNeighbor {

    /**
     * @param seconds        how long B is measured in each phase
     * @param quietRate      B's messages per second, round robin over {@code quietChats}
     * @param floodRate      A's messages per second, round robin over {@code floodChats}
     * @param floodBacklog   A's unanswered messages at most; further sends are skipped and counted
     * @param turnSlots      the worker's turn slots ({@code worker.maxConcurrentTurns}): the model concurrency
     * @param queuedMessages the worker's in-memory messages ({@code worker.maxQueuedMessages})
     * @param nodeJar        the jar the node runs (another build's, to compare); the bench's own by default
     */
    public record Options(Duration seconds, long modelLatencyMs, double quietRate, int quietChats, double floodRate,
                          int floodChats, int floodBacklog, int turnSlots, int queuedMessages,
                          List<String> nodeJvmOptions, Path nodeJar, Path logs) {
    }

    /** B's latencies may grow at most this much when A floods. */
    static final double TARGET_RATIO = 2.0;
    /** A's head start before B is measured with it: time to build its backlog on the worker. */
    private static final Duration FLOOD_LEAD = Duration.ofSeconds(5);
    /** B's warm-up when alone (JIT, connection pools, chats loaded). */
    private static final Duration WARMUP = Duration.ofSeconds(5);

    private final Options options;
    private final BenchReport report = new BenchReport();

    public NoisyNeighbor(Options options) {
        this.options = options;
    }

    public BenchReport run() throws Exception {
        if (!ProcessStats.available()) {
            throw new IllegalStateException("the benchmark reads CPU from /proc; it runs on Linux only");
        }
        Files.createDirectories(options.logs());
        conditions();
        try (Cleanup cleanup = new Cleanup()) {
            EmbeddedDatabase postgres = cleanup.add(EmbeddedDatabase.start(null, 0, Map.of()));
            DbUrl db = postgres.createDatabase("bench");
            Vertx vertx = Vertx.vertx();
            cleanup.add(() -> vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS));
            MockLlmServer model = new MockLlmServer(vertx, options.modelLatencyMs());
            model.start("127.0.0.1", 0).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
            ClusterHarness.Node node = startNode(cleanup, db, "http://127.0.0.1:" + model.port() + "/v1");
            PostgresStats pg = cleanup.add(new PostgresStats(db));
            report.condition("pids", new io.vertx.core.json.JsonArray(List.of(node.pid(), pg.postmasterPid())));
            BenchRun.awaitAllOwned(db);
            // Tenant A is bench-1, tenant B bench-2: two tenants with keys, as bench --tenants makes them.
            List<String> keys = TenantsAtScale.seed(db, 2, 2, report);
            measure(vertx, node.url(), keys.get(0), keys.get(1), model);
        }
        return report;
    }

    private ClusterHarness.Node startNode(Cleanup cleanup, DbUrl db, String llmUrl) throws Exception {
        ClusterHarness harness = cleanup.add(new ClusterHarness(db, llmUrl, options.nodeJar(), options.logs(), 1));
        harness.jvmOptions(options.nodeJvmOptions());
        // No admission limit in the way: A floods as fast as it can, the worker's scheduler is what is measured.
        harness.env("CLAWFLEET_LIMITS_TENANT_MESSAGES_PER_SECOND", "0")
                .env("CLAWFLEET_LIMITS_MAX_UNANSWERED_PER_CHAT", "0")
                .env("CLAWFLEET_LIMITS_MAX_INFLIGHT_REQUESTS", "1000000")
                .env("CLAWFLEET_HTTP_MAX_WAIT_SECONDS", "60")
                .env("CLAWFLEET_WORKER_MAX_CONCURRENT_TURNS", Integer.toString(options.turnSlots()))
                .env("CLAWFLEET_WORKER_MAX_QUEUED_MESSAGES", Integer.toString(options.queuedMessages()));
        ClusterHarness.Node node = harness.start("all-in-one", "gateway,worker,sandbox,scheduler");
        harness.awaitReady(Duration.ofMinutes(2));
        return node;
    }

    private void measure(Vertx vertx, String gateway, String floodKey, String quietKey, MockLlmServer model) throws Exception {
        LoadDriver quiet = new LoadDriver(vertx, gateway, quietKey, LoadDriver.Api.NATIVE, "quiet", options.quietChats());
        LoadDriver flood = new LoadDriver(vertx, gateway, floodKey, LoadDriver.Api.NATIVE, "flood", options.floodChats());
        try {
            quiet.openLoop(WARMUP, options.quietRate(), Integer.MAX_VALUE);
            LoadDriver.Phase alone = quiet.openLoop(options.seconds(), options.quietRate(), Integer.MAX_VALUE);
            add("B alone", alone);
            long callsBefore = model.requestCount();
            CompletableFuture<LoadDriver.Phase> flooding = CompletableFuture.supplyAsync(() -> {
                try {
                    return flood.openLoop(options.seconds().plus(FLOOD_LEAD), options.floodRate(), options.floodBacklog());
                } catch (Exception e) {
                    throw new IllegalStateException("tenant A's load failed", e);
                }
            });
            Thread.sleep(FLOOD_LEAD.toMillis());
            LoadDriver.Phase beside = quiet.openLoop(options.seconds(), options.quietRate(), Integer.MAX_VALUE);
            add("B with A flooding", beside);
            LoadDriver.Phase a = flooding.get(options.seconds().toSeconds() + 600, TimeUnit.SECONDS);
            report.add("A flooding: messages answered", a.answered(), "");
            report.add("A flooding: throughput (slots busy with A and B)", a.messagesPerSecond(), "msg/s");
            report.add("A flooding: sends skipped at its backlog cap", a.notSent(), "");
            report.add("A flooding: latency p50", a.latencies().percentileMs(0.50), "ms");
            report.add("model calls while A flooded", model.requestCount() - callsBefore, "");
            // Turns hold a slot each; chat upkeep (compaction) may call the model beside them.
            report.add("most model calls at once (turn slots: " + options.turnSlots() + ")", model.peakInFlight(), "");
            double ratio = beside.latencies().percentileMs(0.99) / alone.latencies().percentileMs(0.99);
            report.add("B p99 with A flooding / B p99 alone", ratio, "x", "<= " + TARGET_RATIO);
            report.note(String.format(Locale.ROOT, "noisy neighbour: %s (B p99 %.1f ms alone, %.1f ms with A flooding)",
                    ratio <= TARGET_RATIO ? "PASS" : "FAIL", alone.latencies().percentileMs(0.99),
                    beside.latencies().percentileMs(0.99)));
        } finally {
            quiet.close();
            flood.close();
        }
    }

    private void add(String phase, LoadDriver.Phase figures) {
        report.add(phase + ": messages answered", figures.answered(), "");
        report.add(phase + ": errors", figures.errorCount(), "");
        figures.errors().forEach((kind, count) -> report.note(phase + ": error '" + kind + "': " + count));
        report.add(phase + ": latency p50", figures.latencies().percentileMs(0.50), "ms");
        report.add(phase + ": latency p99", figures.latencies().percentileMs(0.99), "ms");
        report.add(phase + ": latency max", figures.latencies().percentileMs(1.0), "ms");
    }

    private void conditions() throws Exception {
        report.condition("scenario", "noisy neighbour: tenant B " + options.quietRate() + " msg/s over " + options.quietChats()
                + " chats, alone then beside tenant A at " + options.floodRate() + " msg/s over " + options.floodChats()
                + " chats (at most " + options.floodBacklog() + " unanswered)");
        report.condition("shape", "all-in-one (1 JVM, all roles)");
        report.condition("seconds", options.seconds().toSeconds());
        report.condition("modelLatencyMs", options.modelLatencyMs());
        report.condition("turnSlots", options.turnSlots());
        report.condition("queuedMessages", options.queuedMessages());
        report.condition("nodeJar", options.nodeJar().toString());
        report.condition("nodeJvmOptions", String.join(" ", options.nodeJvmOptions()));
        report.condition("cpus", Runtime.getRuntime().availableProcessors());
        report.condition("loadAverageAtStart", Files.readString(Path.of("/proc/loadavg")).trim());
        report.condition("java", Runtime.version().toString());
    }
}
