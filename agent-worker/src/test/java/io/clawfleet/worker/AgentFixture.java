package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Tuple;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;

/**
 * A real worker node on embedded PostgreSQL, talking to the scripted mock model, and the means to
 * chat with it the way a gateway would: messages into the inbox, replies out of the outbox.
 */
final class AgentFixture implements AutoCloseable {

    static final String TENANT = "acme";
    static final String BOOTSTRAP = "bootstrap-secret-42";

    final Vertx client = Vertx.vertx();
    final MockLlmServer model;
    final Partitioner partitioner = new Partitioner(16);
    NodeRuntime worker;
    private DbUrl db;
    private Map<String, String> config;
    Database database;
    InboxStore inbox;
    OutboxStore outbox;

    AgentFixture() {
        model = new MockLlmServer(client, 0);
        result(model.start("127.0.0.1", 0));
    }

    /** Starts the worker; {@code extra} adds or overrides configuration keys. */
    /** The key that reads the worker's {@code /metrics}. */
    static final String METRICS_KEY = "metrics-key-agent-fixture-0123456789";

    AgentFixture startWorker(Map<String, String> extra) {
        DbUrl db = TestDatabases.freshEmpty();
        Map<String, String> config = new HashMap<>(Map.of("llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1",
                "llm.model", "mock", "nodeId", "w1", "adminBootstrapKey", BOOTSTRAP,
                // Tools run freely unless a test is about approvals (the shipped default, supervised, is
                // ConfigLoaderTest's and ApprovalsTest's subject).
                "agent.autonomy", "full", "metricsKey", METRICS_KEY));
        config.putAll(extra);
        this.db = db;
        this.config = config;
        worker = TestNodes.start(TestNodes.config("worker", config), db, List.of(WorkerRole::new));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        outbox = new OutboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
        return this;
    }

    /**
     * Stops the worker and starts another with the same node id on the same database, as a
     * supervisor restarts a crashed node: it claims the partitions anew (a higher epoch) and scans
     * their inboxes.
     */
    void restartWorker() {
        restartWorker(() -> { });
    }

    /** As {@link #restartWorker()}, doing {@code whileDown} while no worker runs. */
    void restartWorker(Runnable whileDown) {
        result(worker.stop(), Duration.ofSeconds(60));
        whileDown.run();
        worker = TestNodes.start(TestNodes.config("worker", config), db, List.of(WorkerRole::new));
    }

    @Override
    public void close() {
        if (worker != null) {
            result(worker.stop(), Duration.ofSeconds(60));
        }
        if (database != null) {
            result(database.close());
        }
        result(client.close());
    }

    static String chat(String prefix) {
        return prefix + "-" + UUID.randomUUID();
    }

    InboundMessage send(String chat, String text) {
        return send(chat, text, null);
    }

    /** @param replyNode the gateway that waits for the reply on a connection (streamed to), or null */
    InboundMessage send(String chat, String text, String replyNode) {
        return send("api", chat, text, replyNode);
    }

    /** A message on any channel, as that channel's adapter would put it in the inbox. */
    InboundMessage send(String channel, String chat, String text, String replyNode) {
        return sendAs(channel, chat, "alice", text, replyNode);
    }

    /** A message from {@code sender} (in a group chat, senders differ). */
    InboundMessage sendAs(String channel, String chat, String sender, String text, String replyNode) {
        InboundMessage message = result(inbox.accept(TENANT, channel, chat, partitioner.partitionOf(TENANT, channel, chat),
                UUID.randomUUID().toString(), sender, "user", text, replyNode)).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
        return message;
    }

    /** Puts an isolated message in the chat, as a task firing with {@code context_mode=isolated} does. */
    void sendIsolated(String chat, String text) {
        InboundMessage message = result(inbox.accept(new InboxStore.Intake(TENANT, "main", "api", chat,
                partitioner.partitionOf(TENANT, "api", chat), "task:" + UUID.randomUUID() + ":1", "task", "task", text,
                null, 0, null, "isolated"))).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
    }

    List<String> replies(String chat, int count) {
        return replies("api", chat, count);
    }

    /** Waits for at least {@code count} replies in a chat of {@code channel} and returns them all. */
    List<String> replies(String channel, String chat, int count) {
        List<String> texts = new ArrayList<>();
        Await.until(count + " replies in " + chat, Duration.ofSeconds(30), () -> {
            texts.clear();
            result(outbox.repliesAfter(BotRef.main(TENANT), channel, chat, 0, 1_000)).forEach(r -> texts.add(r.text()));
            return texts.size() >= count;
        });
        return texts;
    }

    /** Sends a message and returns the {@code replyNumber}-th reply of the chat (counting from 1). */
    String ask(String chat, String text, int replyNumber) {
        send(chat, text);
        return replies(chat, replyNumber).get(replyNumber - 1);
    }

    List<AuditStore.Event> audit() {
        return result(new AuditStore(database.pool()).list(TENANT, 0, 1000));
    }

    /** The chat's compaction summary, or null while it has none. */
    String summary(String chat) {
        return (String) value("SELECT summary FROM conversation_state s JOIN chats c ON c.id = s.chat_id "
                + "WHERE c.chat_key = $1", chat);
    }

    /** Waits until the chat has been compacted and returns its summary. */
    String awaitSummary(String chat) {
        Await.until("a summary", Duration.ofSeconds(10), () -> summary(chat) != null);
        return summary(chat);
    }

    /** A single value from the database. */
    Object value(String sql, Object... params) {
        var rows = result(database.pool().preparedQuery(sql).execute(Tuple.from(params)));
        return rows.size() == 0 ? null : rows.iterator().next().getValue(0);
    }
}
