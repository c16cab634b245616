package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.clawfleet.worker.llm.OfflineProvider;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** A real worker node on embedded PostgreSQL with the mock model: turns, order, exactly-once, fencing. */
class WorkerTurnsTest {

    private static final String TENANT = "acme";

    private Vertx client;
    private MockLlmServer model;
    private DbUrl db;
    private NodeRuntime worker;
    private final WorkerRole role = new WorkerRole();
    private Database database;
    private InboxStore inbox;
    private OutboxStore outbox;
    private final Partitioner partitioner = new Partitioner(16);

    @BeforeEach
    void start() {
        client = Vertx.vertx();
        db = TestDatabases.freshEmpty();
    }

    private void startWorker(long modelLatencyMs, Map<String, String> extra) {
        model = new MockLlmServer(client, modelLatencyMs);
        result(model.start("127.0.0.1", 0));
        Map<String, String> config = new java.util.HashMap<>(Map.of(
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock", "nodeId", "w1"));
        config.putAll(extra);
        worker = TestNodes.start(TestNodes.config("worker", config), db, List.of(() -> role));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        outbox = new OutboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
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

    private InboundMessage send(String chat, String id, String text) {
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), id,
                "alice", "user", text, null)).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
        return message;
    }

    private List<OutboundReply> awaitReplies(String chat, int count) {
        List<OutboundReply> replies = new ArrayList<>();
        Await.until(count + " replies in " + chat, Duration.ofSeconds(30), () -> {
            replies.clear();
            replies.addAll(result(outbox.repliesAfter(BotRef.main(TENANT), "api", chat, 0, 1000)));
            return replies.size() >= count;
        });
        return replies;
    }

    @Test
    void answersEveryMessageOfEveryChatOnceAndInOrder() {
        // given a worker owning every partition
        startWorker(0, Map.of());
        // when 20 chats each send 15 messages without waiting
        for (int m = 0; m < 15; m++) {
            for (int c = 0; c < 20; c++) {
                send("chat-" + c, "m" + m, "chat-" + c + " message " + m);
            }
        }
        // then each chat gets exactly 15 replies, numbered 1..15, answering its messages in order
        for (int c = 0; c < 20; c++) {
            List<OutboundReply> replies = awaitReplies("chat-" + c, 15);
            assertThat(replies).hasSize(15);
            for (int m = 0; m < 15; m++) {
                assertThat(replies.get(m).seq()).isEqualTo(m + 1);
                assertThat(replies.get(m).text()).isEqualTo("echo: chat-" + c + " message " + m);
            }
        }
    }

    @Test
    void theModelSeesTheChatsHistory() {
        startWorker(0, Map.of());
        send("hist", "1", "my name is Ada");
        awaitReplies("hist", 1);
        send("hist", "2", "what is my name?");
        awaitReplies("hist", 2);
        assertThat(model.lastRequestBody()).contains("my name is Ada").contains("echo: my name is Ada").contains("what is my name?");
    }

    @Test
    void messagesWaitingBeforeTheWorkerStartsAreFoundByTheInboxScan() {
        // given messages accepted while no worker runs (their wake-ups reach nobody)
        Vertx early = Vertx.vertx();
        io.clawfleet.shared.db.Migrations.apply(db, 16);
        Database pre = Database.connect(early, db, 2, 5_000);
        result(new TenantStore(pre.pool()).ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
        InboxStore preInbox = new InboxStore(pre.pool());
        for (int m = 0; m < 5; m++) {
            result(preInbox.accept(TENANT, "api", "early", partitioner.partitionOf(TENANT, "api", "early"), "m" + m,
                    "alice", "user", "early " + m, null));
        }
        result(pre.close());
        result(early.close());
        // when the worker starts / then it claims the partitions, scans and answers them in order
        startWorker(0, Map.of());
        assertThat(awaitReplies("early", 5)).extracting(OutboundReply::text)
                .containsExactly("echo: early 0", "echo: early 1", "echo: early 2", "echo: early 3", "echo: early 4");
    }

    @Test
    void aModelThatKeepsFailingEndsWithAClearErrorReplyAndADeadLetter() {
        startWorker(0, Map.of("llm.maxRetries", "1", "llm.retryBackoffMs", "10"));
        send("broken", "1", "fail:500 please");
        send("broken", "2", "and this one works");
        List<OutboundReply> replies = awaitReplies("broken", 2);
        assertThat(replies.get(0).text()).contains("could not get an answer from the language model").contains("500");
        assertThat(replies.get(1).text()).isEqualTo("echo: and this one works");
        long dead = result(database.pool().query("SELECT count(*) FROM dead_letters").execute()).iterator().next().getLong(0);
        assertThat(dead).isEqualTo(1);
    }

    @Test
    void aWorkerWhoseLeaseWasTakenCannotCommitItsTurn() {
        // given a slow model, so the turn is in flight when the lease moves
        startWorker(1_500, Map.of());
        InboundMessage message = send("fenced", "1", "slow question");
        Await.until("the model call to start", Duration.ofSeconds(10), () -> model.requestCount() > 0);
        // when another node takes the partition (epoch + 1) while the model thinks
        result(database.pool().preparedQuery("UPDATE partition_leases SET owner_node = 'w2', epoch = epoch + 1, "
                + "expires_at = now() + interval '10 minutes' WHERE partition = $1").execute(Tuple.of(message.partition())));
        // then the turn ends without committing: no reply, the message still pending, the partition let go
        Await.until("the turn to finish", Duration.ofSeconds(10), () -> role.dispatcher().turnsInFlight() == 0);
        assertThat(result(outbox.replyTo(TENANT, message.id()))).isEmpty();
        assertThat(result(inbox.pendingInChat(message.chatId(), 0, 10))).extracting(InboundMessage::id).containsExactly(message.id());
        assertThat(role.ownership().heldPartitions()).doesNotContain(message.partition());
    }

    @Test
    void withoutAModelEveryReplySaysSoPlainly() {
        model = null;
        worker = TestNodes.start(TestNodes.config("worker", Map.of("nodeId", "w1")), db, List.of(WorkerRole::new));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        outbox = new OutboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
        send("offline", "1", "hello?");
        assertThat(awaitReplies("offline", 1).get(0).text()).isEqualTo(OfflineProvider.REPLY);
    }
}
