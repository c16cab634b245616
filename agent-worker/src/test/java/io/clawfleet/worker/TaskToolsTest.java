package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.builtin.TaskTools;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The task tools through a real worker and the mock model's scripted calls: a chat schedules,
 * lists, pauses, resumes and deletes its own tasks; bad arguments are refused by field name and
 * store nothing; other chats' tasks are an admin's business only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TaskToolsTest {

    private static final String TENANT = "acme";
    private static final String BOOTSTRAP = "bootstrap-secret-42";

    private Vertx client;
    private MockLlmServer model;
    private NodeRuntime worker;
    private Database database;
    private InboxStore inbox;
    private OutboxStore outbox;
    private TaskStore tasks;
    private final Partitioner partitioner = new Partitioner(16);

    @BeforeAll
    void start() {
        client = Vertx.vertx();
        model = new MockLlmServer(client, 0);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        worker = TestNodes.start(TestNodes.config("worker", Map.of("agent.autonomy", "full",
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1",
                "llm.model", "mock", "nodeId", "w1", "adminBootstrapKey", BOOTSTRAP,
                "scheduler.maxTasksPerChat", "3")), db, List.of(WorkerRole::new));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        outbox = new OutboxStore(database.pool());
        tasks = new TaskStore(database.pool());
        TenantStore tenants = new TenantStore(database.pool());
        result(tenants.ensure(TENANT, "Acme", "acme-key-0123456789abcdef"));
        // as PUT /api/v1/settings {"timeZone":"Europe/Berlin"} does
        result(new BotStore(database.pool()).updateSettings(BotRef.main(TENANT), new JsonObject(), "Europe/Berlin"));
    }

    @AfterAll
    void stop() {
        result(worker.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    private static String chat(String prefix) {
        return prefix + "-" + UUID.randomUUID();
    }

    private void send(String chat, String text) {
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat),
                UUID.randomUUID().toString(), "alice", "user", text, null)).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
    }

    private String ask(String chat, String text) {
        int before = replies(chat, 0).size();
        send(chat, text);
        return replies(chat, before + 1).get(before);
    }

    private List<String> replies(String chat, int count) {
        List<String> texts = new ArrayList<>();
        Await.until(count + " replies in " + chat, Duration.ofSeconds(30), () -> {
            texts.clear();
            result(outbox.repliesAfter(BotRef.main(TENANT), "api", chat, 0, 100)).forEach(r -> texts.add(r.text()));
            return texts.size() >= count;
        });
        return texts;
    }

    private List<TaskStore.Task> tasksOf(String chat) {
        return result(tasks.list(BotRef.main(TENANT), null, null, 1_000)).stream().filter(t -> t.chatKey().equals(chat)).toList();
    }

    private static String schedule(String json) {
        return "call:tasks_schedule " + json;
    }

    @Test
    void aChatSchedulesACronTaskInItsTenantsZoneAndListsIt() {
        String chat = chat("cron");
        // when the chat schedules a weekday 09:00 reminder without a zone
        String reply = ask(chat, schedule("{\"prompt\":\"stand-up in 5 minutes\",\"schedule_type\":\"cron\","
                + "\"schedule_value\":\"55 8 * * 1-5\"}"));
        // then it is stored for this chat, in the tenant's zone, and the model is told its first local run
        assertThat(reply).startsWith("tool tasks_schedule said: Scheduled t-").contains("in Europe/Berlin")
                .containsPattern("next 20\\d\\d-\\d\\d-\\d\\dT08:55\\+0[12]:00");
        List<TaskStore.Task> stored = tasksOf(chat);
        assertThat(stored).singleElement().satisfies(task -> {
            assertThat(task.timeZone()).isEqualTo("Europe/Berlin");
            assertThat(task.contextMode()).isEqualTo("group");
            assertThat(task.status()).isEqualTo("active");
        });
        assertThat(ask(chat, "call:tasks_list {}")).contains(stored.get(0).id()).contains("stand-up in 5 minutes");
    }

    @Test
    void aChatPausesResumesFinishesAndDeletesItsTask() {
        String chat = chat("life");
        ask(chat, schedule("{\"prompt\":\"drink water\",\"schedule_type\":\"interval\",\"schedule_value\":\"3600000\","
                + "\"context_mode\":\"isolated\",\"missed_policy\":\"skip\"}"));
        String id = tasksOf(chat).get(0).id();
        assertThat(ask(chat, update(id, "paused"))).contains(id + ": paused");
        assertThat(ask(chat, update(id, "active"))).contains(id + ": active");
        assertThat(ask(chat, update(id, "done"))).contains(id + ": done").contains("no next run");
        assertThat(ask(chat, update(id, "active"))).contains("error (error)").contains("is done");
        assertThat(ask(chat, update(id, "deleted"))).contains("is deleted");
        assertThat(tasksOf(chat)).isEmpty();
    }

    private static String update(String id, String status) {
        return "call:tasks_update {\"task_id\":\"" + id + "\",\"status\":\"" + status + "\"}";
    }

    @Test
    void eachBadArgumentIsRefusedByNameAndNothingIsStored() {
        String chat = chat("bad");
        Map<String, String> cases = Map.of(
                "{\"prompt\":\"x\",\"schedule_type\":\"cron\",\"schedule_value\":\"61 * * * *\"}", "schedule_value",
                "{\"prompt\":\"x\",\"schedule_type\":\"cron\",\"schedule_value\":\"0 9 * * *\",\"time_zone\":\"Moon/Base\"}", "time_zone",
                "{\"prompt\":\"x\",\"schedule_type\":\"once\",\"schedule_value\":\"2001-01-01T00:00:00Z\"}", "schedule_value",
                "{\"prompt\":\"x\",\"schedule_type\":\"once\",\"schedule_value\":\"next friday\"}", "schedule_value",
                "{\"prompt\":\"x\",\"schedule_type\":\"interval\",\"schedule_value\":\"often\"}", "schedule_value",
                "{\"prompt\":\"x\",\"schedule_type\":\"interval\",\"schedule_value\":\"5000\"}", "scheduler.minIntervalMs",
                "{\"prompt\":\"x\",\"schedule_type\":\"weekly\",\"schedule_value\":\"1\"}", "schedule_type",
                "{\"schedule_type\":\"interval\",\"schedule_value\":\"60000\"}", "prompt",
                "{\"prompt\":\"x\",\"schedule_type\":\"interval\",\"schedule_value\":\"60000\",\"context_mode\":\"all\"}",
                "context_mode");
        cases.forEach((args, field) -> assertThat(ask(chat, schedule(args))).as(args)
                .contains("error (invalid_args)").contains(field));
        assertThat(tasksOf(chat)).isEmpty();
    }

    @Test
    void aNormalChatCannotTouchAnotherChatsTasksButAnAdminChatCan() {
        // given a task of one chat, another normal chat, and an admin chat
        String owner = chat("owner");
        ask(owner, schedule("{\"prompt\":\"report\",\"schedule_type\":\"interval\",\"schedule_value\":\"60000\"}"));
        String id = tasksOf(owner).get(0).id();
        String stranger = chat("stranger");
        String admin = chat("admin");
        ask(admin, "hello");
        // (the operator's grant: PUT /api/v1/chats/api/<chat>/role)
        assertThat(result(new ChatStore(database.pool()).setRole(BotRef.main(TENANT), "api", admin, "admin"))).isTrue();
        // then the normal chat is refused, neither seeing nor changing it
        assertThat(ask(stranger, update(id, "paused"))).contains("error (denied)").contains("another chat");
        assertThat(ask(stranger, "call:tasks_list {}")).contains("No scheduled tasks.");
        assertThat(ask(stranger, schedule("{\"prompt\":\"x\",\"schedule_type\":\"interval\",\"schedule_value\":\"60000\","
                + "\"chat_id\":\"" + owner + "\"}"))).contains("error (denied)");
        // and the admin chat lists every chat's tasks, pauses the task, and schedules one for the owner
        assertThat(ask(admin, "call:tasks_list {}")).contains(id);
        assertThat(ask(admin, update(id, "paused"))).contains(id + ": paused");
        assertThat(ask(admin, schedule("{\"prompt\":\"from the admin\",\"schedule_type\":\"interval\","
                + "\"schedule_value\":\"60000\",\"chat_id\":\"" + owner + "\"}"))).contains("[chat " + owner + "]");
        assertThat(tasksOf(owner)).hasSize(2);
    }

    @Test
    void aChatWithItsMostTasksIsToldSoAndGetsNoMore() {
        // given a chat with 3 tasks, the limit per chat
        String chat = chat("many");
        String every = "{\"prompt\":\"ping\",\"schedule_type\":\"interval\",\"schedule_value\":\"3600000\"}";
        for (int i = 0; i < 3; i++) {
            assertThat(ask(chat, schedule(every))).startsWith("tool tasks_schedule said: Scheduled t-");
        }
        // when the model schedules a fourth / then it is told why, and nothing is stored
        assertThat(ask(chat, schedule(every))).contains("error (error)").contains("this chat already has 3 tasks");
        assertThat(tasksOf(chat)).hasSize(3);
    }

    @Test
    void aHeartbeatNeedsNoScheduleOfItsOwn() {
        String chat = chat("beat");
        assertThat(ask(chat, schedule("{\"kind\":\"heartbeat\"}"))).contains("every 1800000 ms").contains("isolated context")
                .contains("heartbeat (HEARTBEAT.md)");
    }

    @Test
    void aTurnThatRunsAgainDoesNotCreateASecondTask() {
        // given the tool called twice with the same turn and call position (a turn re-run after a crash)
        String chat = chat("replay");
        send(chat, "hello");
        replies(chat, 1);
        long chatId = result(new ChatStore(database.pool()).find(BotRef.main(TENANT), "api", chat)).orElseThrow().id();
        Tool tool = new TaskTools(tasks, new ChatStore(database.pool()),
                ConfigLoader.load(null, Map.of(), Map.of()).scheduler()).tools().get(0);
        ToolCallContext ctx = new ToolCallContext(TENANT, "main", chatId, "api", chat, "alice", false, 4242, 0, null);
        JsonObject args = new JsonObject().put("prompt", "once only").put("schedule_type", "once")
                .put("schedule_value", Instant.now().plusSeconds(3600).toString());
        String first = result(tool.execute(ctx, args));
        String second = result(tool.execute(ctx, args));
        // then there is one task, and both calls report it
        assertThat(tasksOf(chat)).singleElement().satisfies(task -> assertThat(task.id()).isEqualTo("t-4242-0"));
        assertThat(second).isEqualTo(first);
    }
}
