package io.clawfleet.deploy;

import io.clawfleet.deploy.bench.BenchReport;
import io.clawfleet.deploy.bench.BenchRun;
import io.clawfleet.deploy.bench.LoadDriver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A few seconds of the benchmark of docs/PERFORMANCE.md: it must produce plausible figures and stop
 * every process it started. How fast anything is, is for the benchmark itself to say, not a test.
 */
@ExtendWith(NodeLogsOnFailure.class)
class BenchIT {

    @Test
    @Timeout(value = 4, unit = TimeUnit.MINUTES)
    void nativeApiRunMeasuresEveryFigureAndStopsWhatItStarted() throws Exception {
        BenchReport report = new BenchRun(options(LoadDriver.Api.NATIVE, true)).run();

        System.out.print(report.table());
        assertThat(report.value("messages answered")).isGreaterThan(10);
        assertThat(report.value("errors")).isZero();
        assertThat(report.value("throughput")).isPositive();
        assertThat(report.value("latency p50")).isPositive().isLessThanOrEqualTo(report.value("latency p99"));
        assertThat(report.value("CPU per message, all-in-one")).isPositive();
        assertThat(report.value("CPU per message, postgresql")).isPositive();
        assertThat(report.value("idle RSS all-in-one")).isBetween(20.0, 4_096.0);
        assertThat(report.value("RSS under load (peak), all-in-one")).isBetween(20.0, 4_096.0);
        assertThat(report.value("fresh chat's first model request")).isBetween(200.0, 100_000.0);
        // Every message is at least the gateway's insert and the worker's turn commit. Each of the two is
        // grouped with those of other chats under way at once, and a closed loop of 4 chats has at most 4
        // under way: so at least 2 / 4 commits, each at least one statement, per message.
        assertThat(report.value("postgresql commits per message")).isGreaterThanOrEqualTo(2.0 / 4);
        assertThat(report.value("postgresql statements per message")).isGreaterThanOrEqualTo(2.0 / 4);
        assertThat(report.value("launch to /readyz, node all-in-one")).isPositive();
        assertThat(report.value("launch to /readyz, up, restart")).isPositive();
        assertStopped(report);
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void openAiApiRunAnswersEveryRequestAndRecordsAProfile() throws Exception {
        // (clients resending their conversation, up to 6 earlier messages, as an OpenAI SDK chat loop does; with
        // --profile and class-data archives asked for, as `clawfleet bench --profile` runs by default)
        BenchRun.Options plain = options(LoadDriver.Api.OPENAI, false);
        Path logs = plain.logs().resolve("profiled");
        Path classData = plain.logs().resolve("class-data");
        deleteJfr(logs);
        BenchReport report = new BenchRun(new BenchRun.Options(plain.shape(), plain.workers(), plain.api(), plain.chats(),
                plain.rate(), plain.maxOutstanding(), plain.warmup(), plain.duration(), plain.modelLatencyMs(), plain.inFlight(),
                plain.nodeJvmOptions(), true, plain.timeUp(), plain.jar(), logs, plain.postgresSettings(),
                0, 6, false, classData)).run();

        assertThat(report.value("messages answered")).isGreaterThan(10);
        assertThat(report.value("errors")).isZero();
        assertThat(report.value("latency p99")).isPositive();
        // and what the model was sent: about one call per message, bodies at least the size of a fresh chat's first
        assertThat(report.value("model requests per message")).isBetween(0.9, 2.0);
        assertThat(report.value("model request body, largest"))
                .isGreaterThanOrEqualTo(report.value("model request body, mean"))
                .isGreaterThanOrEqualTo(report.value("fresh chat's first model request"));
        assertThat(report.toJson().getJsonObject("conditions").getString("clientHistory")).contains("up to 6 earlier messages");
        assertStopped(report);
        // the node's profile, written when it stopped (a node that makes its class-data archive would record none)
        try (var files = java.nio.file.Files.list(logs)) {
            assertThat(files.filter(f -> f.toString().endsWith(".jfr")).toList())
                    .singleElement().satisfies(f -> assertThat(java.nio.file.Files.size(f)).isGreaterThan(10_000));
        }
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void inFlightCheckAnswersEveryChatAndTimesEachReply() throws Exception {
        BenchRun.Options plain = options(LoadDriver.Api.NATIVE, false);
        BenchReport report = new BenchRun(new BenchRun.Options(plain.shape(), plain.workers(), plain.api(), plain.chats(),
                plain.rate(), plain.maxOutstanding(), plain.warmup(), Duration.ofSeconds(30), 300, 40,
                plain.nodeJvmOptions(), false, false, plain.jar(), plain.logs(), plain.postgresSettings())).run();

        System.out.print(report.table());
        assertThat(report.value("chats answered correctly")).isEqualTo(40);
        assertThat(report.value("errors")).isZero();
        assertThat(report.value("model calls made")).isEqualTo(40);
        assertThat(report.value("peak model calls in flight at once")).isBetween(1.0, 40.0);
        // every reply waited for the model's 300 ms, and was committed after its message was sent
        assertThat(report.value("latency send to reply committed, p50")).isGreaterThanOrEqualTo(300)
                .isLessThanOrEqualTo(report.value("latency send to reply committed, p99"));
        assertThat(report.value("latency send to reply committed, max"))
                .isGreaterThanOrEqualTo(report.value("latency send to reply committed, p99")).isLessThan(30_000);
        assertThat(report.value("RSS during the check (peak), all-in-one")).isBetween(20.0, 4_096.0);
        // each process's CPU per chat, from /proc, over the sends and over the whole check (which holds the sends)
        assertThat(report.value("CPU per chat from the first send to the last reply, all-in-one")).isPositive()
                .isGreaterThanOrEqualTo(report.value("CPU per chat while the gateway accepted them, all-in-one"));
        assertThat(report.value("CPU per chat from the first send to the last reply, all")).isGreaterThan(
                report.value("CPU per chat from the first send to the last reply, all-in-one"));
        // the nodes were warmed at full speed first; the warm-up's calls are not the check's
        assertThat(report.table()).contains("warm-up before the check: closed loop, 4 chats");
        assertThat(report.value("RSS during the check (peak), postgresql (all processes)")).isPositive();
        assertStopped(report);
    }

    private static void deleteJfr(Path folder) throws java.io.IOException {
        if (java.nio.file.Files.isDirectory(folder)) {
            try (var files = java.nio.file.Files.list(folder)) {
                for (Path f : files.filter(f -> f.toString().endsWith(".jfr")).toList()) {
                    java.nio.file.Files.delete(f);
                }
            }
        }
    }

    private static BenchRun.Options options(LoadDriver.Api api, boolean timeUp) {
        return new BenchRun.Options(BenchRun.Shape.ALL_IN_ONE, 1, api, 4, 0, 1_000, Duration.ofSeconds(1),
                Duration.ofSeconds(3), 0, 0, List.of("-Xmx256m", "-XX:+UseSerialGC"), false, timeUp, TestJar.path(),
                Path.of("target", "bench-it"), java.util.Map.of());
    }

    /** Every node JVM and the PostgreSQL server it started are gone (PostgreSQL may take a moment to exit). */
    private static void assertStopped(BenchReport report) {
        List<Object> pids = report.toJson().getJsonObject("conditions").getJsonArray("pids").getList();
        assertThat(pids).hasSize(2).allSatisfy(pid -> assertThat(exitsWithin(((Number) pid).longValue(), 20))
                .as("process " + pid + " still running").isTrue());
    }

    private static boolean exitsWithin(long pid, int seconds) {
        var process = ProcessHandle.of(pid);
        if (process.isEmpty()) {
            return true;
        }
        try {
            process.get().onExit().get(seconds, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            return !process.get().isAlive();
        }
    }
}
