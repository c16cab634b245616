package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Ownership moving under load between separate JVMs: a worker joins and receives its share by
 * handoff, then a worker stopped with SIGTERM hands everything to the survivor. Nothing accepted
 * may be lost, answered twice or answered out of order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class HandoffIT {

    private TestCluster fixture;
    private ClusterHarness cluster;

    @BeforeAll
    void start() throws Exception {
        // A slow-ish model keeps turns in flight while partitions move.
        fixture = new TestCluster(50, 3, harness -> { }, "gateway-1:gateway", "worker-1:worker");
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void ownershipMovesUnderLoadWithoutLossDuplicationOrReordering() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        awaitOwners(gateway, 1);
        ChatLoad load = new ChatLoad(gateway::url, ClusterHarness.API_KEY, "handoff");
        // Senders keep going until the end of the scenario, so every step happens under load.
        load.start(30, Integer.MAX_VALUE, 150);

        // a worker joins under load: it receives about half the partitions by handoff
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 60);
        cluster.start("worker-2", "worker");
        cluster.awaitReady(Duration.ofSeconds(90));
        // (the handoff moves partitions a few at a time: the first view with two owners may show it half-way)
        JsonObject split = awaitOwners(gateway, 2, owners -> {
            int taken = owners.getInteger("worker-2", 0);
            return taken >= 16 && taken <= 48;
        });
        assertThat(split.getInteger("worker-2")).isBetween(16, 48);

        // the first worker is stopped with SIGTERM under load: the survivor takes everything
        int beforeStop = load.sent();
        Await.until("messages to flow through both workers", Duration.ofSeconds(30), () -> load.sent() >= beforeStop + 60);
        long stopped = System.nanoTime();
        cluster.stop("worker-1");
        Duration drain = Duration.ofNanos(System.nanoTime() - stopped);
        JsonObject survivor = awaitOwners(gateway, 1);
        assertThat(survivor.getInteger("worker-2")).isEqualTo(64);
        assertThat(drain).as("graceful stop time").isLessThan(Duration.ofSeconds(20));
        int afterStop = load.sent();
        Await.until("messages to flow through the survivor", Duration.ofSeconds(30), () -> load.sent() >= afterStop + 60);

        load.stopSending();
        load.awaitSent(Duration.ofSeconds(120));
        ChatLoad.Verdict verdict = load.verify(Duration.ofSeconds(90));
        load.close();
        assertThat(verdict.messages()).as("messages judged").isGreaterThan(afterStop);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
    }

    /** Waits until exactly {@code owners} workers hold live leases covering all 64 partitions. */
    private JsonObject awaitOwners(ClusterHarness.Node gateway, int owners) {
        return awaitOwners(gateway, owners, split -> true);
    }

    /** As {@link #awaitOwners(ClusterHarness.Node, int)}, until the partitions by owner also pass {@code settled}. */
    private JsonObject awaitOwners(ClusterHarness.Node gateway, int owners, Predicate<JsonObject> settled) {
        JsonObject[] last = {new JsonObject()};
        Await.until(owners + " owner(s) covering every partition", Duration.ofSeconds(60), () -> {
            try {
                last[0] = cluster.cluster(gateway).getJsonObject("partitionsByOwner");
                return last[0].size() == owners && last[0].stream().mapToInt(e -> (Integer) e.getValue()).sum() == 64
                        && settled.test(last[0]);
            } catch (Exception e) {
                return false;
            }
        });
        return last[0];
    }
}
