package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 20, rejoin: the same worker restarted 20 times in a row, at its old cluster address, under load, on a cluster
 * of separate JVMs. Each time it must be back: a member again and owning conversation partitions.
 *
 * <p>The stall this guards against came from a member leaving while migrations involving it (or a frozen peer) were
 * in flight: the master's partition table kept naming the departed member for Hazelcast's migration timeout (300 s by
 * default), and the node restarted at the same address could not write its own entry, so it failed to join again and
 * again. The restarts here mix the ways that happen: kill -9 and SIGTERM, a kill as soon as the restarted member has
 * joined (its own migrations in flight), and a kill while another worker is frozen (SIGSTOP).
 *
 * <p>Each rejoin is timed from the moment the new JVM is launched: {@code joined} when it is ready (its clustered
 * event bus started) and the cluster view lists it, {@code owning} when it holds a partition lease taken after its
 * departure (the old incarnation's leases do not count). What the 5 s of the issue can bound is the part Clawfleet controls,
 * from joined to owning; the JVM's own start (class loading, TLS, the schema check) comes before it and is printed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 12, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class RejoinIT {

    private static final int RESTARTS = 20;
    private static final String MEMBER = "worker-3";

    private TestCluster fixture;
    private ClusterHarness cluster;

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(100, 4, harness -> { }, "gateway-1:gateway", "worker-1:worker", "worker-2:worker",
                MEMBER + ":worker");
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void theSameMemberRestartedTwentyTimesIsBackAndOwningPartitionsEachTime() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        Await.until(MEMBER + " owning partitions", Duration.ofSeconds(90), () -> owns(gateway, MEMBER));
        ChatLoad load = new ChatLoad(gateway::url, ClusterHarness.API_KEY, "rejoin");
        load.start(20, Integer.MAX_VALUE, 200);
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 100);

        List<long[]> timings = new ArrayList<>();
        for (int i = 0; i < RESTARTS; i++) {
            String how;
            if (i % 5 == 4) {
                how = "kill -9 while worker-2 is frozen";
                cluster.pause("worker-2");
                cluster.kill(MEMBER);
                Thread.sleep(2_000); // frozen across the departure, not long enough to be thrown out (15 s)
                cluster.resume("worker-2");
            } else if (i % 4 == 3) {
                how = "kill -9 just after joining";
                cluster.kill(MEMBER);
                cluster.restart(MEMBER);
                Await.until(MEMBER + " to join before it is killed", Duration.ofSeconds(60),
                        () -> cluster.ready(cluster.node(MEMBER)));
                cluster.kill(MEMBER);
            } else if (i % 2 == 0) {
                how = "kill -9";
                cluster.kill(MEMBER);
            } else {
                how = "SIGTERM";
                cluster.stop(MEMBER);
            }
            JsonObject epochsAtDeparture = epochs(gateway);
            long launched = System.nanoTime();
            cluster.restart(MEMBER);
            Await.until("restart " + (i + 1) + " (" + how + "): " + MEMBER + " back in the cluster", Duration.ofSeconds(60),
                    () -> cluster.ready(cluster.node(MEMBER)) && member(gateway, MEMBER));
            long joined = System.nanoTime();
            Await.until("restart " + (i + 1) + " (" + how + "): " + MEMBER + " owning partitions", Duration.ofSeconds(30),
                    () -> ownsAnew(gateway, MEMBER, epochsAtDeparture));
            long owning = System.nanoTime();
            timings.add(new long[] {TimeUnit.NANOSECONDS.toMillis(joined - launched), TimeUnit.NANOSECONDS.toMillis(owning - joined)});
            System.out.printf("rejoin %2d (%s): joined %d ms after launch, owning partitions %d ms later%n", i + 1, how,
                    timings.getLast()[0], timings.getLast()[1]);
        }

        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
        load.close();
        long longestJoin = timings.stream().mapToLong(t -> t[0]).max().orElseThrow();
        long longestOwning = timings.stream().mapToLong(t -> t[1]).max().orElseThrow();
        System.out.printf("%d rejoins: longest launch-to-member %d ms, longest member-to-owning %d ms; %d messages, reply "
                + "latency p99 %d ms, longest %d ms%n", RESTARTS, longestJoin, longestOwning, verdict.messages(),
                verdict.p99LatencyMs(), verdict.maxLatencyMs());
        assertThat(longestOwning).as("longest time from joining to owning partitions (ms)").isLessThan(5_000);
        assertThat(longestJoin).as("longest time from launch to membership (ms)").isLessThan(30_000);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
    }

    private boolean member(ClusterHarness.Node gateway, String id) {
        try {
            JsonArray members = cluster.cluster(gateway).getJsonArray("members");
            return members.stream().anyMatch(m -> id.equals(((JsonObject) m).getString("nodeId")));
        } catch (Exception e) {
            return false;
        }
    }

    /** Each partition's lease epoch now (an epoch grows with every change of owner). */
    private JsonObject epochs(ClusterHarness.Node gateway) {
        Await.until("the cluster view", Duration.ofSeconds(30), () -> {
            try {
                return cluster.cluster(gateway).containsKey("partitions");
            } catch (Exception e) {
                return false;
            }
        });
        JsonObject epochs = new JsonObject();
        try {
            for (Object p : cluster.cluster(gateway).getJsonArray("partitions")) {
                JsonObject partition = (JsonObject) p;
                epochs.put(partition.getValue("partition").toString(), partition.getLong("epoch"));
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return epochs;
    }

    /** {@code id} holds a live lease it took after {@code before} was read: the new incarnation, not the old one's. */
    private boolean ownsAnew(ClusterHarness.Node gateway, String id, JsonObject before) {
        try {
            for (Object p : cluster.cluster(gateway).getJsonArray("partitions")) {
                JsonObject partition = (JsonObject) p;
                if (id.equals(partition.getString("owner")) && !partition.getBoolean("expired")
                        && partition.getLong("epoch") > before.getLong(partition.getValue("partition").toString(), 0L)) {
                    return true;
                }
            }
            return false;
        } catch (Exception e) {
            return false;
        }
    }

    private boolean owns(ClusterHarness.Node gateway, String id) {
        try {
            return cluster.cluster(gateway).getJsonObject("partitionsByOwner").getInteger(id, 0) > 0;
        } catch (Exception e) {
            return false;
        }
    }
}
