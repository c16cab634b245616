package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 20, poison messages, in separate JVMs: a message whose turn kills every worker that starts it (here the
 * test kills them with kill -9 the moment the turn asks the model, as a crash in the turn would) is dead-lettered
 * after {@code worker.maxTurnStarts} (5) owners started it, with an error reply; the next owner does not start it,
 * the chat's next message is answered, and a load on other chats through it all loses, doubles and reorders nothing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class PoisonIT {

    private static final String PILL = "POISON-PILL-" + UUID.randomUUID();
    private static final String[] WORKERS = {"worker-1", "worker-2"};

    private TestCluster fixture;
    private ClusterHarness cluster;
    private final ExecutorService killer = Executors.newSingleThreadExecutor();
    private final AtomicInteger crashes = new AtomicInteger();

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(20, 3, harness -> { }, "gateway-1:gateway", "worker-1:worker", "worker-2:worker");
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        killer.shutdownNow();
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void aMessageThatKillsEveryWorkerStartingItIsDeadLetteredAfterFiveAndItsChatGoesOn() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        ApiChat api = new ApiChat(gateway.url(), ClusterHarness.API_KEY);
        // given a turn that crashes its worker: when it asks the model, every live worker is killed (the one that
        // runs it among them) and started again, and the model never answers
        fixture.model.beforeAnswer(body -> {
            if (!body.encode().contains(PILL)) {
                return Future.succeededFuture();
            }
            killer.execute(this::crashEveryWorker);
            return Promise.<Void>promise().future();
        });
        ChatLoad load = new ChatLoad(gateway::url, ClusterHarness.API_KEY, "poison-load");
        load.start(10, Integer.MAX_VALUE, 200);
        Await.until("the load to be flowing", Duration.ofSeconds(60), () -> load.sent() >= 50);

        // when the poison message is sent
        String chat = "poisoned-" + UUID.randomUUID();
        long started = System.nanoTime();
        String reply = api.ask(chat, PILL);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        System.out.printf("poison message: %d crashes, error reply after %d ms%n", crashes.get(), ms);

        // then after five owners started it, the next one dead-letters it with a reply that says why
        assertThat(reply).contains("could not answer this message", "started 5 times", "an operator can replay it");
        assertThat(crashes.get()).as("workers crashed by the message").isBetween(1, 5);
        Database db = Database.connect(fixture.vertx, fixture.db, 1, 5_000);
        try {
            Row row = result(db.pool().preparedQuery("""
                    SELECT i.status, i.attempts, (SELECT count(*) FROM dead_letters d
                                                   WHERE d.kind = 'inbound' AND d.ref_id = i.id::text) AS letters
                      FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1""")
                    .execute(Tuple.of(chat))).iterator().next();
            assertThat(row.getString("status")).isEqualTo("done");
            assertThat(row.getInteger("attempts")).isGreaterThanOrEqualTo(5);
            assertThat(row.getLong("letters")).isEqualTo(1);
        } finally {
            result(db.close());
        }
        // and its chat goes on: the next message is answered by the model, with no crash
        int before = crashes.get();
        assertThat(api.ask(chat, "are you there?")).doesNotContain("could not answer");
        assertThat(crashes.get()).isEqualTo(before);
        // and the other chats lost, doubled and reordered nothing through the crashes
        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(3));
        load.close();
        assertThat(verdict.messages()).isGreaterThan(50);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
        JsonArray dead = new JsonObject(api.call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters");
        assertThat(dead).as("dead letters of the tenant").hasSize(1);
    }

    /** kill -9 of every live worker, then each started again; one crash however many were killed. */
    private void crashEveryWorker() {
        try {
            boolean killed = false;
            for (String worker : WORKERS) {
                if (cluster.node(worker).alive()) {
                    cluster.kill(worker);
                    killed = true;
                }
            }
            if (killed) {
                crashes.incrementAndGet();
            }
            for (String worker : WORKERS) {
                if (!cluster.node(worker).alive()) {
                    cluster.restart(worker);
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
