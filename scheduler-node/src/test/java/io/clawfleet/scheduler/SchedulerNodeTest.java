package io.clawfleet.scheduler;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.schedule.TaskDefinition;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TaskRuns;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Scheduler nodes in this JVM (not clustered: schedulers coordinate through PostgreSQL only) on one
 * embedded database: firing at the rate of the task with two nodes racing, waking the chat's owner,
 * catching up after downtime. The separate-JVM cases (kill -9 mid-claim) are in deploy's SchedulerIT.
 */
class SchedulerNodeTest {

    private static final String TENANT = "acme";

    private Vertx client;
    private DbUrl db;
    private Database database;
    private TaskStore tasks;
    private InboxStore inbox;
    private final List<NodeRuntime> nodes = new ArrayList<>();
    private final Partitioner partitioner = new Partitioner(16);

    @BeforeEach
    void start() {
        client = Vertx.vertx();
        db = TestDatabases.freshMigrated(16);
        database = Database.connect(client, db, 4, 5_000);
        tasks = new TaskStore(database.pool());
        inbox = new InboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
    }

    @AfterEach
    void stop() {
        nodes.forEach(node -> result(node.stop(), Duration.ofSeconds(30)));
        result(database.close());
        result(client.close());
    }

    private NodeRuntime schedulerNode(String id) {
        NodeRuntime node = TestNodes.start(TestNodes.config("scheduler", Map.of("nodeId", id, "scheduler.tickMs", "100")), db,
                List.of(SchedulerRole::new));
        nodes.add(node);
        return node;
    }

    private long chat(String key) {
        return result(inbox.accept(TENANT, "api", key, partitioner.partitionOf(TENANT, "api", key), "hello", "alice", "user",
                "hello", null)).message().chatId();
    }

    private TaskStore.Task task(String id, long chatId, String type, String value, String missedPolicy) {
        TaskDefinition definition = TaskDefinition.of("ping " + id, null, type, value, null, "UTC", null, missedPolicy,
                Instant.now());
        return result(tasks.create(id, TENANT, chatId, definition, 1_000)).task();
    }

    private List<Row> rows(String sql, Object... params) {
        List<Row> out = new ArrayList<>();
        result(database.pool().preparedQuery(sql).execute(Tuple.from(params))).forEach(out::add);
        return out;
    }

    private List<Instant> dueTimes(String taskId) {
        return rows("SELECT due_at FROM task_runs WHERE task_id = $1 ORDER BY due_at", taskId).stream()
                .map(r -> r.getOffsetDateTime(0).toInstant()).toList();
    }

    @Test
    void twoSchedulerNodesFireIntervalTasksAtTheirRateAndEachDueTimeOnce() {
        // given two scheduler nodes and ten every-second tasks in five chats
        schedulerNode("s1");
        schedulerNode("s2");
        List<String> ids = new ArrayList<>();
        for (int t = 0; t < 10; t++) {
            ids.add(task("t-rate-" + t, chat("chat-" + t % 5), "interval", "1000", null).id());
        }
        // when they run for a few seconds
        Await.until("five firings of every task", Duration.ofSeconds(30),
                () -> ids.stream().allMatch(id -> dueTimes(id).size() >= 5));
        nodes.forEach(node -> result(node.stop(), Duration.ofSeconds(30)));
        nodes.clear();
        // then each task's due times are whole seconds apart, none repeated, and one is left out only where the
        // scheduler was behind (a stalled scheduler catches up with one firing), and each due time put exactly
        // one message into the chat
        for (String id : ids) {
            List<Instant> due = dueTimes(id);
            TaskRuns.assertOnGridAndFoldedOnlyWhenBehind(database.pool(), id, Duration.ofSeconds(1), Duration.ofMillis(100));
            List<Row> messages = rows("SELECT count(*), count(DISTINCT idempotency_key) FROM inbox WHERE sender_id = $1",
                    "task:" + id);
            assertThat(messages.get(0).getLong(0)).as(id).isEqualTo(due.size());
            assertThat(messages.get(0).getLong(1)).as(id).isEqualTo(due.size());
        }
    }

