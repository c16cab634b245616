package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.schedule.FiringRules;
import io.clawfleet.shared.schedule.TaskDefinition;
import io.clawfleet.shared.store.TaskFiringStore.Fired;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tasks in PostgreSQL: definition, pause/resume/delete, and the claim that fires each due time
 * exactly once however many schedulers race for it, also when one dies mid-claim. Time is given to
 * the firing store, so "an hour later" takes no hour.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TaskStoreTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();
    private static final Instant NOW = Instant.parse("2026-11-22T10:00:00Z");
    private static final FiringRules RULES = new FiringRules(Duration.ofSeconds(60), Duration.ofSeconds(1), 8_000);

    private Vertx vertx;
    private Vertx otherNode;
    private DbUrl url;
    private Database database;
    private Database otherDatabase;
    private TaskStore tasks;
    private TaskFiringStore scheduler;
    private TaskFiringStore otherScheduler;
    private InboxStore inbox;
    private String tenant;
    private final Partitioner partitioner = new Partitioner(16);

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        otherNode = Vertx.vertx();
    }

    @AfterAll
    void stop() {
        result(vertx.close());
        result(otherNode.close());
    }

    /** A database per test: the scheduler fires whatever is due in the whole database, as in a cluster. */
    @BeforeEach
    void freshDatabase() {
        url = TestDatabases.freshMigrated(16);
        database = Database.connect(vertx, url, 8, 5_000);
        otherDatabase = Database.connect(otherNode, url, 8, 5_000);
        tasks = new TaskStore(database.pool());
        inbox = new InboxStore(database.pool());
        scheduler = new TaskFiringStore(database.pool(), RULES, 0, 100);
        otherScheduler = new TaskFiringStore(otherDatabase.pool(), RULES, 0, 100);
        tenant = "tasks" + TENANTS.incrementAndGet();
        result(new TenantStore(database.pool()).ensure(tenant, "Tenant " + tenant, "key-" + tenant + "-0123456789abcdef"));
    }

    @AfterEach
    void closeDatabase() {
        result(database.close());
        result(otherDatabase.close());
    }

    /** A chat that exists (it has sent a message, which is answered). */
    private long chat(String key) {
        return result(inbox.accept(tenant, "api", key, partitioner.partitionOf(tenant, "api", key), "hello", "alice", "user",
                "hello", null)).message().chatId();
    }

    private static TaskDefinition define(String type, String value) {
        return TaskDefinition.of("check the plants", null, type, value, null, "UTC", null, null, NOW);
    }

    private TaskStore.Task create(String id, long chatId, String type, String value) {
        return result(tasks.create(id, tenant, chatId, define(type, value), 1_000)).task();
    }

    /** Fires everything due at {@code now} with one scheduler, in order. */
    private List<Fired> fireAll(TaskFiringStore store, Instant now) {
        List<Fired> fired = new ArrayList<>();
        for (Optional<Fired> next = result(store.fireNext(now)); next.isPresent(); next = result(store.fireNext(now))) {
            fired.add(next.get());
        }
        return fired;
    }

    private List<Row> rows(String sql, Object... params) {
        List<Row> out = new ArrayList<>();
        result(database.pool().preparedQuery(sql).execute(Tuple.from(params))).forEach(out::add);
        return out;
    }

    private List<String> inboxKeys(long chatId) {
        return rows("SELECT idempotency_key FROM inbox WHERE chat_id = $1 AND kind = 'task' ORDER BY seq", chatId)
                .stream().map(r -> r.getString(0)).toList();
    }

    @Test
    void aTaskIsStoredOnceUnderItsId() {
        // given a task created by a turn / when the turn runs again and creates it again / then there is one task
        long chat = chat("alice");
        TaskStore.Created first = result(tasks.create("t-" + tenant + "-1", tenant, chat, define("interval", "60000"), 10));
        TaskStore.Created again = result(tasks.create("t-" + tenant + "-1", tenant, chat, define("interval", "60000"), 10));
        assertThat(first.created()).isTrue();
        assertThat(again.created()).isFalse();
        assertThat(result(tasks.list(BotRef.main(tenant), chat, null, 100))).hasSize(1);
        assertThat(first.task().nextRunAt()).isEqualTo(NOW.plusSeconds(60));
        assertThat(first.task().chatKey()).isEqualTo("alice");
    }

    @Test
    void aChatWithItsMostTasksGetsNoMoreButAnotherChatOfTheTenantDoes() {
        // given a chat with 2 tasks that are not done, and a limit of 2 per chat
        long alice = chat("alice");
        long bob = chat("bob");
        result(tasks.create("t-" + tenant + "-a", tenant, alice, define("interval", "60000"), 100, 2));
        result(tasks.create("t-" + tenant + "-b", tenant, alice, define("interval", "60000"), 100, 2));
        // when it asks for a third, then it is refused naming the chat's limit, and another chat is not
        Throwable refused = failure(tasks.create("t-" + tenant + "-c", tenant, alice, define("interval", "60000"), 100, 2));
        assertThat(refused).isInstanceOf(TaskLimitException.class).hasMessageContaining("this chat already has 2 tasks");
        assertThat(((TaskLimitException) refused).scope()).isEqualTo(TaskLimitException.Scope.CHAT);
        assertThat(result(tasks.create("t-" + tenant + "-d", tenant, bob, define("interval", "60000"), 100, 2)).created()).isTrue();
        // and a task that is done frees its place
        result(tasks.setStatus(BotRef.main(tenant), "t-" + tenant + "-a", "done"));
        assertThat(result(tasks.create("t-" + tenant + "-e", tenant, alice, define("interval", "60000"), 100, 2)).created()).isTrue();
    }

    @Test
    void concurrentCreationsCannotPassTheChatLimit() {
        // given a limit of 3 per chat / when 12 creations for one chat race from two nodes
        long chat = chat("alice");
        TaskStore other = new TaskStore(otherDatabase.pool());
        List<Future<TaskStore.Created>> racing = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            racing.add((i % 2 == 0 ? tasks : other).create("t-" + tenant + "-race-" + i, tenant, chat,
                    define("interval", "60000"), 1_000, 3));
        }
        Await.result(Future.join(racing).otherwiseEmpty());
        // then exactly 3 were stored, and every other one was refused by the chat's limit
        assertThat(racing.stream().filter(Future::succeeded).count()).isEqualTo(3);
        assertThat(racing.stream().filter(Future::failed).map(Future::cause))
                .hasSize(9).allSatisfy(e -> assertThat(e).isInstanceOf(TaskLimitException.class));
        assertThat(result(tasks.list(BotRef.main(tenant), chat, null, 100))).hasSize(3);
    }

    @Test
    void aTenantWithItsMostTasksGetsNoMore() {
        long chat = chat("alice");
        result(tasks.create("t-" + tenant + "-a", tenant, chat, define("interval", "60000"), 2));
        result(tasks.create("t-" + tenant + "-b", tenant, chat, define("interval", "60000"), 2));
        Throwable refused = failure(tasks.create("t-" + tenant + "-c", tenant, chat, define("interval", "60000"), 2));
        assertThat(refused).isInstanceOf(TaskLimitException.class).hasMessageContaining("2 tasks");
        assertThat(result(tasks.list(BotRef.main(tenant), null, null, 100))).hasSize(2);
    }

    @Test
    void aDueTaskEntersItsChatOnceAndMovesToItsNextTime() {
        // given an every-minute task
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-e", chat, "interval", "60000");
        // when the scheduler looks just before and just after it is due
        assertThat(result(scheduler.fireNext(NOW.plusSeconds(59)))).isEmpty();
        List<Fired> fired = fireAll(scheduler, NOW.plusSeconds(61));
        // then it fired once, into the chat's inbox, isolated from nothing (group), and is due a minute later
        assertThat(fired).hasSize(1);
        InboundMessage message = fired.get(0).message();
        assertThat(message.kind()).isEqualTo("task");
        assertThat(message.text()).isEqualTo("check the plants");
        assertThat(message.contextMode()).isEqualTo("group");
        assertThat(inboxKeys(chat)).containsExactly("task:" + task.id() + ":" + NOW.plusSeconds(60).toEpochMilli());
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plusSeconds(120));
        List<TaskStore.Run> runs = result(tasks.runs(BotRef.main(tenant), task.id(), 10));
        assertThat(runs).singleElement().satisfies(run -> {
            assertThat(run.status()).isEqualTo("pending");
            assertThat(run.inboxId()).isEqualTo(message.id());
            assertThat(run.dueAt()).isEqualTo(NOW.plusSeconds(60));
        });
    }

    /** Issue 13: a suspended tenant's tasks wait, and fire by their missed policy once it is resumed. */
    @Test
    void aSuspendedTenantsTasksDoNotFireUntilItIsResumed() {
        long chat = chat("alice");
        create("t-" + tenant + "-s", chat, "interval", "60000");
        TenantStore tenants = new TenantStore(database.pool());
        assertThat(result(tenants.update(tenant, null, "suspended"))).isPresent();
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).isEmpty();
        assertThat(inboxKeys(chat)).isEmpty();
        result(tenants.update(tenant, null, "active"));
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).hasSize(1);
    }

    /** Issue 13: the tasks of a bot being deleted stop firing at once; other bots' tasks fire on. */
    @Test
    void aBotBeingDeletedHasItsTasksNoLongerFired() {
        BotRef support = new BotRef(tenant, "support");
        assertThat(result(new BotStore(database.pool()).create(tenant, "support", "Support", new io.vertx.core.json.JsonObject())))
                .isPresent();
        long supportChat = result(inbox.accept(new InboxStore.Intake(tenant, "support", "api", "bob",
                partitioner.partitionOf(support, "api", "bob"), "hello", "bob", "user", "hello", null, 0, null, null)))
                .message().chatId();
        long mainChat = chat("alice");
        create("t-" + tenant + "-bot", supportChat, "interval", "60000");
        create("t-" + tenant + "-main", mainChat, "interval", "60000");
        assertThat(result(new TenantDeletionStore(database.pool()).requestBot(support, "test"))).isPresent();
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).hasSize(1);
        assertThat(inboxKeys(supportChat)).isEmpty();
        assertThat(inboxKeys(mainChat)).hasSize(1);
    }

    @Test
    void aOnceTaskIsDoneAfterItFires() {
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-o", chat, "once", "2026-11-22T10:05:00Z");
        assertThat(fireAll(scheduler, NOW.plus(Duration.ofMinutes(6)))).hasSize(1);
        TaskStore.Task after = result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow();
        assertThat(after.status()).isEqualTo("done");
        assertThat(after.nextRunAt()).isNull();
        assertThat(fireAll(scheduler, NOW.plus(Duration.ofDays(1)))).isEmpty();
    }

    @Test
    void twoSchedulersRacingFireEachDueTimeExactlyOnce() {
        // given 40 every-minute tasks in 8 chats
        List<Long> chats = new ArrayList<>();
        for (int c = 0; c < 8; c++) {
            chats.add(chat("racer-" + c));
        }
        for (int t = 0; t < 40; t++) {
            create("t-" + tenant + "-r" + t, chats.get(t % 8), "interval", "60000");
        }
        // when two schedulers (own pools, own event loops) fire concurrently through three due times
        AtomicInteger firstCount = new AtomicInteger();
        AtomicInteger secondCount = new AtomicInteger();
        for (int minute = 1; minute <= 3; minute++) {
            Instant now = NOW.plus(Duration.ofMinutes(minute)).plusSeconds(1);
            Future<Void> a = drain(scheduler, now, firstCount);
            Future<Void> b = drain(otherScheduler, now, secondCount);
            result(Future.all(a, b), Duration.ofSeconds(60));
        }
        // then every task has exactly one message and one run per due time, and nothing more
        assertThat(firstCount.get() + secondCount.get()).as("fired by %s and %s", firstCount, secondCount).isEqualTo(120);
        List<Row> perTask = rows("""
                SELECT count(*) AS runs, count(DISTINCT due_at) AS dues FROM task_runs WHERE tenant_id = $1 GROUP BY task_id""", tenant);
        assertThat(perTask).hasSize(40).allSatisfy(r -> {
            assertThat(r.getLong("runs")).isEqualTo(3);
            assertThat(r.getLong("dues")).isEqualTo(3);
        });
        List<Row> messages = rows("SELECT count(*), count(DISTINCT idempotency_key) FROM inbox WHERE tenant_id = $1 AND kind = 'task'",
                tenant);
        assertThat(messages.get(0).getLong(0)).isEqualTo(120);
        assertThat(messages.get(0).getLong(1)).isEqualTo(120);
    }

    /** Fires until nothing is due, one claim at a time, on the store's own event loop. */
    private static Future<Void> drain(TaskFiringStore store, Instant now, AtomicInteger count) {
        return store.fireNext(now).compose(fired -> {
            if (fired.isEmpty()) {
                return Future.succeededFuture();
            }
            count.incrementAndGet();
            return drain(store, now, count);
        });
    }

    @Test
    void aSchedulerKilledMidClaimLosesNoFiring() throws Exception {
        // given a due task whose chat row is held by someone else, so the claim stops half-way
        long chat = chat("held");
        TaskStore.Task task = create("t-" + tenant + "-k", chat, "interval", "60000");
        SqlConnection holder = result(database.pool().getConnection());
        Transaction holding = result(holder.begin());
        result(holder.preparedQuery("SELECT 1 FROM chats WHERE id = $1 FOR UPDATE").execute(Tuple.of(chat)));
        Future<Optional<Fired>> claim = otherScheduler.fireNext(NOW.plusSeconds(61));
        int backend = awaitBackendWaitingToIntake();
        // when that scheduler's connection dies mid-transaction (as with kill -9), and the chat is free again
        result(database.pool().preparedQuery("SELECT pg_terminate_backend($1)").execute(Tuple.of(backend)));
        assertThat(failure(claim)).isNotNull();
        result(holding.rollback());
        result(holder.close());
        // then nothing of the claim is left, and another scheduler fires the due time, once
        assertThat(inboxKeys(chat)).isEmpty();
        assertThat(result(tasks.runs(BotRef.main(tenant), task.id(), 10))).isEmpty();
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).hasSize(1);
        assertThat(fireAll(otherScheduler, NOW.plusSeconds(61))).isEmpty();
        assertThat(inboxKeys(chat)).containsExactly("task:" + task.id() + ":" + NOW.plusSeconds(60).toEpochMilli());
    }

    private int awaitBackendWaitingToIntake() {
        int[] pid = {0};
        Await.until("a claim waiting for the chat row", Duration.ofSeconds(10), () -> {
            List<Row> waiting = rows("""
                    SELECT pid FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO chats%'""");
            pid[0] = waiting.isEmpty() ? 0 : waiting.get(0).getInteger(0);
            return pid[0] != 0;
        });
        return pid[0];
    }

    @Test
    void afterDowntimeFireOnceCatchesUpWithOneFiring() {
        // given an every-minute task and an hour without schedulers
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-c", chat, "interval", "60000");
        Instant later = NOW.plus(Duration.ofMinutes(61)).plusSeconds(30);
        // when a scheduler comes back / then the missed hour fires once, and the task goes on in the future
        assertThat(fireAll(scheduler, later)).hasSize(1);
        assertThat(inboxKeys(chat)).hasSize(1);
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plus(Duration.ofMinutes(62)));
    }

    @Test
    void aStalledEverySecondTaskCatchesUpWithOneFiringNotABurst() {
        // given an every-second task and a scheduler that stalled for 59 s (less than the 60 s tolerance)
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-burst", chat, "interval", "1000");
        Instant later = NOW.plusSeconds(59).plusMillis(500);
        // when it looks again / then the 58 due times that passed more than a tick ago enter the chat as one
        // firing, the one that came due within the tick as another, and the task goes on at the next second
        assertThat(fireAll(scheduler, later)).extracting(fired -> fired.task().dueAt())
                .containsExactly(NOW.plusSeconds(1), NOW.plusSeconds(59));
        assertThat(inboxKeys(chat)).hasSize(2);
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plusSeconds(60));
    }

    @Test
    void afterDowntimeSkipRecordsASkippedRunAndFiresNothing() {
        long chat = chat("alice");
        TaskDefinition skip = TaskDefinition.of("check", null, "interval", "60000", null, "UTC", null, "skip", NOW);
        TaskStore.Task task = result(tasks.create("t-" + tenant + "-s", tenant, chat, skip, 10)).task();
        List<Fired> fired = fireAll(scheduler, NOW.plus(Duration.ofMinutes(61)).plusSeconds(30));
        assertThat(fired).singleElement().satisfies(f -> assertThat(f.runStatus()).isEqualTo("skipped"));
        assertThat(inboxKeys(chat)).isEmpty();
        assertThat(result(tasks.runs(BotRef.main(tenant), task.id(), 10))).singleElement()
                .satisfies(run -> assertThat(run.error()).contains("missed"));
    }

    @Test
    void aPausedTaskDoesNotFireAndOnResumeItsMissedTimeFollowsItsPolicy() {
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-p", chat, "interval", "60000");
        assertThat(result(tasks.setStatus(BotRef.main(tenant), task.id(), "paused")).orElseThrow().status()).isEqualTo("paused");
        assertThat(fireAll(scheduler, NOW.plus(Duration.ofMinutes(10)))).isEmpty();
        result(tasks.setStatus(BotRef.main(tenant), task.id(), "active"));
        assertThat(fireAll(scheduler, NOW.plus(Duration.ofMinutes(10)).plusSeconds(30))).hasSize(1);
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plus(Duration.ofMinutes(11)));
    }

    @Test
    void aDoneTaskCannotBeResumedAndAnUnknownOneIsNotFound() {
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-d", chat, "interval", "60000");
        assertThat(result(tasks.setStatus(BotRef.main(tenant), task.id(), "done")).orElseThrow().nextRunAt()).isNull();
        assertThat(failure(tasks.setStatus(BotRef.main(tenant), task.id(), "active"))).isInstanceOf(TaskStateException.class);
        assertThat(result(tasks.setStatus(BotRef.main(tenant), "t-nope", "paused"))).isEmpty();
        assertThat(result(tasks.setStatus(BotRef.main("someone-else"), task.id(), "paused"))).isEmpty();
    }

    @Test
    void deletingATaskRemovesItsRuns() {
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-x", chat, "interval", "60000");
        fireAll(scheduler, NOW.plusSeconds(61));
        assertThat(result(tasks.delete(BotRef.main(tenant), task.id()))).isTrue();
        assertThat(result(tasks.delete(BotRef.main(tenant), task.id()))).isFalse();
        assertThat(rows("SELECT 1 FROM task_runs WHERE task_id = $1", task.id())).isEmpty();
    }

    @Test
    void aFiringIntoAChatWithAFullBacklogIsSkippedAndTheTaskGoesOn() {
        // given a chat with one unanswered message, and a scheduler that allows one
        long chat = chat("busy");
        TaskStore.Task task = create("t-" + tenant + "-b", chat, "interval", "60000");
        TaskFiringStore strict = new TaskFiringStore(database.pool(), RULES, 1, 100);
        // when the task is due / then its run is skipped with the reason, and it is due again later
        assertThat(fireAll(strict, NOW.plusSeconds(61))).singleElement()
                .satisfies(f -> assertThat(f.runStatus()).isEqualTo("skipped"));
        assertThat(result(tasks.runs(BotRef.main(tenant), task.id(), 10))).singleElement()
                .satisfies(run -> assertThat(run.error()).contains("unanswered"));
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plusSeconds(120));
    }

    @Test
    void aTenantOverItsTokenQuotaHasItsFiringsSkippedUntilItIsWithinItAgain() {
        // given a tenant whose turns used 120 model tokens today against a daily quota of 100
        long chat = chat("quota");
        TaskStore.Task task = create("t-" + tenant + "-q", chat, "interval", "60000");
        rows("UPDATE tenants SET limits = '{\"tokensPerDay\": 100}' WHERE id = $1", tenant);
        rows("INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens) VALUES ($1, $2, 'm', 80, 40)",
                tenant, chat);
        int before = inboxKeys(chat).size();
        // when the task is due / then its run is skipped naming the quota, nothing enters the chat, and it goes on
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).singleElement()
                .satisfies(f -> assertThat(f.runStatus()).isEqualTo("skipped"));
        assertThat(result(tasks.runs(BotRef.main(tenant), task.id(), 10))).singleElement()
                .satisfies(run -> assertThat(run.error()).contains("'tokensPerDay' is 100", "120 model tokens", "skipped"));
        assertThat(inboxKeys(chat)).hasSize(before);
        assertThat(result(tasks.get(BotRef.main(tenant), task.id())).orElseThrow().nextRunAt()).isEqualTo(NOW.plusSeconds(120));
        // when the operator raises the quota / then the next due time fires into the chat
        rows("UPDATE tenants SET limits = '{\"tokensPerDay\": 1000}' WHERE id = $1", tenant);
        assertThat(fireAll(scheduler, NOW.plusSeconds(121))).singleElement()
                .satisfies(f -> assertThat(f.runStatus()).isEqualTo("pending"));
        assertThat(inboxKeys(chat)).hasSize(before + 1);
    }

    @Test
    void theTurnThatAnswersAFiringFinishesItsRun() {
        // given a fired task and the worker owning the chat's partition
        long chat = chat("answered");
        TaskStore.Task task = create("t-" + tenant + "-f", chat, "interval", "60000");
        InboundMessage firing = fireAll(scheduler, NOW.plusSeconds(61)).get(0).message();
        int partition = firing.partition();
        long epoch = result(new LeaseStore(database.pool()).claim("w-" + tenant, Set.of(partition), 60_000, Set.of())).get(partition);
        Fence fence = new Fence(partition, "w-" + tenant, epoch);
        ConversationStore conversations = new ConversationStore(database.pool());
        InboundMessage hello = result(inbox.pendingInChat(chat, 0, 10)).get(0);
        result(conversations.commitTurn(fence, hello, List.of(), "hi", null));
        // when its turn commits / then the run is a success with a preview of the answer and a duration
        result(conversations.commitTurn(fence, firing, List.of(), "The plants are fine. " + "x".repeat(300), null));
        TaskStore.Run run = result(tasks.runs(BotRef.main(tenant), task.id(), 10)).get(0);
        assertThat(run.status()).isEqualTo("success");
        assertThat(run.resultPreview()).startsWith("The plants are fine.").hasSize(200);
        assertThat(run.durationMs()).isNotNull().isNotNegative();
        // and a failed turn marks its run as an error, with the error
        InboundMessage second = fireAll(scheduler, NOW.plusSeconds(121)).get(0).message();
        result(conversations.commitTurn(fence, second, List.of(), "Sorry, that failed.", "model unavailable"));
        TaskStore.Run failed = result(tasks.runs(BotRef.main(tenant), task.id(), 10)).get(0);
        assertThat(failed.status()).isEqualTo("error");
        assertThat(failed.error()).isEqualTo("model unavailable");
    }

    @Test
    void aHeartbeatFiresOnlyWhenItsChecklistHasSomethingToDo() {
        // given a heartbeat task and no HEARTBEAT.md
        long chat = chat("owner");
        TaskDefinition beat = TaskDefinition.of(null, "heartbeat", "interval", "60000", null, "UTC", null, null, NOW);
        TaskStore.Task task = result(tasks.create("t-" + tenant + "-h", tenant, chat, beat, 10)).task();
        // when it is due / then it is skipped
        assertThat(fireAll(scheduler, NOW.plusSeconds(61))).singleElement()
                .satisfies(f -> assertThat(f.runStatus()).isEqualTo("skipped"));
        // given a checklist with an item / when due again / then the bot is asked, isolated, with the checklist
        result(new WorkspaceStore(database.pool()).write(BotRef.main(tenant), "HEARTBEAT.md", "# Checks\n- [ ] water the basil\n"));
        InboundMessage message = fireAll(scheduler, NOW.plusSeconds(121)).get(0).message();
        assertThat(message.text()).contains("water the basil").contains("HEARTBEAT.md");
        assertThat(message.contextMode()).isEqualTo("isolated");
        assertThat(result(tasks.runs(BotRef.main(tenant), task.id(), 10))).extracting(TaskStore.Run::status).containsExactly("pending", "skipped");
    }

    @Test
    void onlyTheNewestFinishedRunsOfATaskAreKept() {
        long chat = chat("alice");
        TaskStore.Task task = create("t-" + tenant + "-k", chat, "interval", "60000");
        TaskFiringStore keepingThree = new TaskFiringStore(database.pool(), RULES, 1, 3);
        for (int minute = 1; minute <= 6; minute++) {
            fireAll(keepingThree, NOW.plus(Duration.ofMinutes(minute)).plusSeconds(1));
        }
        List<TaskStore.Run> runs = result(tasks.runs(BotRef.main(tenant), task.id(), 10));
        assertThat(runs.size()).isBetween(3, 4);
        assertThat(runs.get(0).dueAt()).isEqualTo(NOW.plus(Duration.ofMinutes(6)).truncatedTo(ChronoUnit.MILLIS));
    }
}
