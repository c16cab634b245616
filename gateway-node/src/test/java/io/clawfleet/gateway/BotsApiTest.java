package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
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

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import io.clawfleet.shared.store.TenantStore;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bots (issue 13) on a real gateway: a tenant's bots each own their workspace, settings, chats and tasks; the
 * paths without a bot are the default bot main's; a key limited to some bots reaches only those; the OpenAI
 * endpoint picks the bot from {@code model}; a bot's deletion takes its rows and leaves main's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BotsApiTest {

    private static final String OPERATOR = "operator-key-bots-0123456789abcdef";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private NodeRuntime node;
    private Vertx vertx;
    private Database database;
    private GatewayClient client;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-bots", "operatorKey", OPERATOR,
                "http.replyTimeoutMs", "300", "tenantDeletion.scanMs", "200")), db, List.of(GatewayRole::new));
        client = new GatewayClient("http://127.0.0.1:" + node.httpPort());
        vertx = Vertx.vertx();
        database = Database.connect(vertx, db, 2, 5_000);
    }

    @AfterAll
    void stop() {
        result(node.stop());
        result(database.close());
        result(vertx.close());
    }

    /** A new tenant; its admin key. */
    private String tenant() throws Exception {
        String id = "bots-" + TENANTS.incrementAndGet();
        HttpResponse<String> created = client.call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", id));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body()).getJsonObject("apiKey").getString("key");
    }

    @Test
    void aTenantStartsWithMainAndMakesMoreBotsWithClearRefusals() throws Exception {
        String key = tenant();
        // when a bot is made / then it is listed after main, and read back
        HttpResponse<String> made = call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support").put("name", "Support desk")
                .put("settings", new JsonObject().put("autonomy", "read_only")));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        assertThat(new JsonObject(made.body()).getJsonObject("bot").getJsonObject("settings").getString("autonomy")).isEqualTo("read_only");
        JsonArray bots = new JsonObject(call("GET", "/api/v1/bots", key, null).body()).getJsonArray("bots");
        assertThat(bots.stream().map(b -> ((JsonObject) b).getString("id")).toList()).containsExactly("main", "support");
        assertThat(new JsonObject(call("GET", "/api/v1/bots/support", key, null).body()).getJsonObject("bot").getString("name"))
                .isEqualTo("Support desk");
        // and bad input is refused, naming the problem
        assertThat(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support")).statusCode()).isEqualTo(409);
        HttpResponse<String> badId = call("POST", "/api/v1/bots", key, new JsonObject().put("id", "Not A Bot"));
        assertThat(badId.statusCode()).isEqualTo(400);
        assertThat(badId.body()).contains("field 'id'");
        HttpResponse<String> badSetting = call("PATCH", "/api/v1/bots/support", key,
                new JsonObject().put("settings", new JsonObject().put("autonomy", "reckless")));
        assertThat(badSetting.statusCode()).isEqualTo(400);
        assertThat(badSetting.body()).contains("autonomy");
        assertThat(call("PATCH", "/api/v1/bots/support", key, new JsonObject().put("settings",
                new JsonObject().put("defaultRole", "no-such-role"))).statusCode()).isEqualTo(400);
        assertThat(call("GET", "/api/v1/bots/nobody", key, null).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/api/v1/bots/nobody/workspace", key, null).statusCode()).isEqualTo(404);
        HttpResponse<String> deleteMain = call("DELETE", "/api/v1/bots/main", key, null);
        assertThat(deleteMain.statusCode()).isEqualTo(409);
        assertThat(deleteMain.body()).contains("default bot");
    }

    @Test
    void eachBotHasItsOwnWorkspaceSettingsChatsAndTasks() throws Exception {
        String key = tenant();
        ok(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "sales")));
        // workspace: the same path holds each bot's own file; a new bot gets the default files
        ok(call("PUT", "/api/v1/workspace/files/SOUL.md", key, new JsonObject().put("content", "I am main")));
        ok(call("PUT", "/api/v1/bots/sales/workspace/files/SOUL.md", key, new JsonObject().put("content", "I sell")));
        assertThat(new JsonObject(call("GET", "/api/v1/workspace/files/SOUL.md", key, null).body()).getString("content"))
                .isEqualTo("I am main");
        assertThat(new JsonObject(call("GET", "/api/v1/bots/main/workspace/files/SOUL.md", key, null).body()).getString("content"))
                .isEqualTo("I am main");
        assertThat(new JsonObject(call("GET", "/api/v1/bots/sales/workspace/files/SOUL.md", key, null).body()).getString("content"))
                .isEqualTo("I sell");
        ok(call("PUT", "/api/v1/bots/sales/workspace/files/notes/only-sales.md", key, new JsonObject().put("content", "x")));
        assertThat(call("GET", "/api/v1/workspace/files/notes/only-sales.md", key, null).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/api/v1/bots/sales/workspace", key, null).body()).contains("AGENTS.md");
        // the audit trail names the bot a write on a bot's route concerns, and none for the tenant's own routes
        List<String> audited = List.of();
        for (int i = 0; i < 50 && audited.size() < 2; i++) { // the rows are written as the answers go out
            Thread.sleep(i == 0 ? 0 : 100);
            audited = new JsonObject(call("GET", "/api/v1/audit?type=http_write", key, null).body()).getJsonArray("events")
                    .stream().map(e -> (JsonObject) e)
                    .filter(e -> e.getJsonObject("http").getString("route").startsWith("/api/v1/bots/:botId/workspace"))
                    .map(e -> e.getString("botId")).toList();
        }
        assertThat(audited).containsExactly("sales", "sales");
        JsonArray salesTrail = new JsonObject(call("GET", "/api/v1/bots/sales/audit?type=http_write", key, null).body())
                .getJsonArray("events");
        assertThat(salesTrail.stream().map(e -> ((JsonObject) e).getString("botId")).distinct().toList()).containsExactly("sales");
        // settings: each bot's own
        ok(call("PUT", "/api/v1/bots/sales/settings", key, new JsonObject().put("autonomy", "full")));
        assertThat(new JsonObject(call("GET", "/api/v1/bots/sales/settings", key, null).body()).getString("autonomy")).isEqualTo("full");
        assertThat(new JsonObject(call("GET", "/api/v1/settings", key, null).body()).getString("autonomy")).isEqualTo("supervised");
        // chats: the same chat id and message id on two bots are two chats, two messages
        JsonObject message = new JsonObject().put("chatId", "c1").put("senderId", "ann").put("messageId", "m1").put("text", "hi");
        assertThat(call("POST", "/api/v1/messages", key, message).statusCode()).isEqualTo(202);
        assertThat(call("POST", "/api/v1/bots/sales/messages", key, message).statusCode()).isEqualTo(202);
        assertThat(call("POST", "/api/v1/bots/sales/messages", key, message).statusCode()).isEqualTo(200); // a retry
        String tenant = tenantOf(key);
        assertThat(value("SELECT string_agg(bot_id, ',' ORDER BY bot_id) FROM chats WHERE tenant_id = $1 AND chat_key = 'c1'", tenant))
                .isEqualTo("main,sales");
        // tasks: made on a bot's chat, listed and found on that bot only
        HttpResponse<String> task = call("POST", "/api/v1/bots/sales/tasks", key, new JsonObject().put("chatId", "c1")
                .put("prompt", "follow up").put("scheduleType", "interval").put("scheduleValue", "3600000"));
        assertThat(task.statusCode()).as(task.body()).isEqualTo(201);
        String taskId = new JsonObject(task.body()).getString("id");
        assertThat(call("GET", "/api/v1/bots/sales/tasks/" + taskId, key, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/tasks/" + taskId, key, null).statusCode()).isEqualTo(404);
        assertThat(new JsonObject(call("GET", "/api/v1/tasks", key, null).body()).getJsonArray("tasks")).isEmpty();
        assertThat(new JsonObject(call("GET", "/api/v1/bots/sales/tasks", key, null).body()).getJsonArray("tasks")).hasSize(1);
    }

    @Test
    void aKeyLimitedToSomeBotsReachesOnlyThose() throws Exception {
        String key = tenant();
        ok(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "kiosk")));
        // refused: a bot the tenant does not have
        HttpResponse<String> unknown = call("POST", "/api/v1/keys", key, new JsonObject().put("name", "k").put("scopes",
                new JsonArray().add("admin")).put("botIds", new JsonArray().add("kiosk").add("ghost")));
        assertThat(unknown.statusCode()).isEqualTo(400);
        assertThat(unknown.body()).contains("ghost");
        HttpResponse<String> made = call("POST", "/api/v1/keys", key, new JsonObject().put("name", "kiosk only")
                .put("scopes", new JsonArray().add("admin")).put("botIds", new JsonArray().add("kiosk")));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String limited = new JsonObject(made.body()).getJsonObject("key").getString("key");
        assertThat(new JsonObject(made.body()).getJsonObject("key").getJsonArray("botIds")).containsExactly("kiosk");
        JsonObject message = new JsonObject().put("chatId", "c1").put("senderId", "ann").put("messageId", "m1").put("text", "hi");
        // its bot: everything its scopes allow
        assertThat(call("POST", "/api/v1/bots/kiosk/messages", limited, message).statusCode()).isEqualTo(202);
        assertThat(call("PUT", "/api/v1/bots/kiosk/workspace/files/SOUL.md", limited, new JsonObject().put("content", "k"))
                .statusCode()).isEqualTo(201);
        // another bot (main, through either path), and the tenant's own routes: 403, saying why
        HttpResponse<String> main = call("POST", "/api/v1/messages", limited, message);
        assertThat(main.statusCode()).isEqualTo(403);
        assertThat(main.body()).contains("limited to the bots [kiosk]");
        assertThat(call("GET", "/api/v1/bots/main/workspace", limited, null).statusCode()).isEqualTo(403);
        HttpResponse<String> keys = call("GET", "/api/v1/keys", limited, null);
        assertThat(keys.statusCode()).isEqualTo(403);
        assertThat(keys.body()).contains("whole tenant");
        assertThat(call("POST", "/api/v1/bots", limited, new JsonObject().put("id", "mine")).statusCode()).isEqualTo(403);
        assertThat(call("GET", "/api/v1/export", limited, null).statusCode()).isEqualTo(403);
        // lists show its bots only; the models it may ask for are its bot's
        JsonArray bots = new JsonObject(call("GET", "/api/v1/bots", limited, null).body()).getJsonArray("bots");
        assertThat(bots.stream().map(b -> ((JsonObject) b).getString("id")).toList()).containsExactly("kiosk");
        String models = call("GET", "/v1/models", limited, null).body();
        assertThat(models).contains("\"id\":\"kiosk\"").doesNotContain("\"id\":\"default\"");
        // and it cannot be the last admin key that keeps the tenant manageable
        assertThat(call("GET", "/api/v1/keys", key, null).body()).contains("\"botIds\":[\"kiosk\"]");
    }

    @Test
    void theOpenAiEndpointPicksTheBotFromTheModel() throws Exception {
        String key = tenant();
        String tenant = tenantOf(key);
        ok(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support")));
        String models = call("GET", "/v1/models", key, null).body();
        assertThat(models).contains("\"id\":\"default\"", "\"id\":\"support\"");
        // no worker here: the reply times out, but the message is in the chosen bot's chat
        for (String model : List.of("support", "support/default", "default")) {
            HttpResponse<String> answer = call("POST", "/v1/chat/completions", key, new JsonObject().put("model", model)
                    .put("user", "u-" + model.replace('/', '-')).put("messages", new JsonArray()
                            .add(new JsonObject().put("role", "user").put("content", "hi"))));
            assertThat(answer.statusCode()).as(model + ": " + answer.body()).isEqualTo(504);
        }
        assertThat(value("SELECT bot_id FROM chats WHERE tenant_id = $1 AND chat_key = 'u-support'", tenant)).isEqualTo("support");
        assertThat(value("SELECT bot_id FROM chats WHERE tenant_id = $1 AND chat_key = 'u-support-default'", tenant))
                .isEqualTo("support");
        assertThat(value("SELECT bot_id FROM chats WHERE tenant_id = $1 AND chat_key = 'u-default'", tenant)).isEqualTo("main");
        for (String model : List.of("nobody", "support/no-role", "nobody/default")) {
            HttpResponse<String> refused = call("POST", "/v1/chat/completions", key, new JsonObject().put("model", model)
                    .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
            assertThat(refused.statusCode()).as(model).isEqualTo(404);
            assertThat(refused.body()).contains("model_not_found");
        }
    }

    @Test
    void deletingABotRemovesItsRowsInBatchesAndLeavesMainAndTheTenantsRecords() throws Exception {
        String key = tenant();
        String tenant = tenantOf(key);
        ok(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "temp")));
        JsonObject message = new JsonObject().put("chatId", "c1").put("senderId", "ann").put("messageId", "m1").put("text", "hi");
        ok(call("POST", "/api/v1/messages", key, message));
        ok(call("POST", "/api/v1/bots/temp/messages", key, message));
        ok(call("PUT", "/api/v1/bots/temp/workspace/files/notes/a.md", key, new JsonObject().put("content", "x")));
        String limited = new JsonObject(call("POST", "/api/v1/keys", key, new JsonObject().put("name", "temp only")
                .put("scopes", new JsonArray().add("chat")).put("botIds", new JsonArray().add("temp"))).body())
                .getJsonObject("key").getString("key");
        assertThat(call("POST", "/api/v1/bots/temp/messages", limited, message.copy().put("messageId", "m2")).statusCode())
                .isEqualTo(202);
        // when the bot is deleted
        HttpResponse<String> deleting = call("DELETE", "/api/v1/bots/temp", key, null);
        assertThat(deleting.statusCode()).as(deleting.body()).isEqualTo(202);
        // then its routes answer 404 at once, and the deletion finishes
        assertThat(call("GET", "/api/v1/bots/temp/workspace", key, null).statusCode()).isEqualTo(404);
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!new JsonObject(call("GET", "/api/v1/bot-deletions/temp", key, null).body()).getJsonObject("deletion")
                .getString("state").equals("done")) {
            assertThat(System.nanoTime()).as("the bot's deletion finishes within 20 s").isLessThan(deadline);
            Thread.sleep(100);
        }
        JsonObject deletion = new JsonObject(call("GET", "/api/v1/bot-deletions/temp", key, null).body()).getJsonObject("deletion");
        assertThat(deletion.getString("botId")).isEqualTo("temp");
        assertThat(deletion.getJsonObject("counts").getLong("inbox")).isEqualTo(2L);
        assertThat(value("SELECT count(*) FROM chats WHERE tenant_id = $1 AND bot_id = 'temp'", tenant)).isEqualTo(0L);
        assertThat(value("SELECT count(*) FROM workspace_files WHERE tenant_id = $1 AND bot_id = 'temp'", tenant)).isEqualTo(0L);
        assertThat(value("SELECT count(*) FROM bots WHERE tenant_id = $1 AND id = 'temp'", tenant)).isEqualTo(0L);
        // main's chat stays; the key limited to the bot is revoked (it must not come to reach every bot)
        assertThat(value("SELECT count(*) FROM chats WHERE tenant_id = $1 AND bot_id = 'main'", tenant)).isEqualTo(1L);
        assertThat(call("POST", "/api/v1/messages", limited, message.copy().put("messageId", "m3")).statusCode()).isEqualTo(401);
        assertThat(value("SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = 'bot_deleted' AND bot_id = 'temp'",
                tenant)).isEqualTo(1L);
        // and the id may be used again: a new, empty bot
        assertThat(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "temp")).statusCode()).isEqualTo(201);
        assertThat(call("GET", "/api/v1/bots/temp/workspace/files/notes/a.md", key, null).statusCode()).isEqualTo(404);
    }

    @Test
    void theExportHasAFolderPerBot() throws Exception {
        String key = tenant();
        ok(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support").put("name", "Support")));
        ok(call("PUT", "/api/v1/bots/support/workspace/files/SOUL.md", key, new JsonObject().put("content", "support's soul")));
        ok(call("POST", "/api/v1/bots/support/messages", key, new JsonObject().put("chatId", "c9").put("senderId", "ann")
                .put("messageId", "m1").put("text", "support question")));
        HttpResponse<byte[]> archive = client.bytes("/api/v1/export", key);
        assertThat(archive.statusCode()).isEqualTo(200);
        Map<String, String> entries = new java.util.LinkedHashMap<>();
        try (var in = new java.util.zip.ZipInputStream(new java.io.ByteArrayInputStream(archive.body()))) {
            for (var entry = in.getNextEntry(); entry != null; entry = in.getNextEntry()) {
                entries.put(entry.getName(), new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        assertThat(entries.get("bots/support/workspace/SOUL.md")).isEqualTo("support's soul");
        assertThat(entries.get("bots/support/inbox.jsonl")).contains("support question");
        assertThat(entries.get("bots/main/inbox.jsonl")).doesNotContain("support question");
        assertThat(entries.get("bots.jsonl").lines().map(line -> new JsonObject(line).getString("id")).toList())
                .containsExactly("main", "support");
        JsonObject manifest = new JsonObject(entries.get("manifest.json"));
        assertThat(manifest.getJsonArray("bots")).containsExactly("main", "support");
        assertThat(manifest.getJsonObject("entries").getLong("bots/support/inbox.jsonl")).isEqualTo(1L);
    }

    @Test
    void theOperatorsLimitsCapBotsKeysAndTasks() throws Exception {
        // refused by name: an unknown limit, bad values
        for (JsonObject limits : List.of(new JsonObject().put("robots", 1), new JsonObject().put("concurrentTurns", 1.5),
                new JsonObject().put("bots", -1), new JsonObject().put("bots", "5"),
                new JsonObject().put("inboxRetentionDays", 0), new JsonObject().put("auditRetentionDays", 3_651),
                new JsonObject().put("usageRetentionDays", 34), new JsonObject().put("transcriptRetentionDays", 0),
                new JsonObject().put("transcriptRetentionDays", 0.5))) {
            HttpResponse<String> refused = client.call("POST", "/admin/v1/tenants", OPERATOR,
                    new JsonObject().put("name", "x").put("limits", limits));
            assertThat(refused.statusCode()).as(limits.encode()).isEqualTo(400);
        }
        HttpResponse<String> usage = client.call("POST", "/admin/v1/tenants", OPERATOR,
                new JsonObject().put("name", "x").put("limits", new JsonObject().put("usageRetentionDays", 34)));
        assertThat(usage.body()).contains("'usageRetentionDays' must be a whole number from 35 to 3650");
        String id = "limited-" + TENANTS.incrementAndGet();
        HttpResponse<String> created = client.call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id)
                .put("name", id).put("limits", new JsonObject().put("bots", 2).put("keys", 2).put("tasks", 1)));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(new JsonObject(created.body()).getJsonObject("tenant").getJsonObject("limits"))
                .isEqualTo(new JsonObject().put("bots", 2).put("keys", 2).put("tasks", 1));
        String key = new JsonObject(created.body()).getJsonObject("apiKey").getString("key");
        // bots: main and one more
        assertThat(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "second")).statusCode()).isEqualTo(201);
        HttpResponse<String> third = call("POST", "/api/v1/bots", key, new JsonObject().put("id", "third"));
        assertThat(third.statusCode()).isEqualTo(409);
        assertThat(third.body()).contains("limit_reached", "at most 2 bots", "'bots'");
        // keys: the first and one more
        JsonObject newKey = new JsonObject().put("name", "k").put("scopes", new JsonArray().add("read"));
        assertThat(call("POST", "/api/v1/keys", key, newKey).statusCode()).isEqualTo(201);
        assertThat(call("POST", "/api/v1/keys", key, newKey).statusCode()).isEqualTo(409);
        // tasks: one that is not done
        ok(call("POST", "/api/v1/messages", key, new JsonObject().put("chatId", "c1").put("senderId", "ann")
                .put("messageId", "m1").put("text", "hi")));
        JsonObject task = new JsonObject().put("chatId", "c1").put("prompt", "p").put("scheduleType", "interval")
                .put("scheduleValue", "3600000");
        assertThat(call("POST", "/api/v1/tasks", key, task).statusCode()).isEqualTo(201);
        HttpResponse<String> secondTask = call("POST", "/api/v1/tasks", key, task);
        assertThat(secondTask.statusCode()).isEqualTo(409);
        assertThat(secondTask.body()).contains("'tasks'");
        // the operator raises one and unsets another: both hold at once
        HttpResponse<String> patched = client.call("PATCH", "/admin/v1/tenants/" + id, OPERATOR,
                new JsonObject().put("limits", new JsonObject().put("bots", 3).putNull("keys")));
        assertThat(new JsonObject(patched.body()).getJsonObject("tenant").getJsonObject("limits"))
                .isEqualTo(new JsonObject().put("bots", 3).put("tasks", 1));
        assertThat(call("POST", "/api/v1/bots", key, new JsonObject().put("id", "third")).statusCode()).isEqualTo(201);
        assertThat(call("POST", "/api/v1/keys", key, newKey).statusCode()).isEqualTo(201);
    }

    @Test
    void aTenantOverItsMessagesPerMinuteGets429WithTheRateLimitHeaders() throws Exception {
        String id = "rated-" + TENANTS.incrementAndGet();
        int second = java.time.LocalTime.now(java.time.ZoneOffset.UTC).getSecond();
        if (second > 45) { // the window is a minute of the database's clock: stay in one
            Thread.sleep((61 - second) * 1_000L);
        }
        HttpResponse<String> created = client.call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id)
                .put("name", id).put("limits", new JsonObject().put("messagesPerMinute", 3)));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String key = new JsonObject(created.body()).getJsonObject("apiKey").getString("key");
        for (int i = 0; i < 3; i++) {
            assertThat(call("POST", "/api/v1/messages", key, new JsonObject().put("chatId", "c").put("senderId", "ann")
                    .put("messageId", "m" + i).put("text", "hi")).statusCode()).isEqualTo(202);
        }
        HttpResponse<String> over = call("POST", "/api/v1/bots/main/messages", key, new JsonObject().put("chatId", "c")
                .put("senderId", "ann").put("messageId", "m3").put("text", "hi"));
        assertThat(over.statusCode()).isEqualTo(429);
        assertThat(over.body()).contains("rate_limit_exceeded", "messagesPerMinute");
        assertThat(Long.parseLong(over.headers().firstValue("retry-after").orElseThrow())).isBetween(1L, 60L);
        assertThat(over.headers().firstValue("ratelimit-policy")).contains("\"messages\";q=3;w=60");
        assertThat(over.headers().firstValue("ratelimit").orElseThrow()).startsWith("\"messages\";r=0;t=");
        assertThat(value("SELECT count(*) FROM inbox WHERE tenant_id = $1", id)).isEqualTo(3L);
        // the OpenAI-compatible endpoint answers as OpenAI does
        HttpResponse<String> openai = call("POST", "/v1/chat/completions", key, new JsonObject().put("model", "default")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
        assertThat(openai.statusCode()).isEqualTo(429);
        JsonObject error = new JsonObject(openai.body()).getJsonObject("error");
        assertThat(error.getString("code")).isEqualTo("rate_limit_exceeded");
        assertThat(error.getString("type")).isEqualTo("requests");
        assertThat(error.containsKey("param")).isTrue();
        // reads are not messages: they go on
        assertThat(call("GET", "/api/v1/bots", key, null).statusCode()).isEqualTo(200);
    }

    private String tenantOf(String key) {
        return (String) value("SELECT tenant_id FROM api_keys WHERE key_hash = $1",
                TenantStore.hashKey(key));
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return client.call(method, path, key, body);
    }

    private static HttpResponse<String> ok(HttpResponse<String> response) {
        assertThat(response.statusCode()).as(response.body()).isBetween(200, 299);
        return response;
    }

    private Object value(String sql, Object... params) {
        var rows = result(database.pool().preparedQuery(sql).execute(Tuple.from(params)));
        return rows.size() == 0 ? null : rows.iterator().next().getValue(0);
    }
}
