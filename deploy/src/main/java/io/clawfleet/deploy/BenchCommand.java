package io.clawfleet.deploy;

import io.clawfleet.deploy.bench.BenchReport;
import io.clawfleet.deploy.bench.BenchRun;
import io.clawfleet.deploy.bench.NoisyNeighbor;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The benchmark of docs/PERFORMANCE.md: throughput, latency, CPU, memory, database work and startup; or, with
 * {@code --noisy-neighbor}, one tenant's latency beside another flooding the worker.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Start an embedded PostgreSQL, the mock model and a cluster of separate node JVMs (all-in-one,",
                "or 1 gateway + N workers), drive chats through the gateway and print messages/s, latency",
                "percentiles, CPU ms per message per node, RSS idle and under load, PostgreSQL commits and",
                "statements per message, the size of a fresh chat's first model request and launch-to-ready times.",
                "Loopback only; stops everything it started, also on Ctrl-C."})
final class BenchCommand implements Callable<Integer> {

    @Option(names = "--shape", defaultValue = "all-in-one", description = "all-in-one or cluster (default ${DEFAULT-VALUE}).")
    String shape;

    @Option(names = "--workers", defaultValue = "2", description = "Workers of the cluster shape (default ${DEFAULT-VALUE}).")
    int workers;

    @Option(names = "--api", defaultValue = "native",
            description = "native (POST /api/v1/messages + long-polled replies) or openai (/v1/chat/completions) (default ${DEFAULT-VALUE}).")
    String api;

    @Option(names = "--chats", defaultValue = "64", description = "Chats sending (default ${DEFAULT-VALUE}).")
    int chats;

    @Option(names = "--rate", defaultValue = "0",
            description = "Open loop at this many messages/s over all chats; 0 = closed loop, each chat sends when answered (default ${DEFAULT-VALUE}).")
    double rate;

    @Option(names = "--max-outstanding", defaultValue = "20000",
            description = "Open loop: unanswered messages beyond which sends are skipped and counted (default ${DEFAULT-VALUE}).")
    int maxOutstanding;

    @Option(names = "--warmup-seconds", defaultValue = "10", description = "Load before measuring (default ${DEFAULT-VALUE}).")
    int warmupSeconds;

    @Option(names = "--seconds", defaultValue = "30", description = "Measured load (default ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--model-latency-ms", description = "Mock model delay per call (default 0; 200 with --noisy-neighbor).")
    Long modelLatencyMs;

    @Option(names = "--in-flight", defaultValue = "0",
            description = "Instead of the load phase: this many chats send one message each at once (use with --model-latency-ms 2000).")
    int inFlight;

    @Option(names = "--node-jvm-opts", defaultValue = "-XX:+UseSerialGC -XX:MaxRAMPercentage=50",
            description = "Heap, GC and compiler options of the nodes (default, as ./clawfleet: ${DEFAULT-VALUE}).")
    String nodeJvmOpts;

    @Option(names = "--profile", description = "Record a JFR profile of every node into the logs folder (<pid>.jfr).")
    boolean profile;

    @Option(names = "--time-up", description = "At the end, also time 'up' (embedded PostgreSQL included) from launch to /readyz.")
    boolean timeUp;

    @Option(names = "--pg-setting", paramLabel = "NAME=VALUE",
            description = "A setting of the embedded PostgreSQL, for experiments (e.g. commit_delay=500); repeatable.")
    java.util.Map<String, String> postgresSettings = new java.util.LinkedHashMap<>();

    @Option(names = "--tenants", defaultValue = "0",
            description = "Create this many tenants with 3 keys each; the chats (up to 1,000) send with different tenants' keys, "
                    + "and at the end authentication is measured, and the deletion of a tenant of 1,000,000 messages while "
                    + "another sends (default ${DEFAULT-VALUE}: one tenant).")
    int tenants;

    @Option(names = "--noisy-neighbor",
            description = {"Instead of the usual figures: tenant B's latency alone, then beside tenant A flooding the worker",
                    "(issue 14; one all-in-one node, --seconds per phase, the options below)."})
    boolean noisyNeighbor;

    @Option(names = "--quiet-rate", defaultValue = "2", description = "Noisy neighbour: B's messages/s (default ${DEFAULT-VALUE}).")
    double quietRate;

