package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.clawfleet.worker.WorkerRole;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real worker on embedded PostgreSQL with a slow mock model and two turn slots, one tenant flooding
 * it: the other tenant's message must get one of the next slots, not wait behind the flood. Which model
 * calls came before which is what is asserted, not how long anything took.
 */
class FairDispatchTest {

    private static final String FLOOD = "flood";
    private static final String QUIET = "quiet";
    /** A turn's wait for a slot: at most the calls already in flight plus about one more per slot. */
    private static final int SLOTS = 2;
    private static final int FAIR_WAIT = 3 * SLOTS;

    private Vertx client;
    private DbUrl db;
    private MockLlmServer model;
    private NodeRuntime worker;
    private Database database;
    private InboxStore inbox;
    private final Partitioner partitioner = new Partitioner(16);
    /** The text of the last message of every model call, in the order the calls were answered. */
    private final List<String> calls = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() {
        client = Vertx.vertx();
        db = TestDatabases.freshEmpty();
    }

    @AfterEach
    void stop() {
        if (worker != null) {
            result(worker.stop(), Duration.ofSeconds(60));
        }
        if (database != null) {
            result(database.close());
        }
        result(client.close());
    }

    private void startWorker(Map<String, String> worker) {
        model = new MockLlmServer(client, 100);
        model.beforeAnswer(body -> {
            JsonArray messages = body.getJsonArray("messages");
            calls.add(messages.getJsonObject(messages.size() - 1).getString("content", ""));
            return Future.succeededFuture();
        });
        result(model.start("127.0.0.1", 0));
        Map<String, String> config = new java.util.HashMap<>(Map.of("llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1",
                "llm.model", "mock", "nodeId", "w1", "worker.maxConcurrentTurns", Integer.toString(SLOTS)));
        config.putAll(worker);
        this.worker = TestNodes.start(TestNodes.config("worker", config), db, List.of(WorkerRole::new));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        TenantStore tenants = new TenantStore(database.pool());
        result(tenants.ensure(FLOOD, "Flood", "flood-key-0123456789abcdef"));
        result(tenants.ensure(QUIET, "Quiet", "quiet-key-0123456789abcdef"));
    }

    private void send(String tenant, String chat, String id, String text) {
        InboundMessage message = result(inbox.accept(tenant, "api", chat, partitioner.partitionOf(tenant, "api", chat), id,
                "alice", "user", text, null)).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
    }

    /** Floods from {@link #FLOOD}, waits until the slots are busy with it, then sends one message from {@link #QUIET}. */
    private void floodThenAskQuietly(int chats, int perChat) {
        for (int m = 0; m < perChat; m++) {
            for (int c = 0; c < chats; c++) {
                send(FLOOD, "f" + c, "m" + m, "flood " + c + "." + m);
            }
        }
        Await.until("the flood under way", Duration.ofSeconds(30), () -> calls.size() >= 2 * SLOTS);
        int before = calls.size();
        send(QUIET, "q", "m0", "quiet hello");
        Await.until("the quiet tenant answered", Duration.ofSeconds(60), () -> calls.contains("quiet hello"));
        int waited = calls.indexOf("quiet hello") - before;
        assertThat(waited).as("model calls answered between the quiet tenant's send and its own call")
                .isLessThanOrEqualTo(FAIR_WAIT);
        assertThat(chats * perChat - calls.stream().filter(t -> t.startsWith("flood ")).count())
                .as("the flood still had work waiting, so the quiet tenant did not just find the worker idle")
                .isGreaterThan(10);
    }

    @Test
    void aQuietTenantGetsOneOfTheNextSlotsWhileAnotherFloodsTheWorker() {
        // given two slots and 40 of the flooding tenant's chats with 3 messages each
        startWorker(Map.of());
        // when / then the quiet tenant's message is among the next few calls
        floodThenAskQuietly(40, 3);
    }

    @Test
    void aFloodFillingTheWorkersMemoryCannotKeepAnotherTenantsMessageInTheInbox() {
        // given room for 100 messages in the worker's memory and 30 chats × 10 messages from the flood
        startWorker(Map.of("worker.maxQueuedMessages", "100"));
        // when / then the quiet tenant's message still gets into memory and so to one of the next slots
        floodThenAskQuietly(30, 10);
    }

    @Test
    void aTenantAtItsConcurrentTurnLimitWaitsForItsOwnTurnsWhileAnotherUsesTheFreeSlots() {
        // given six turn slots, the flooding tenant limited to 2 concurrent turns, and model calls of 300 ms
        startWorker(Map.of("worker.maxConcurrentTurns", "6"));
        result(database.pool().preparedQuery("UPDATE tenants SET limits = '{\"concurrentTurns\": 2}' WHERE id = $1")
                .execute(io.vertx.sqlclient.Tuple.of(FLOOD)));
        Map<String, java.util.concurrent.atomic.AtomicInteger> inFlight = new java.util.concurrent.ConcurrentHashMap<>();
        Map<String, java.util.concurrent.atomic.AtomicInteger> peak = new java.util.concurrent.ConcurrentHashMap<>();
        model.beforeAnswer(body -> {
            JsonArray messages = body.getJsonArray("messages");
            String text = messages.getJsonObject(messages.size() - 1).getString("content", "");
            String tenant = text.startsWith("flood ") ? FLOOD : text.startsWith("quiet ") ? QUIET : "other";
            int now = inFlight.computeIfAbsent(tenant, t -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
            peak.computeIfAbsent(tenant, t -> new java.util.concurrent.atomic.AtomicInteger()).accumulateAndGet(now, Math::max);
            calls.add(text);
            io.vertx.core.Promise<Void> answered = io.vertx.core.Promise.promise();
            client.setTimer(300, id -> {
                inFlight.get(tenant).decrementAndGet();
                answered.complete();
            });
            return answered.future();
        });
        // when it sends 10 messages in 10 chats, and the other tenant 4 in 4 chats
        for (int c = 0; c < 10; c++) {
            send(FLOOD, "f" + c, "m0", "flood " + c);
        }
        for (int c = 0; c < 4; c++) {
            send(QUIET, "q" + c, "m0", "quiet " + c);
        }
        // then every message is answered, the limited tenant never had more than 2 turns under way, and the other
        // tenant's turns ran side by side in the slots it left free
        Await.until("all answered", Duration.ofSeconds(60), () -> calls.size() >= 14);
        assertThat(peak.get(FLOOD).get()).as("the limited tenant's turns at once").isEqualTo(2);
        assertThat(peak.get(QUIET).get()).as("the other tenant's turns at once").isGreaterThanOrEqualTo(3);
        // and the worker holds the limited tenant's slots in PostgreSQL, at most the limit
        long held = result(database.pool().preparedQuery("SELECT coalesce(max(slots), 0) FROM tenant_turn_slots WHERE tenant_id = $1")
                .execute(io.vertx.sqlclient.Tuple.of(FLOOD))).iterator().next().getLong(0);
        assertThat(held).isBetween(0L, 2L);
    }
}
