package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling restart of every node of a cluster of separate JVMs, one at a time, under load (issue 18), as
 * docs/OPERATIONS.md tells an operator to upgrade: two gateways, two workers, a sandbox node and a scheduler, each
 * stopped with SIGTERM (it drains), started again and ready before the next. Chats send through whichever gateway is
 * up, retrying a refused send with the same messageId, as a client behind a load balancer would. Every accepted
 * message is answered exactly once and in order; the longest wait for a reply is printed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class RollingRestartIT {

    private static final List<String> NODES = List.of("gateway-1:gateway", "gateway-2:gateway", "worker-1:worker",
            "worker-2:worker", "sandbox-1:sandbox", "scheduler-1:scheduler");

    private TestCluster fixture;
    private ClusterHarness cluster;

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(50, NODES.size(), harness -> { }, NODES.toArray(String[]::new));
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void everyNodeRestartedOneByOneUnderLoadLosesDoublesAndReordersNothing() throws Exception {
        AtomicInteger next = new AtomicInteger();
        ChatLoad load = new ChatLoad(() -> fixture.anyGateway(next, 2), ClusterHarness.API_KEY, "rolling");
        load.start(30, Integer.MAX_VALUE, 200);
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 150);

        for (String node : NODES) {
            String id = node.substring(0, node.indexOf(':'));
            int before = load.sent();
            cluster.stop(id);
            cluster.restart(id);
            cluster.awaitReady(Duration.ofSeconds(120));
            // the load went on through the restart (at least one more message accepted while or after it ran)
            Await.until("messages accepted after restarting " + id, Duration.ofSeconds(30), () -> load.sent() > before + 30);
        }

        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
        load.close();
        System.out.printf("rolling restart of %d nodes: %d messages in %d chats, reply latency p50 %d ms, p99 %d ms, "
                        + "longest %d ms%n", NODES.size(), verdict.messages(), verdict.chats(), verdict.p50LatencyMs(),
                verdict.p99LatencyMs(), verdict.maxLatencyMs());
        assertThat(verdict.messages()).isGreaterThan(500);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
    }
}