    @Option(names = "--quiet-chats", defaultValue = "4", description = "Noisy neighbour: B's chats (default ${DEFAULT-VALUE}).")
    int quietChats;

    @Option(names = "--flood-rate", defaultValue = "200",
            description = "Noisy neighbour: A's messages/s, far above what the slots answer (default ${DEFAULT-VALUE}).")
    double floodRate;

    @Option(names = "--flood-chats", defaultValue = "64", description = "Noisy neighbour: A's chats (default ${DEFAULT-VALUE}).")
    int floodChats;

    @Option(names = "--flood-backlog", defaultValue = "1000",
            description = "Noisy neighbour: A's unanswered messages at most (default ${DEFAULT-VALUE}).")
    int floodBacklog;

    @Option(names = "--turn-slots", defaultValue = "8",
            description = "Noisy neighbour: the worker's worker.maxConcurrentTurns, the model concurrency (default ${DEFAULT-VALUE}).")
    int turnSlots;

    @Option(names = "--queued-messages", defaultValue = "500",
            description = "Noisy neighbour: the worker's worker.maxQueuedMessages (minimum 100; default ${DEFAULT-VALUE}).")
    int queuedMessages;

    @Option(names = "--rate-limiter", description = {"Instead: the cluster-wide message rate measured two ways (leased token "
            + "buckets, as gateways run it, and a counter statement per message) on one embedded PostgreSQL with several "
            + "gateways' limiters: accepted per minute against the limit, statements per message, admission latency."})
    boolean rateLimiter;

    @Option(names = "--limit", defaultValue = "600", description = "Rate limiter: the tenant's messages per minute (default ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--gateway-rate", defaultValue = "30",
            description = "Rate limiter: messages per second offered to each gateway (default ${DEFAULT-VALUE}).")
    double gatewayRate;

    @Option(names = "--gateways", defaultValue = "3", description = "Rate limiter: gateways' limiters (default ${DEFAULT-VALUE}).")
    int gateways;

    @Option(names = "--minutes", defaultValue = "2", description = "Rate limiter: full minutes measured per way (default ${DEFAULT-VALUE}).")
    int minutes;

    @Option(names = "--node-jar", description = "Noisy neighbour: run the node from this jar (another build, to compare).")
    Path nodeJar;

    @Option(names = "--logs", defaultValue = "target/bench", description = "Node logs, profiles and bench-report.json (default ${DEFAULT-VALUE}).")
    Path logs;

    @Override
    public Integer call() throws Exception {
        Path jar = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (rateLimiter) {
            return print(new io.clawfleet.deploy.bench.RateLimiterBench(new io.clawfleet.deploy.bench.RateLimiterBench.Options(
                    limit, gatewayRate, gateways, minutes, logs)).run());
        }
        if (noisyNeighbor) {
            return print(new NoisyNeighbor(new NoisyNeighbor.Options(Duration.ofSeconds(seconds),
                    modelLatencyMs == null ? 200 : modelLatencyMs, quietRate, quietChats, floodRate, floodChats, floodBacklog,
                    turnSlots, queuedMessages, jvmOptions(nodeJvmOpts), nodeJar == null ? jar : nodeJar, logs)).run());
        }
        BenchRun.Options options = new BenchRun.Options(
                BenchRun.Shape.valueOf(shape.toUpperCase(java.util.Locale.ROOT).replace('-', '_')), workers,
                io.clawfleet.deploy.bench.LoadDriver.Api.valueOf(api.toUpperCase(java.util.Locale.ROOT)), chats, rate,
                maxOutstanding, Duration.ofSeconds(warmupSeconds), Duration.ofSeconds(seconds),
                modelLatencyMs == null ? 0 : modelLatencyMs, inFlight, jvmOptions(nodeJvmOpts), profile, timeUp, jar, logs,
                postgresSettings, tenants);
        return print(new BenchRun(options).run());
    }

    private int print(BenchReport report) throws java.io.IOException {
        System.out.print(report.table());
        Files.writeString(logs.resolve("bench-report.json"), report.toJson().encodePrettily());
        System.out.println("report: " + logs.resolve("bench-report.json"));
        return 0;
    }

    private static List<String> jvmOptions(String text) {
        return Arrays.stream(text.trim().split("\\s+")).filter(s -> !s.isEmpty()).toList();
    }
}
