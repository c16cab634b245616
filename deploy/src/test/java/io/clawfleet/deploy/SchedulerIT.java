package io.clawfleet.deploy;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TaskRuns;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Scheduled tasks on a real cluster of separate JVMs: one gateway+worker node and two scheduler
 * nodes, on embedded PostgreSQL, with the mock model. A new user schedules a one-shot, an interval
 * and a cron task in a time zone through the chat and gets each firing once, on time; a load of
 * interval tasks is fired by both schedulers racing, each due time exactly once; a scheduler killed
 * with kill -9 in the middle of a claim loses no firing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class SchedulerIT {

    private static final ZoneId KATHMANDU = ZoneId.of("Asia/Kathmandu");
    private static final Duration TICK = Duration.ofMillis(200);

    private Vertx vertx;
    private ClusterHarness cluster;
    private Database database;
    private ClusterHarness.Node app;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 5);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 3)
                .env("CLAWFLEET_AGENT_AUTONOMY", "full")
                .env("CLAWFLEET_SCHEDULER_TICK_MS", Long.toString(TICK.toMillis()))
                // The test's tasks fire every second; tenants get at least a minute by default.
                .env("CLAWFLEET_SCHEDULER_MIN_INTERVAL_MS", "1000");
        app = cluster.start("app-1", "gateway,worker");
        cluster.start("scheduler-1", "scheduler");
        cluster.start("scheduler-2", "scheduler");
        cluster.awaitReady(Duration.ofSeconds(120));
        database = Database.connect(vertx, db, 2, 5_000);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (database != null) {
            result(database.close());
        }
        result(vertx.close());
    }

    @Test
    @Order(1)
    void aNewUserSchedulesOneShotIntervalAndCronTasksThroughTheChatAndEachFiresOnTime() throws Exception {
        String chat = "newcomer";
        Instant onceAt = Instant.now().plusSeconds(20).truncatedTo(ChronoUnit.SECONDS);
        ZonedDateTime cronAt = ZonedDateTime.now(KATHMANDU).plusSeconds(25).truncatedTo(ChronoUnit.SECONDS);
        String cron = cronAt.getSecond() + " " + cronAt.getMinute() + " " + cronAt.getHour() + " * * *";
        // when the user asks, in the chat, for a one-shot, an every-3-seconds and a daily Kathmandu-time task
        say(chat, "m-1", "call:tasks_schedule {\"prompt\":\"one-shot reminder\",\"schedule_type\":\"once\","
                + "\"schedule_value\":\"" + onceAt.atOffset(java.time.ZoneOffset.ofHours(1)) + "\"}");
        say(chat, "m-2", "call:tasks_schedule {\"prompt\":\"interval ping\",\"schedule_type\":\"interval\","
                + "\"schedule_value\":\"3000\"}");
        say(chat, "m-3", "call:tasks_schedule {\"prompt\":\"cron in Kathmandu\",\"schedule_type\":\"cron\","
                + "\"schedule_value\":\"" + cron + "\",\"time_zone\":\"Asia/Kathmandu\",\"context_mode\":\"isolated\"}");
        Await.until("three tasks confirmed", Duration.ofSeconds(60), () -> replies(chat, 0).stream()
                .filter(text -> text.startsWith("tool tasks_schedule said: Scheduled t-")).count() == 3);
        // then the chat gets the one-shot once, the cron once, and interval pings, as replies like any other
        Await.until("the cron task's reply", Duration.ofSeconds(90), () -> count(replies(chat, 0), "echo: cron in Kathmandu") == 1);
        Await.until("four interval pings", Duration.ofSeconds(60), () -> count(replies(chat, 0), "echo: interval ping") >= 4);
        assertThat(count(replies(chat, 0), "echo: one-shot reminder")).isEqualTo(1);
        // and each fired at its due time, once
        assertThat(dueTimes("one-shot reminder")).containsExactly(onceAt);
        assertThat(dueTimes("cron in Kathmandu")).containsExactly(cronAt.toInstant());
        dueTimes("interval ping");
        TaskRuns.assertOnGridAndFoldedOnlyWhenBehind(database.pool(), task("interval ping").getString("id"),
                Duration.ofSeconds(3), TICK);
        JsonObject cronTask = task("cron in Kathmandu");
        assertThat(Instant.parse(cronTask.getString("nextRunAt"))).isEqualTo(cronAt.plusDays(1).toInstant());
        assertThat(task("one-shot reminder").getString("status")).isEqualTo("done");
        Await.until("the cron run recorded as a success", Duration.ofSeconds(30), () -> "success".equals(
                runs(cronTask.getString("id")).getJsonObject(0).getString("status")));
        assertThat(runs(cronTask.getString("id")).getJsonObject(0).getString("resultPreview")).isEqualTo("echo: cron in Kathmandu");
    }

    @Test
    @Order(2)
    void twoSchedulerJvmsRacingFireEachDueTimeExactlyOnce() throws Exception {
        // given 30 every-second tasks in 10 chats
        List<String> ids = new ArrayList<>();
        for (int c = 0; c < 10; c++) {
            say("load-" + c, "hello", "hello");
        }
        for (int t = 0; t < 30; t++) {
            JsonObject body = new JsonObject().put("chatId", "load-" + t % 10).put("prompt", "load " + t)
                    .put("scheduleType", "interval").put("scheduleValue", "1000");
            HttpResponse<String> created = post("/api/v1/tasks", body);
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            ids.add(new JsonObject(created.body()).getString("id"));
        }
        // when both scheduler JVMs fire them for a while
        Await.until("eight firings of every task", Duration.ofSeconds(90), () -> ids.stream().allMatch(id -> runCount(id) >= 8));
        ids.forEach(id -> send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "paused")));
        // then both took part, and every task's due times are a second apart (or folded where a scheduler was
        // behind), each with exactly one message
        assertThat(metric(cluster.node("scheduler-1"), "clawfleet_scheduler_firings_total")).isPositive();
        assertThat(metric(cluster.node("scheduler-2"), "clawfleet_scheduler_firings_total")).isPositive();
        List<Row> perTask = rows("""
                SELECT r.task_id, count(*) AS runs, count(DISTINCT r.due_at) AS dues,
                       (SELECT count(*) FROM inbox i WHERE i.sender_id = 'task:' || r.task_id) AS messages
                  FROM task_runs r WHERE r.task_id = ANY($1) GROUP BY r.task_id""", (Object) ids.toArray(String[]::new));
        assertThat(perTask).hasSize(30).allSatisfy(task -> {
            long runs = task.getLong("runs");
            assertThat(task.getLong("dues")).isEqualTo(runs);
            assertThat(task.getLong("messages")).isEqualTo(runs);
            TaskRuns.assertOnGridAndFoldedOnlyWhenBehind(database.pool(), task.getString("task_id"), Duration.ofSeconds(1), TICK);
        });
    }

    @Test
    @Order(3)
    void aSchedulerKilledMidClaimLosesNoFiring() throws Exception {
        // given one scheduler left running, and a one-shot task in a chat whose row someone else holds
        cluster.stop("scheduler-2");
        say("held", "hello", "hello");
        replies("held", 1);
        HttpResponse<String> created = post("/api/v1/tasks", new JsonObject().put("chatId", "held").put("prompt", "held reminder")
                .put("scheduleType", "once").put("scheduleValue", Instant.now().plusSeconds(3).toString()));
        String taskId = new JsonObject(created.body()).getString("id");
        SqlConnection holder = result(database.pool().getConnection());
        Transaction holding = result(holder.begin());
        result(holder.preparedQuery("SELECT 1 FROM chats WHERE chat_key = 'held' FOR UPDATE").execute());
        // when the scheduler's claim stops half-way, waiting for that row, and the scheduler is killed
        int backend = awaitClaimWaitingForTheChat();
        cluster.kill("scheduler-1");
        result(holding.rollback());
        result(holder.close());
        Await.until("the killed scheduler's transaction to end", Duration.ofSeconds(30),
                () -> rows("SELECT 1 FROM pg_stat_activity WHERE pid = $1", backend).isEmpty());
        // then nothing of its claim is left
        assertThat(runs(taskId)).isEmpty();
        assertThat(rows("SELECT 1 FROM inbox WHERE sender_id = $1", "task:" + taskId)).isEmpty();
        // and the other scheduler, started again, fires it once, and the chat gets the reply once
        cluster.restart("scheduler-2");
        cluster.awaitReady(Duration.ofSeconds(90));
        Await.until("the held reminder's reply", Duration.ofSeconds(60), () -> count(replies("held", 0), "echo: held reminder") == 1);
        assertThat(rows("SELECT 1 FROM inbox WHERE sender_id = $1", "task:" + taskId)).hasSize(1);
        Await.until("the run recorded as a success", Duration.ofSeconds(30),
                () -> "success".equals(runs(taskId).getJsonObject(0).getString("status")));
        assertThat(runs(taskId)).hasSize(1);
        assertThat(count(replies("held", 0), "echo: held reminder")).isEqualTo(1);
    }

    private int awaitClaimWaitingForTheChat() {
        int[] pid = {0};
        Await.until("a claim waiting for the chat row", Duration.ofSeconds(60), () -> {
            List<Row> waiting = rows("""
                    SELECT pid FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO chats%'""");
            pid[0] = waiting.isEmpty() ? 0 : waiting.get(0).getInteger(0);
            return pid[0] != 0;
        });
        return pid[0];
    }

    private long runCount(String taskId) {
        return rows("SELECT count(*) FROM task_runs WHERE task_id = $1", taskId).get(0).getLong(0);
    }

    // ---- helpers -------------------------------------------------------------------------------

    private void say(String chat, String messageId, String text) throws Exception {
        HttpResponse<String> response = post("/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "user")
                .put("messageId", messageId).put("text", text));
        assertThat(response.statusCode()).as(response.body()).isIn(200, 202);
    }

    private HttpResponse<String> post(String path, JsonObject body) throws Exception {
        return http.send(request(path).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> send(String method, String path, JsonObject body) {
        try {
            HttpRequest.Builder request = request(path).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body.encode()));
            if (body != null) {
                request.header("content-type", "application/json");
            }
            return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(app.url() + path)).timeout(Duration.ofSeconds(30))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY);
    }

    /** The chat's replies so far, waiting until there are at least {@code count}. */
    private List<String> replies(String chat, int count) {
        List<String> texts = new ArrayList<>();
        Await.until(count + " replies in " + chat, Duration.ofSeconds(60), () -> {
            texts.clear();
            new JsonObject(send("GET", "/api/v1/chats/" + chat + "/replies?after=0&limit=500", null).body())
                    .getJsonArray("replies").forEach(r -> texts.add(((JsonObject) r).getString("text")));
            return texts.size() >= count;
        });
        return texts;
    }

    private static long count(List<String> texts, String text) {
        return texts.stream().filter(text::equals).count();
    }

    private JsonObject task(String prompt) {
        JsonArray tasks = new JsonObject(send("GET", "/api/v1/tasks?limit=1000", null).body()).getJsonArray("tasks");
        return tasks.stream().map(JsonObject.class::cast).filter(t -> prompt.equals(t.getString("prompt"))).findFirst().orElseThrow();
    }

    private JsonArray runs(String taskId) {
        return new JsonObject(send("GET", "/api/v1/tasks/" + taskId + "/runs", null).body()).getJsonArray("runs");
    }

    /**
     * Due times of the task with this prompt, oldest first; each must have exactly one message in the inbox. Runs and
     * messages are read in one statement, so from one snapshot: an interval task keeps firing while the test reads, and
     * two reads could see one firing's message but not its run.
     */
    private List<Instant> dueTimes(String prompt) {
        String id = task(prompt).getString("id");
        List<Row> found = rows("""
                SELECT r.due_at, m.messages
                  FROM (SELECT count(*) AS messages FROM inbox WHERE sender_id = $2) m
                  LEFT JOIN task_runs r ON r.task_id = $1
                 ORDER BY r.due_at""", id, "task:" + id);
        List<Instant> due = found.stream().filter(r -> r.getValue(0) != null)
                .map(r -> r.getOffsetDateTime(0).toInstant()).toList();
        assertThat(found.get(0).getLong(1)).as("messages of " + prompt).isEqualTo(due.size());
        return due;
    }

    private List<Row> rows(String sql, Object... params) {
        List<Row> out = new ArrayList<>();
        result(database.pool().preparedQuery(sql).execute(Tuple.from(params))).forEach(out::add);
        return out;
    }

    private double metric(ClusterHarness.Node node, String name) {
        try {
            return Prometheus.sum(cluster.metrics(node), name);
        } catch (Exception e) {
            throw new AssertionError("cannot read " + name + " from " + node.url() + "/metrics (node alive: " + node.alive() + ")", e);
        }
    }
}
