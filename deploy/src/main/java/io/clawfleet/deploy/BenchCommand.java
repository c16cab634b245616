package io.clawfleet.deploy;

import io.clawfleet.deploy.bench.BenchReport;
import io.clawfleet.deploy.bench.BenchRun;
import io.clawfleet.deploy.bench.LoadDriver;
import io.clawfleet.deploy.bench.NoisyNeighbor;
import io.clawfleet.deploy.bench.RateLimiterBench;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The benchmark of docs/PERFORMANCE.md: throughput, latency, CPU, memory, database work and startup; or, with
 * {@code --noisy-neighbor}, one tenant's latency beside another flooding the worker; or, with {@code --rate-limiter},
 * the cluster-wide message rate. Each scenario's options are a mixin that builds its runner's {@code Options}.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Start an embedded PostgreSQL, the mock model and a cluster of separate node JVMs (all-in-one,",
                "or 1 gateway + N workers), drive chats through the gateway and print messages/s, latency",
                "percentiles, CPU ms per message per node, RSS idle and under load, PostgreSQL commits and",
                "statements per message, the size of a fresh chat's first model request and launch-to-ready times.",
                "Loopback only; stops everything it started, also on Ctrl-C."})
final class BenchCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common;

    @Mixin
    LoadOptions load;

    @Mixin
    NoisyNeighborOptions noisyNeighbor;

    @Mixin
    RateLimiterOptions rateLimiter;

    @Override
    public Integer call() throws Exception {
        Path jar = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (rateLimiter.chosen) {
            return print(new RateLimiterBench(rateLimiter.options(common)).run());
        }
        if (noisyNeighbor.chosen) {
            return print(new NoisyNeighbor(noisyNeighbor.options(common, jar)).run());
        }
        return print(new BenchRun(load.options(common, jar)).run());
    }

    private int print(BenchReport report) throws IOException {
        System.out.print(report.table());
        Files.writeString(common.logs.resolve("bench-report.json"), report.toJson().encodePrettily());
        System.out.println("report: " + common.logs.resolve("bench-report.json"));
        return 0;
    }

    /** The options more than one scenario reads. */
    static final class CommonOptions {

        @Option(names = "--seconds", defaultValue = "30", description = "Measured load (default ${DEFAULT-VALUE}).")
        int seconds;

        @Option(names = "--model-latency-ms", description = "Mock model delay per call (default 0; 200 with --noisy-neighbor).")
        Long modelLatencyMs;

        @Option(names = "--node-jvm-opts", defaultValue = "-XX:+UseSerialGC -XX:MaxRAMPercentage=50 -Xms128m",
                description = "Heap, GC and compiler options of the nodes (default, as ./clawfleet: ${DEFAULT-VALUE}).")
        String nodeJvmOpts;

        @Option(names = "--logs", defaultValue = "target/bench", description = "Node logs, profiles and bench-report.json (default ${DEFAULT-VALUE}).")
        Path logs;

        Duration measured() {
            return Duration.ofSeconds(seconds);
        }

        /** {@code --model-latency-ms}, else the scenario's own default. */
        long modelLatencyMs(long otherwise) {
            return modelLatencyMs == null ? otherwise : modelLatencyMs;
        }

        List<String> nodeJvmOptions() {
            return Arrays.stream(nodeJvmOpts.trim().split("\\s+")).filter(s -> !s.isEmpty()).toList();
        }
    }

    /** The usual figures: a cluster of the chosen shape under load, optionally with {@code --tenants}. */
    static final class LoadOptions {

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

        @Option(names = "--in-flight", defaultValue = "0",
                description = "Instead of the load phase: this many chats send one message each at once (use with --model-latency-ms 2000).")
        int inFlight;

        @Option(names = "--profile", description = "Record a JFR profile of every node into the logs folder (<pid>.jfr); profiled nodes start "
                + "without a class-data archive (a JVM making one records no JFR).")
        boolean profile;

        @Option(names = "--time-up", description = "At the end, also time 'up' (embedded PostgreSQL included) from launch to /readyz.")
        boolean timeUp;

        @Option(names = "--pg-setting", paramLabel = "NAME=VALUE",
                description = "A setting of the embedded PostgreSQL, for experiments (e.g. commit_delay=500); repeatable.")
        Map<String, String> postgresSettings = new LinkedHashMap<>();

        @Option(names = "--tenants", defaultValue = "0",
                description = "Create this many tenants with 3 keys each; the chats (up to 1,000) send with different tenants' keys, "
                        + "and at the end authentication is measured, and the deletion of a tenant of 1,000,000 messages while "
                        + "another sends (default ${DEFAULT-VALUE}: one tenant).")
        int tenants;

        @Option(names = "--history", defaultValue = "0",
                description = "With --api openai: each client keeps its conversation and sends up to this many earlier messages with "
                        + "each new one, as OpenAI SDK chat loops do (default ${DEFAULT-VALUE}: only the new message).")
        int history;

        @Option(names = "--start-together",
                description = "With --shape cluster: launch the gateway and all workers at once, and time each and all to /readyz.")
        boolean startTogether;

        @Option(names = "--class-data", negatable = true, defaultValue = "true", fallbackValue = "true",
                description = "Give each node JVM a class-data archive of its own, as ./clawfleet node keeps one (in "
                        + "deploy/target/bench-class-data, made at a node's first exit); --no-class-data starts plain JVMs "
                        + "(default: on).")
        boolean classData;

        BenchRun.Options options(CommonOptions common, Path jar) {
            if (history < 0 || (history > 0 && !"openai".equalsIgnoreCase(api))) {
                throw new CommandLine.ParameterException(new CommandLine(this), "--history is a count from 0, and needs --api openai");
            }
            if (startTogether && !"cluster".equalsIgnoreCase(shape)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "--start-together needs --shape cluster");
            }
            return new BenchRun.Options(BenchRun.Shape.valueOf(shape.toUpperCase(Locale.ROOT).replace('-', '_')), workers,
                    LoadDriver.Api.valueOf(api.toUpperCase(Locale.ROOT)), chats, rate, maxOutstanding,
                    Duration.ofSeconds(warmupSeconds), common.measured(), common.modelLatencyMs(0), inFlight,
                    common.nodeJvmOptions(), profile, timeUp, jar, common.logs, postgresSettings, tenants, history,
                    startTogether, classData ? jar.toAbsolutePath().getParent().resolve("bench-class-data") : null);
        }
    }

    /** {@code --noisy-neighbor}: one tenant's latency beside another flooding the worker. */
    static final class NoisyNeighborOptions {

        @Option(names = "--noisy-neighbor",
                description = {"Instead of the usual figures: tenant B's latency alone, then beside tenant A flooding the worker",
                        "(issue 14; one all-in-one node, --seconds per phase, the options below)."})
        boolean chosen;

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

        @Option(names = "--node-jar", description = "Noisy neighbour: run the node from this jar (another build, to compare).")
        Path nodeJar;

        NoisyNeighbor.Options options(CommonOptions common, Path jar) {
            return new NoisyNeighbor.Options(common.measured(), common.modelLatencyMs(200), quietRate, quietChats, floodRate,
                    floodChats, floodBacklog, turnSlots, queuedMessages, common.nodeJvmOptions(), nodeJar == null ? jar : nodeJar,
                    common.logs);
        }
    }

    /** {@code --rate-limiter}: the cluster-wide message rate, leased and counted per message. */
    static final class RateLimiterOptions {

        @Option(names = "--rate-limiter", description = {"Instead: the cluster-wide message rate measured two ways (leased token "
                + "buckets, as gateways run it, and a counter statement per message) on one embedded PostgreSQL with several "
                + "gateways' limiters: accepted per minute against the limit, statements per message, admission latency."})
        boolean chosen;

        @Option(names = "--limit", defaultValue = "600", description = "Rate limiter: the tenant's messages per minute (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--gateway-rate", defaultValue = "30",
                description = "Rate limiter: messages per second offered to each gateway (default ${DEFAULT-VALUE}).")
        double gatewayRate;

        @Option(names = "--gateways", defaultValue = "3", description = "Rate limiter: gateways' limiters (default ${DEFAULT-VALUE}).")
        int gateways;

        @Option(names = "--minutes", defaultValue = "2", description = "Rate limiter: full minutes measured per way (default ${DEFAULT-VALUE}).")
        int minutes;

        RateLimiterBench.Options options(CommonOptions common) {
            return new RateLimiterBench.Options(limit, gatewayRate, gateways, minutes, common.logs);
        }
    }
}
