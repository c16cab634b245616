package io.clawfleet.deploy;

import io.clawfleet.deploy.bench.BenchReport;
import io.clawfleet.deploy.bench.NoisyNeighbor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A few seconds per phase of {@code bench --noisy-neighbor}: it runs, answers every message of the quiet
 * tenant in both phases, and reports both of its p99s and their ratio. Whether the ratio meets its target
 * is for the benchmark to say (docs/PERFORMANCE.md), not a test.
 */
@ExtendWith(NodeLogsOnFailure.class)
class NoisyNeighborBenchIT {

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void reportsTheQuietTenantsLatencyAloneAndBesideAFlood() throws Exception {
        // given a short run: B at 4 msg/s, A at 100 msg/s with up to 200 unanswered, 4 slots, a 100 ms model
        NoisyNeighbor.Options options = new NoisyNeighbor.Options(Duration.ofSeconds(4), 100, 4, 2, 100, 16, 200, 4, 100,
                List.of("-Xmx256m", "-XX:+UseSerialGC"), TestJar.path(), Path.of("target", "bench-noisy-it"));

        // when
        BenchReport report = new NoisyNeighbor(options).run();

        // then every message of B was answered, alone and beside the flood, with no error
        System.out.print(report.table());
        for (String phase : List.of("B alone", "B with A flooding")) {
            // 4 s at 4 msg/s: 15 or 16 sent (the clock decides the last), each either answered or an error
            assertThat(report.value(phase + ": messages answered")).as(phase).isBetween(15.0, 16.0);
            assertThat(report.value(phase + ": errors")).as(phase).isZero();
            assertThat(report.value(phase + ": latency p50")).as(phase).isPositive()
                    .isLessThanOrEqualTo(report.value(phase + ": latency p99"));
        }
        // and A did flood, and was answered too
        assertThat(report.value("A flooding: messages answered")).isGreaterThan(16);
        assertThat(report.value("B p99 with A flooding / B p99 alone")).isPositive();
        assertThat(report.table()).containsPattern("noisy neighbour: (PASS|FAIL)");
    }
}
