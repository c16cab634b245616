package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChaosRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The short chaos run: separate JVMs (2 gateways, 3 workers, sandbox, scheduler), chats sending all
 * the time, a fault every few seconds (kill -9, SIGSTOP/SIGCONT, SIGTERM and restart of workers
 * and gateways, PostgreSQL restarts with 2 to 6 s of outage). The long run is {@code clawfleet chaos} (docs/RELIABILITY.md).
 */
@ExtendWith(NodeLogsOnFailure.class)
class ChaosIT {

    /** Answered messages and history are pruned after this, every 20 s, while the faults run. */
    private static final long RETENTION_S = 61;

    /** The run goes on past its 75 s (up to 225 s) until this many faults were injected. */
    private static final int MIN_FAULTS = 8;

    @Test
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    void nothingAcceptedIsLostDuplicatedOrReorderedUnderFaults() throws Exception {
        ChaosRun.Report report = new ChaosRun(new ChaosRun.Options(Duration.ofSeconds(75), 5_000, MIN_FAULTS, 60, 700,
                20, 3_000, 6_000, 0, 1, 4, false, 15_000, RETENTION_S, System.nanoTime(), TestJar.path(), Path.of("target", "chaos"))).run();

        System.out.println(report.toJson().encodePrettily());
        assertThat(report.faults().values().stream().mapToInt(Integer::intValue).sum()).as("faults injected").isGreaterThanOrEqualTo(MIN_FAULTS);
        assertThat(report.verdict().messages()).as("messages accepted").isGreaterThan(1_000);
        assertThat(report.verdict().lost()).as("lost").isEmpty();
        assertThat(report.verdict().duplicated()).as("duplicated").isEmpty();
        assertThat(report.verdict().outOfOrder()).as("out of order").isEmpty();
        assertThat(report.gaps()).as("failovers measured after kill -9").isNotEmpty();
        assertThat(report.gaps()).allSatisfy(gap -> assertThat(gap.millis()).as("failover gap of " + gap.node())
                .isBetween(0L, 5_000L));
        // PostgreSQL went away at least once: the gateways said so on /readyz, and every node was ready again soon after.
        assertThat(report.outages()).as("postgresql restarts").isNotEmpty();
        assertThat(report.outages()).allSatisfy(outage -> {
            assertThat(outage.notReadyAfterMs()).as("a gateway's /readyz turned not-ready during " + outage).isBetween(0L, outage.downMs());
            assertThat(outage.allReadyAfterMs()).as("every node ready again after " + outage).isBetween(0L, 30_000L);
        });
        // A flood past what a chat may have waiting: the edge refused some of it (429, with Retry-After), answered
        // all it accepted once and in order, and none of what it refused.
        assertThat(report.floods()).as("floods").hasSize(1).allSatisfy(flood -> {
            assertThat(flood.refused()).as("refused at the edge").isPositive();
            assertThat(flood.refusedWithoutRetryAfter()).as("refusals without Retry-After").isZero();
            assertThat(flood.accepted()).as("accepted from the flood").isPositive();
            assertThat(flood.verdict().lost()).as("flood messages lost").isEmpty();
            assertThat(flood.verdict().duplicated()).as("flood messages duplicated").isEmpty();
            assertThat(flood.verdict().outOfOrder()).as("flood replies out of order or to refused messages").isEmpty();
        });
        // Chats whose every message calls a counter that changes things: no call was made twice, whatever died
        // mid-turn, and every message was answered once, in order.
        assertThat(report.sideEffects()).satisfies(effects -> {
            assertThat(effects.messages()).as("side-effect messages").isGreaterThan(50);
            assertThat(effects.countedTwice()).as("calls made twice").isEmpty();
            assertThat(effects.wrong()).as("answers that do not match the counter").isEmpty();
            assertThat(effects.verdict().clean()).as("side-effect chats lost, doubled or reordered nothing: " + effects.toJson()).isTrue();
            assertThat(effects.counted()).as("calls counted and answered").isPositive();
        });
        // The soak's instruments, short (the hour-long run is in docs/RELIABILITY.md): every node and the database
        // sampled through the faults, into the CSV and the report, and PostgreSQL's connections bounded by the pools.
        io.vertx.core.json.JsonObject resources = report.resources();
        for (String node : java.util.List.of("sandbox-1", "scheduler-1", "gateway-1", "worker-1")) {
            for (String metric : java.util.List.of("rss_bytes", "heap_after_gc_bytes", "threads", "open_files")) {
                assertThat(resources.fieldNames()).as("series of " + node + " " + metric)
                        .anyMatch(key -> key.startsWith(node + "@") && key.endsWith(" " + metric));
            }
        }
        var connections = resources.getJsonObject("postgres connections");
        assertThat(connections.getInteger("samples")).as("database samples").isGreaterThanOrEqualTo(4);
        assertThat(connections.getDouble("max")).as("PostgreSQL connections").isBetween(1.0, 200.0);
        var heap = resources.getJsonObject(resources.fieldNames().stream().filter(k -> k.startsWith("sandbox-1@")
                && k.endsWith(" heap_after_gc_bytes")).findFirst().orElseThrow());
        assertThat(heap.getDouble("max")).as("a node's heap after a full collection").isBetween(1e6, 256e6);
        // Retention ran through the faults: answered messages, delivered replies, history and usage rows older than it
        // were pruned (fewer rows are left than messages were answered; the pruned calls are in the daily sums), none
        // left overdue, and nothing the judge counted went missing (the clients read the replies as they went, before
        // their pruning).
        ChaosRun.Retention retention = report.retention();
        assertThat(retention.answeredInbox()).as("answered messages left after pruning " + retention)
                .isLessThan(report.verdict().messages());
        assertThat(retention.deliveredReplies()).as("delivered replies left after pruning " + retention)
                .isLessThan(report.verdict().messages());
        assertThat(retention.summedCalls()).as("model calls summed by pruning " + retention).isPositive();
        assertThat(retention.keptUp()).as("nothing overdue: " + retention).isTrue();
        assertThat(java.nio.file.Files.readAllLines(Path.of("target", "chaos", "resources.csv")))
                .first().isEqualTo("seconds,source,metric,value");
    }
}
