package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each failure a worker can suffer, one after another on one cluster of separate JVMs, under load:
 * kill -9 mid-turn, a freeze (SIGSTOP) past the lease, and a rolling restart of every worker.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class FailoverIT {

    private Vertx vertx;
    private ClusterHarness cluster;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        // Slow enough that turns are in flight when a worker dies or freezes.
        MockLlmServer model = new MockLlmServer(vertx, 400);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 3);
        cluster.start("gateway-1", "gateway");
        cluster.start("worker-1", "worker");
        cluster.start("worker-2", "worker");
        cluster.awaitReady(Duration.ofSeconds(120));
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        result(vertx.close());
    }

    @Test
    void workersDieFreezeAndRestartUnderLoadWithoutLossDuplicationOrReordering() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        awaitSplit(gateway, "worker-1", "worker-2");
        ChatLoad load = new ChatLoad(gateway::url, ClusterHarness.API_KEY, "failover");
        load.start(40, Integer.MAX_VALUE, 300);
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 260);

        // kill -9 in the middle of turns: detection plus takeover within 5 s
        long killed = System.nanoTime();
        cluster.kill("worker-1");
        awaitOwners(gateway, 1, Duration.ofSeconds(5));
        Duration takeover = Duration.ofNanos(System.nanoTime() - killed);
        assertThat(takeover).as("takeover after kill -9").isLessThan(Duration.ofSeconds(5));
        cluster.restart("worker-1");
        cluster.awaitReady(Duration.ofSeconds(90));
        awaitSplit(gateway, "worker-1", "worker-2");

        // frozen past its lease, then resumed: it commits nothing stale, lets go, and rejoins
        cluster.pause("worker-2");
        awaitOwners(gateway, 1, Duration.ofSeconds(10));
        // Not a wait for anything: the scenario is a worker that stays frozen well past its lease while
        // the survivor answers its chats, then wakes up believing it still owns them.
        Thread.sleep(4_000);
        cluster.resume("worker-2");
        ClusterHarness.Node frozen = cluster.node("worker-2");
        Await.until("the resumed worker to let its stale partitions go", Duration.ofSeconds(15),
                () -> metric(frozen, "clawfleet_partitions_lost_total") > 0 || metric(frozen, "clawfleet_partitions_fenced_total") > 0);
        awaitSplit(gateway, "worker-1", "worker-2");

        // a rolling restart of every worker, one at a time
        for (String worker : new String[] {"worker-1", "worker-2"}) {
            cluster.stop(worker);
            awaitOwners(gateway, 1, Duration.ofSeconds(10));
            cluster.restart(worker);
            cluster.awaitReady(Duration.ofSeconds(90));
            awaitSplit(gateway, "worker-1", "worker-2");
        }

        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
        load.close();
        assertThat(verdict.messages()).isGreaterThan(1_000);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
    }

    private void awaitSplit(ClusterHarness.Node gateway, String a, String b) {
        Await.until("partitions split between " + a + " and " + b, Duration.ofSeconds(90), () -> {
            JsonObject owners = owners(gateway);
            return owners.getInteger(a, 0) > 0 && owners.getInteger(b, 0) > 0 && total(owners) == 64;
        });
    }

    private void awaitOwners(ClusterHarness.Node gateway, int count, Duration within) {
        Await.until(count + " owner(s) holding every partition", within, () -> {
            JsonObject owners = owners(gateway);
            return owners.size() == count && total(owners) == 64;
        });
    }

    private JsonObject owners(ClusterHarness.Node gateway) {
        try {
            return cluster.cluster(gateway).getJsonObject("partitionsByOwner");
        } catch (Exception e) {
            return new JsonObject();
        }
    }

    private static int total(JsonObject owners) {
        return owners.stream().mapToInt(e -> (Integer) e.getValue()).sum();
    }

    private double metric(ClusterHarness.Node node, String name) {
        try {
            String text = http.send(HttpRequest.newBuilder(URI.create(node.url() + "/metrics")).timeout(Duration.ofSeconds(3)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            return text.lines().filter(line -> line.startsWith(name)).mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                    .sum();
        } catch (Exception e) {
            return 0;
        }
    }
}
