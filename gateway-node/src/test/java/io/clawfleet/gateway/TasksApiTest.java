package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The tasks API over real HTTP, on embedded PostgreSQL, without a scheduler (nothing fires here). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TasksApiTest {

    private static final String KEY = "tasks-key-0123456789abcdef";
    private static final String OTHER_KEY = "other-tasks-key-0123456789abcdef";

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw-tasks",
                "scheduler.maxTasksPerTenant", "3", "scheduler.maxTasksPerChat", "2")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
        result(new TenantStore(database.pool()).ensure("other", "Other", OTHER_KEY));
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    private HttpResponse<String> send(String method, String path, String body, String key, String idempotencyKey) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .header("authorization", "Bearer " + key);
        if (body != null) {
            request.header("content-type", "application/json");
        }
        if (idempotencyKey != null) {
            request.header("idempotency-key", idempotencyKey);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> send(String method, String path, JsonObject body) throws Exception {
        return send(method, path, body == null ? null : body.encode(), KEY, null);
    }

    /** A chat of the default tenant (it exists once it has sent a message). */
    private String chat(String key) throws Exception {
        String chat = key + "-" + UUID.randomUUID();
        assertThat(send("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "alice")
                .put("messageId", "m-1").put("text", "hi")).statusCode()).isEqualTo(202);
        return chat;
    }

    private static JsonObject everyHour(String chat) {
        return new JsonObject().put("chatId", chat).put("prompt", "how is the build?").put("scheduleType", "interval")
                .put("scheduleValue", "3600000");
    }

    private static JsonObject body(HttpResponse<String> response) {
        return new JsonObject(response.body());
    }

    private JsonArray tasksOf(String chat) throws Exception {
        return body(send("GET", "/api/v1/tasks?chatId=" + chat, null)).getJsonArray("tasks");
    }

    @Test
    void aTaskIsCreatedReadListedPausedResumedAndDeleted() throws Exception {
        String chat = chat("life");
        // when a cron task is created in a zone
        HttpResponse<String> created = send("POST", "/api/v1/tasks", new JsonObject().put("chatId", chat)
                .put("prompt", "morning summary").put("scheduleType", "cron").put("scheduleValue", "0 30 7 * * 1-5")
                .put("timeZone", "asia/tokyo").put("contextMode", "isolated"));
        // then it is stored with its canonical zone and its next run at 07:30 in Tokyo
        assertThat(created.statusCode()).isEqualTo(201);
        JsonObject task = body(created);
        String id = task.getString("id");
        assertThat(task.getString("timeZone")).isEqualTo("Asia/Tokyo");
        assertThat(task.getString("status")).isEqualTo("active");
        assertThat(Instant.parse(task.getString("nextRunAt")).atZone(java.time.ZoneId.of("Asia/Tokyo")).toLocalTime())
                .hasToString("07:30");
        assertThat(body(send("GET", "/api/v1/tasks/" + id, null)).getString("prompt")).isEqualTo("morning summary");
        assertThat(tasksOf(chat)).hasSize(1);
        // and it is paused, resumed, and deleted
        assertThat(body(send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "paused"))).getString("status"))
                .isEqualTo("paused");
        assertThat(body(send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "active"))).getString("status"))
                .isEqualTo("active");
        assertThat(send("DELETE", "/api/v1/tasks/" + id, null).statusCode()).isEqualTo(204);
        assertThat(send("GET", "/api/v1/tasks/" + id, null).statusCode()).isEqualTo(404);
        assertThat(send("DELETE", "/api/v1/tasks/" + id, null).statusCode()).isEqualTo(404);
    }

    @Test
    void aCronTaskWithoutAZoneTakesTheZoneTheTenantSetAndOlderTasksKeepTheirs() throws Exception {
        // given a tenant of its own with a chat and a daily cron task made while it was in UTC
        String key = "zone-key-" + UUID.randomUUID();
        result(new TenantStore(database.pool()).ensure("zoned", "Zoned", key));
        String chat = "zoned-" + UUID.randomUUID();
        send("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "kim").put("messageId", "1")
                .put("text", "hi").encode(), key, null);
        JsonObject daily = new JsonObject().put("chatId", chat).put("prompt", "good morning").put("scheduleType", "cron")
                .put("scheduleValue", "0 9 * * *");
        String before = body(send("POST", "/api/v1/tasks", daily.encode(), key, null)).getString("id");
        // when the tenant sets its time zone through the API
        HttpResponse<String> settings = send("PUT", "/api/v1/settings", new JsonObject().put("timeZone", "Asia/Kolkata").encode(),
                key, null);
        assertThat(settings.statusCode()).as(settings.body()).isEqualTo(200);
        // then a cron task created without a zone gets the new one, at 09:00 there
        JsonObject after = body(send("POST", "/api/v1/tasks", daily.encode(), key, null));
        assertThat(after.getString("timeZone")).isEqualTo("Asia/Kolkata");
        assertThat(Instant.parse(after.getString("nextRunAt")).atZone(java.time.ZoneId.of("Asia/Kolkata")).toLocalTime())
                .hasToString("09:00");
        // and the task made before keeps the zone it was created with
        assertThat(body(send("GET", "/api/v1/tasks/" + before, null, key, null)).getString("timeZone")).isEqualTo("UTC");
    }

    @Test
    void eachBadInputIsRefusedNamingTheFieldAndNothingIsStored() throws Exception {
        String chat = chat("bad");
        Map<JsonObject, String> cases = new LinkedHashMap<>();
        cases.put(everyHour(chat).put("scheduleType", "cron").put("scheduleValue", "0 9 * *"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleType", "cron").put("scheduleValue", "0 9 * * *").put("timeZone", "CEST"), "timeZone");
        cases.put(everyHour(chat).put("scheduleValue", "an hour"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleValue", "500"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleValue", "30000"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleType", "once").put("scheduleValue", "2026-02-30T09:00:00+01:00"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleType", "once").put("scheduleValue", "2020-01-01T09:00:00+01:00"), "scheduleValue");
        cases.put(everyHour(chat).put("scheduleType", "sometimes"), "scheduleType");
        cases.put(everyHour(chat).put("contextMode", "everything"), "contextMode");
        cases.put(everyHour(chat).put("missedPolicy", "panic"), "missedPolicy");
        cases.put(everyHour(chat).put("prompt", " "), "prompt");
        cases.put(everyHour(chat).put("scheduleValue", 3600000), "scheduleValue");
        cases.put(everyHour(chat).put("every", "hour"), "every");
        cases.put(everyHour(chat).put("chatId", null), "chatId");
        for (Map.Entry<JsonObject, String> bad : cases.entrySet()) {
            HttpResponse<String> response = send("POST", "/api/v1/tasks", bad.getKey());
            assertThat(response.statusCode()).as(bad.getKey().encode()).isEqualTo(400);
            assertThat(body(response).getJsonObject("error").getString("message")).as(bad.getKey().encode())
                    .contains(bad.getValue());
        }
        assertThat(tasksOf(chat)).isEmpty();
    }

    @Test
    void aRetriedCreateWithTheSameIdempotencyKeyStoresOneTask() throws Exception {
        String chat = chat("retry");
        HttpResponse<String> first = send("POST", "/api/v1/tasks", everyHour(chat).encode(), KEY, "create-1");
        HttpResponse<String> again = send("POST", "/api/v1/tasks", everyHour(chat).encode(), KEY, "create-1");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(body(again).getString("id")).isEqualTo(body(first).getString("id"));
        assertThat(tasksOf(chat)).hasSize(1);
    }

    @Test
    void unknownChatsAndTasksAndOtherTenantsTasksAreNotFound() throws Exception {
        assertThat(send("POST", "/api/v1/tasks", everyHour("nobody-" + UUID.randomUUID())).statusCode()).isEqualTo(404);
        String id = body(send("POST", "/api/v1/tasks", everyHour(chat("mine")))).getString("id");
        assertThat(send("GET", "/api/v1/tasks/" + id, null, OTHER_KEY, null).statusCode()).isEqualTo(404);
        assertThat(send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "paused").encode(), OTHER_KEY, null)
                .statusCode()).isEqualTo(404);
        assertThat(send("DELETE", "/api/v1/tasks/" + id, null, OTHER_KEY, null).statusCode()).isEqualTo(404);
        assertThat(send("GET", "/api/v1/tasks/t-nope/runs", null).statusCode()).isEqualTo(404);
    }

    @Test
    void aDoneTaskCannotBeResumed() throws Exception {
        String id = body(send("POST", "/api/v1/tasks", everyHour(chat("done")))).getString("id");
        assertThat(body(send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "done"))).getValue("nextRunAt")).isNull();
        HttpResponse<String> resumed = send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "active"));
        assertThat(resumed.statusCode()).isEqualTo(409);
        assertThat(send("PATCH", "/api/v1/tasks/" + id, new JsonObject().put("status", "later")).statusCode()).isEqualTo(400);
    }

    @Test
    void aTenantWithItsMostTasksIsRefused() throws Exception {
        // given the other tenant's chat, and a limit of 3 tasks per tenant
        String chat = "limit-" + UUID.randomUUID();
        send("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "bob").put("messageId", "1")
                .put("text", "hi").encode(), OTHER_KEY, null);
        String second = "limit-" + UUID.randomUUID();
        send("POST", "/api/v1/messages", new JsonObject().put("chatId", second).put("senderId", "bob").put("messageId", "1")
                .put("text", "hi").encode(), OTHER_KEY, null);
        for (int i = 0; i < 3; i++) {
            assertThat(send("POST", "/api/v1/tasks", everyHour(i < 2 ? chat : second).encode(), OTHER_KEY, null).statusCode())
                    .isEqualTo(201);
        }
        HttpResponse<String> refused = send("POST", "/api/v1/tasks", everyHour(second).encode(), OTHER_KEY, null);
        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(body(refused).getJsonObject("error").getString("code")).isEqualTo("task_limit");
    }

    @Test
    void aChatWithItsMostTasksIsRefusedWithItsOwnCode() throws Exception {
        // given a chat of a tenant of its own with 2 tasks, the limit per chat
        String key = "third-key-" + UUID.randomUUID();
        result(new TenantStore(database.pool()).ensure("third", "Third", key));
        String chat = "chat-limit-" + UUID.randomUUID();
        send("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "bob").put("messageId", "1")
                .put("text", "hi").encode(), key, null);
        for (int i = 0; i < 2; i++) {
            assertThat(send("POST", "/api/v1/tasks", everyHour(chat).encode(), key, null).statusCode()).isEqualTo(201);
        }
        // when a third is asked for / then 409 chat_task_limit, and the tenant's limit (3) is not what refused it
        HttpResponse<String> refused = send("POST", "/api/v1/tasks", everyHour(chat).encode(), key, null);
        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(body(refused).getJsonObject("error").getString("code")).isEqualTo("chat_task_limit");
        assertThat(body(refused).getJsonObject("error").getString("message")).contains("this chat already has 2 tasks");
    }

    @Test
    void aTasksRunsAreListedNewestFirst() throws Exception {
        String id = body(send("POST", "/api/v1/tasks", everyHour(chat("runs")))).getString("id");
        for (String due : List.of("2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z")) {
            result(database.pool().preparedQuery("""
                    INSERT INTO task_runs (tenant_id, task_id, due_at, started_at, duration_ms, status, result_preview)
                    VALUES ('default', $1, $2, $2, 1200, 'success', 'all green')""")
                    .execute(Tuple.of(id, java.time.OffsetDateTime.parse(due))));
        }
        JsonArray runs = body(send("GET", "/api/v1/tasks/" + id + "/runs", null)).getJsonArray("runs");
        assertThat(runs).hasSize(2);
        JsonObject newest = runs.getJsonObject(0);
        assertThat(newest.getString("dueAt")).isEqualTo("2026-11-22T11:00:00Z");
        assertThat(newest.getInteger("durationMs")).isEqualTo(1200);
        assertThat(newest.getString("resultPreview")).isEqualTo("all green");
    }
}