    @Test
    void aFiringWakesTheOwnerOfItsChat() throws Exception {
        // given a scheduler node and someone listening on the chat's partition
        NodeRuntime node = schedulerNode("s1");
        long chat = chat("wake");
        CompletableFuture<WakeUp> woken = new CompletableFuture<>();
        result(node.vertx().eventBus().<WakeUp>consumer(Addresses.partitionWake(partitioner.partitionOf(TENANT, "api", "wake")),
                message -> woken.complete(message.body())).completion());
        // when a one-shot task comes due
        TaskStore.Task task = task("t-wake", chat, "once", Instant.now().plusMillis(800).toString(), null);
        // then its message arrives as a wake-up, and the task is done
        WakeUp wakeUp = woken.get(30, TimeUnit.SECONDS);
        assertThat(wakeUp.message().kind()).isEqualTo("task");
        assertThat(wakeUp.message().text()).isEqualTo("ping t-wake");
        Await.until("the once task done", Duration.ofSeconds(10),
                () -> "done".equals(result(tasks.get(BotRef.main(TENANT), task.id())).orElseThrow().status()));
    }

    @Test
    void aSchedulerStartingAfterDowntimeAppliesEachTasksMissedPolicy() {
        // given two every-minute tasks that were due an hour ago while no scheduler ran
        long chat = chat("late");
        TaskStore.Task catchUp = task("t-catch-up", chat, "interval", "60000", "fire_once");
        TaskStore.Task skip = task("t-skip", chat, "interval", "60000", "skip");
        rows("UPDATE tasks SET next_run_at = now() - interval '1 hour' WHERE tenant_id = $1", TENANT);
        // when a scheduler starts
        schedulerNode("s1");
        Await.until("both tasks dealt with", Duration.ofSeconds(30),
                () -> dueTimes(catchUp.id()).size() == 1 && dueTimes(skip.id()).size() == 1);
        // then the fire_once task fired once, the skip task recorded a skipped run, and both wait for the future
        assertThat(result(tasks.runs(BotRef.main(TENANT), catchUp.id(), 10))).singleElement()
                .satisfies(run -> assertThat(run.status()).isEqualTo("pending"));
        assertThat(result(tasks.runs(BotRef.main(TENANT), skip.id(), 10))).singleElement()
                .satisfies(run -> assertThat(run.status()).isEqualTo("skipped"));
        assertThat(rows("SELECT sender_id FROM inbox WHERE kind = 'task'")).extracting(r -> r.getString(0))
                .containsExactly("task:t-catch-up");
        for (TaskStore.Task task : List.of(catchUp, skip)) {
            assertThat(result(tasks.get(BotRef.main(TENANT), task.id())).orElseThrow().nextRunAt()).isAfter(Instant.now());
        }
    }

    @Test
    void aChatHeldByALongTransactionHoldsUpOnlyItsOwnFiring() {
        // given one scheduler, and two one-shot tasks: the earlier in a chat whose row a long transaction holds
        long held = chat("held");
        long free = chat("free");
        TaskStore.Task first = task("t-held", held, "once", Instant.now().plusMillis(300).toString(), null);
        TaskStore.Task second = task("t-free", free, "once", Instant.now().plusMillis(600).toString(), null);
        SqlConnection holder = result(database.pool().getConnection());
        Transaction holding = result(holder.begin());
        result(holder.preparedQuery("SELECT 1 FROM chats WHERE id = $1 FOR UPDATE").execute(Tuple.of(held)));
        schedulerNode("s1");
        // when the scheduler's claim of the first waits for that row past its lock timeout
        // then the other task fires all the same, while nothing of the first is stored
        Await.until("the free chat's task fired", Duration.ofSeconds(30), () -> dueTimes(second.id()).size() == 1);
        assertThat(dueTimes(first.id())).isEmpty();
        assertThat(rows("SELECT 1 FROM inbox WHERE sender_id = $1", "task:" + first.id())).isEmpty();
        // and once the row is free, the held task fires once
        result(holding.rollback());
        result(holder.close());
        Await.until("the held chat's task fired", Duration.ofSeconds(60), () -> dueTimes(first.id()).size() == 1);
        assertThat(rows("SELECT 1 FROM inbox WHERE sender_id = $1", "task:" + first.id())).hasSize(1);
        assertThat(rows("SELECT 1 FROM inbox WHERE sender_id = $1", "task:" + second.id())).hasSize(1);
    }
}
