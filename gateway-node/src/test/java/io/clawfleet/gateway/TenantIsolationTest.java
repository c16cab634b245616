package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.ChannelBotStore;
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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tenant isolation, proven on every route (issue 13). Tenant A gets one of everything; then every
 * route the gateway registers is called with tenant B's admin key on A's ids. A route that names one
 * of A's things answers 404 (never A's data, never a 403 that tells A's thing exists); a list answers
 * only B's rows; a write that makes something makes it B's. Afterwards A's things are as they were.
 * The suite walks the router's routes: a route added later without a case here fails it, so nobody
 * can add an endpoint and forget to ask this question.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantIsolationTest {

    private static final String OPERATOR = "operator-key-isolation-0123456789";
    private static final String MARK = "A-MARKER-7f3c";
    /** Answers that list B's own past requests (its audit trail), A's key id among their parameters. */
    private static final Set<String> ECHOES_B = Set.of("/api/v1/audit", "/api/v1/export");
    /** What only A's own rows hold: finding one in an answer to B is a leak. */
    private static final List<String> A_CONTENTS = List.of("hello " + MARK, "task " + MARK, "file " + MARK, "key " + MARK,
            "failed " + MARK, "\"content\":\"" + MARK, "iso-a", "bot_a_marker", "bot " + MARK, "bot file " + MARK,
            "model " + MARK, "sender " + MARK);
    /** A's second bot, and one of A's bots being deleted: B has neither. */
    private static final String A_BOT = "abot-7f3c";
    private static final String A_GONE = "agone-7f3c";
    /** A pairing code waiting for A's approval, and who asked. */
    private static final String A_CODE = "QWER-TYUP";

    /** What B's call on A's id may answer. */
    private enum Expect {
        /** It names one of A's things: 404, nothing else. */
        NOT_FOUND,
        /** A list or B's own view: success, and nothing of A's in it. */
        OWN_ONLY,
        /** It makes something: B's own (A's is untouched, checked at the end); nothing of A's in the answer. */
        MAKES_OWN,
        /** Not a tenant route (health, the operator's plane, metrics, the cluster view): not called with a tenant key here. */
        NOT_TENANT
    }

    private record Case(Expect expect, String path, JsonObject body) {
    }

    private NodeRuntime node;
    private Vertx vertx;
    private Database database;
    private String base;
    private GatewayClient client;

    private String aKey;
    private String bKey;
    private String aKeyId;
    private final String aChat = "a-chat-" + MARK;
    private String aTask;
    private long aBot;
    private long aWebhook;
    private static final String A_DELIVERY = "msg_iso_a_delivery";
    private long aDeadLetter;
    private final String aApproval = "appr" + MARK.toLowerCase();
    private final String aFile = "notes/a-" + MARK + ".md";

    @BeforeAll
    void start() throws Exception {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-isolation", "operatorKey", OPERATOR,
                "http.replyTimeoutMs", "500")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = new GatewayClient(base);
        vertx = Vertx.vertx();
        database = Database.connect(vertx, db, 2, 5_000);
        JsonObject a = tenant("iso-a");
        aKey = a.getString("key");
        aKeyId = a.getString("id");
        bKey = tenant("iso-b").getString("key");
        seedA();
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(vertx.close());
    }

    private JsonObject tenant(String id) throws Exception {
        HttpResponse<String> created = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", id));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body()).getJsonObject("apiKey");
    }

    /** One of everything, for A: a chat with a message, a task, a file, a key, a bot, a dead letter, a waiting call. */
    private void seedA() throws Exception {
        ok(call("POST", "/api/v1/messages", aKey, new JsonObject().put("chatId", aChat).put("senderId", "alice")
                .put("messageId", "m1").put("text", "hello " + MARK)));
        HttpResponse<String> task = ok(call("POST", "/api/v1/tasks", aKey, new JsonObject().put("chatId", aChat)
                .put("prompt", "task " + MARK).put("scheduleType", "interval").put("scheduleValue", "3600000")));
        aTask = new JsonObject(task.body()).getString("id");
        ok(call("PUT", "/api/v1/workspace/files/" + aFile, aKey, new JsonObject().put("content", "file " + MARK)));
        ok(call("POST", "/api/v1/keys", aKey, new JsonObject().put("name", "key " + MARK).put("scopes", new JsonArray().add("read"))));
        ok(call("POST", "/api/v1/bots", aKey, new JsonObject().put("id", A_BOT).put("name", "bot " + MARK)));
        ok(call("PUT", "/api/v1/bots/" + A_BOT + "/workspace/files/" + aFile, aKey,
                new JsonObject().put("content", "bot file " + MARK)));
        ok(call("POST", "/api/v1/bots/" + A_BOT + "/messages", aKey, new JsonObject().put("chatId", aChat)
                .put("senderId", "alice").put("messageId", "m1").put("text", "hello " + MARK)));
        for (String bot : List.of("main", A_BOT)) {
            result(new io.clawfleet.shared.store.DeferredStore(database.pool()).defer(new BotRef("iso-a", bot), "telegram",
                    aChat, "u-" + bot, "alice", "hello " + MARK, "tokensPerDay"));
        }
        for (String providers : List.of("/api/v1/providers", "/api/v1/bots/" + A_BOT + "/providers")) {
            ok(call("PUT", providers, aKey, providers("model " + MARK, "sk-" + MARK + "-0123456789")));
        }
        for (String servers : List.of("/api/v1/mcp-servers", "/api/v1/bots/" + A_BOT + "/mcp-servers")) {
            ok(call("PUT", servers, aKey, mcpServers("https://8.8.8.8/" + MARK + "/mcp", "tok-" + MARK + "-0123456789")));
        }
        ok(call("POST", "/api/v1/bots", aKey, new JsonObject().put("id", A_GONE)));
        ok(call("DELETE", "/api/v1/bots/" + A_GONE, aKey, null));
        aBot = result(new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool())).register(BotRef.main("iso-a"), "telegram", "bot_" + MARK.toLowerCase().replace('-', '_'),
                "123:" + MARK, "http://127.0.0.1:1")).id();
        // a webhook endpoint of A's (turned off: nothing is sent from here) with one failed delivery
        io.clawfleet.shared.store.WebhookStore hooks = new io.clawfleet.shared.store.WebhookStore(database.pool(),
                io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        aWebhook = result(hooks.create(BotRef.main("iso-a"), "http://127.0.0.1:9/" + MARK, List.of("reply.sent"), "a's " + MARK,
                "whsec_" + java.util.Base64.getEncoder().encodeToString(new byte[32]))).id();
        result(hooks.update(BotRef.main("iso-a"), aWebhook, null, null, null, false));
        value("""
                INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload, status, attempts, finished_at)
                VALUES ($1, 'iso-a', 'main', $2, 'reply.sent', '{"data":"a''s"}', 'failed', 8, now()) RETURNING 1""",
                A_DELIVERY, aWebhook);
        value("""
                INSERT INTO channel_senders (channel_bot_id, tenant_id, bot_id, sender_id, status, code, code_expires_at, chat_id)
                VALUES ($1, 'iso-a', 'main', $2, 'pending', $3, now() + interval '1 hour', '42') RETURNING 1""", aBot,
                "sender " + MARK, A_CODE);
        long chatId = (Long) value("SELECT id FROM chats WHERE tenant_id = 'iso-a' AND bot_id = 'main' AND chat_key = $1", aChat);
        long inboxId = (Long) value("SELECT id FROM inbox WHERE chat_id = $1", chatId);
        aDeadLetter = (Long) value("""
                INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error, attempts)
                VALUES ('iso-a', 'inbound', $1, $2, '{}'::jsonb, $3, 1) RETURNING id""", String.valueOf(inboxId), chatId,
                "failed " + MARK);
        value("""
                INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,
                                               args_hash, requested_by, expires_at)
                VALUES ($1, 'iso-a', $2, 'message_send', 'c1', $3, '{}'::jsonb, $4, 'h', 'alice', now() + interval '1 hour')
                RETURNING 1""", chatId, inboxId, new JsonObject().put("content", MARK), aApproval);
    }

    /** A bot's providers: one OpenAI-compatible endpoint at a public address (a literal: no name to resolve). */
    private static JsonObject providers(String model, String apiKey) {
        return new JsonObject().put("providers", new JsonObject().put("p", new JsonObject().put("type", "openai")
                .put("baseUrl", "https://8.8.8.8/v1").put("model", model).put("apiKey", apiKey)));
    }

    /** A bot's remote MCP servers: one at a public address (a literal: no name to resolve), with a bearer token. */
    private static JsonObject mcpServers(String url, String token) {
        return new JsonObject().put("servers", new JsonObject().put("s", new JsonObject().put("url", url).put("bearerToken", token)));
    }

    /** Every registered route, with what B's call on A's ids must answer. */
    private Map<String, Case> cases() {
        String files = "/api/v1/workspace/files/";
        Map<String, Case> cases = new LinkedHashMap<>();
        for (String open : List.of("GET /livez", "GET /readyz", "GET /metrics")) {
            cases.put(open, new Case(Expect.NOT_TENANT, null, null));
        }
        cases.put("POST /api/v1/messages", new Case(Expect.MAKES_OWN, "/api/v1/messages",
                new JsonObject().put("chatId", aChat).put("senderId", "mallory").put("messageId", "b1").put("text", "hi")));
        cases.put("GET /api/v1/chats/:chatId/replies", new Case(Expect.OWN_ONLY, "/api/v1/chats/" + aChat + "/replies", null));
        cases.put("PUT /api/v1/chats/:channel/:chatKey/role", new Case(Expect.NOT_FOUND, "/api/v1/chats/api/" + aChat + "/role",
                new JsonObject().put("role", "admin")));
        cases.put("GET /api/v1/keys", new Case(Expect.OWN_ONLY, "/api/v1/keys", null));
        cases.put("POST /api/v1/keys", new Case(Expect.MAKES_OWN, "/api/v1/keys",
                new JsonObject().put("name", "b").put("scopes", new JsonArray().add("read"))));
        cases.put("DELETE /api/v1/keys/:keyId", new Case(Expect.NOT_FOUND, "/api/v1/keys/" + aKeyId, null));
        cases.put("POST /api/v1/keys/:keyId/rotate", new Case(Expect.NOT_FOUND, "/api/v1/keys/" + aKeyId + "/rotate",
                new JsonObject()));
        cases.put("GET /api/v1/approvals", new Case(Expect.OWN_ONLY, "/api/v1/approvals", null));
        cases.put("POST /api/v1/approvals/:id", new Case(Expect.NOT_FOUND, "/api/v1/approvals/" + aApproval,
                new JsonObject().put("decision", "approve").put("argsHash", "h")));
        // A zip: what is checked is every entry of the archive, unpacked.
        cases.put("GET /api/v1/export", new Case(Expect.OWN_ONLY, "/api/v1/export", null));
        cases.put("GET /api/v1/cluster", new Case(Expect.NOT_TENANT, null, null));
        cases.put("GET /api/v1/audit", new Case(Expect.OWN_ONLY, "/api/v1/audit", null));
        cases.put("GET /api/v1/dead-letters", new Case(Expect.OWN_ONLY, "/api/v1/dead-letters", null));
        cases.put("POST /api/v1/dead-letters/:id/replay", new Case(Expect.NOT_FOUND,
                "/api/v1/dead-letters/" + aDeadLetter + "/replay", null));
        cases.put("GET /api/v1/settings", new Case(Expect.OWN_ONLY, "/api/v1/settings", null));
        cases.put("PUT /api/v1/settings", new Case(Expect.MAKES_OWN, "/api/v1/settings", new JsonObject().put("autonomy", "full")));
        cases.put("GET /api/v1/usage", new Case(Expect.OWN_ONLY, "/api/v1/usage", null));
        cases.put("GET /api/v1/deferred", new Case(Expect.OWN_ONLY, "/api/v1/deferred", null));
        cases.put("POST /api/v1/deferred/replay", new Case(Expect.OWN_ONLY, "/api/v1/deferred/replay", new JsonObject()));
        cases.put("GET /api/v1/providers", new Case(Expect.OWN_ONLY, "/api/v1/providers", null));
        cases.put("PUT /api/v1/providers", new Case(Expect.MAKES_OWN, "/api/v1/providers", providers("b-model", "sk-b-0123456789abcdef")));
        // B has none of its own when this runs (routes go in order: DELETE before PUT): 404, and A's stay
        cases.put("DELETE /api/v1/providers", new Case(Expect.NOT_FOUND, "/api/v1/providers", null));
        cases.put("GET /api/v1/mcp-servers", new Case(Expect.OWN_ONLY, "/api/v1/mcp-servers", null));
        cases.put("PUT /api/v1/mcp-servers", new Case(Expect.MAKES_OWN, "/api/v1/mcp-servers",
                mcpServers("https://8.8.4.4/mcp", "tok-b-0123456789abcdef")));
        // B has none of its own when this runs (DELETE before PUT): 404, and A's stay
        cases.put("DELETE /api/v1/mcp-servers", new Case(Expect.NOT_FOUND, "/api/v1/mcp-servers", null));
        cases.put("GET /api/v1/channels", new Case(Expect.OWN_ONLY, "/api/v1/channels", null));
        // The token check goes to Telegram (unreachable here): refused before anything is stored.
        cases.put("POST /api/v1/channels/telegram", new Case(Expect.MAKES_OWN, "/api/v1/channels/telegram",
                new JsonObject().put("token", "123:" + MARK)));
        // The token check goes to Slack (unreachable here), or the gateway has no public URL: nothing is stored.
        cases.put("POST /api/v1/channels/slack", new Case(Expect.MAKES_OWN, "/api/v1/channels/slack",
                new JsonObject().put("token", "xoxb-" + MARK).put("signingSecret", "0123456789abcdef0123")));
        cases.put("POST /api/v1/channels/whatsapp", new Case(Expect.MAKES_OWN, "/api/v1/channels/whatsapp",
                new JsonObject().put("accessToken", "EAAG" + MARK.replaceAll("[^A-Za-z0-9]", "") + "0123456789abcdef")
                        .put("appSecret", "0123456789abcdef0123").put("phoneNumberId", "1065403522")));
        // The token check goes to Discord (unreachable here): nothing is stored (aDiscordReplyGoesOnlyThroughItsOwnTenantsBot)
        // Discord signs interactions with the application's key: aDiscordInteractionTakesOnlyItsOwnApplicationsSignature
        cases.put("POST /hooks/discord/:id", new Case(Expect.NOT_TENANT, null, null));
        cases.put("POST /api/v1/channels/discord", new Case(Expect.MAKES_OWN, "/api/v1/channels/discord",
                new JsonObject().put("token", "MTk4" + MARK.replaceAll("[^A-Za-z0-9]", "") + "0123456789abcdefghij0123456789abcdefghij")));
        // B's own inbound webhook account: its secret opens only its own (aSignedWebhookTakesOnlyItsOwnSecret)
        cases.put("POST /api/v1/channels/webhook", new Case(Expect.MAKES_OWN, "/api/v1/channels/webhook", new JsonObject()));
        cases.put("POST /hooks/inbound/:id", new Case(Expect.NOT_TENANT, null, null));
        // B's own web chat account; an account's key and secret open only its own chats (aWebChatOpensOnlyItsOwnAccountsChats)
        cases.put("POST /api/v1/channels/webchat", new Case(Expect.MAKES_OWN, "/api/v1/channels/webchat", new JsonObject()
                .put("allowedOrigins", new JsonArray().add("https://b.example"))));
        cases.put("GET /webchat/v1/widget.js", new Case(Expect.NOT_TENANT, null, null));
        cases.put("OPTIONS /webchat/v1/sessions", new Case(Expect.NOT_TENANT, null, null));
        cases.put("POST /webchat/v1/sessions", new Case(Expect.NOT_TENANT, null, null));
        cases.put("GET /webchat/v1/ws", new Case(Expect.NOT_TENANT, null, null));
        cases.put("GET /api/v1/webhooks", new Case(Expect.OWN_ONLY, "/api/v1/webhooks", null));
        // B's own endpoint leads to a closed port on loopback, if the egress rules let it be made at all
        cases.put("POST /api/v1/webhooks", new Case(Expect.MAKES_OWN, "/api/v1/webhooks", new JsonObject()
                .put("url", "http://127.0.0.1:9/b").put("events", new JsonArray().add("reply.sent"))));
        cases.put("GET /api/v1/webhooks/:id", new Case(Expect.NOT_FOUND, "/api/v1/webhooks/" + aWebhook, null));
        cases.put("PATCH /api/v1/webhooks/:id", new Case(Expect.NOT_FOUND, "/api/v1/webhooks/" + aWebhook,
                new JsonObject().put("enabled", true)));
        cases.put("DELETE /api/v1/webhooks/:id", new Case(Expect.NOT_FOUND, "/api/v1/webhooks/" + aWebhook, null));
        cases.put("GET /api/v1/webhooks/:id/deliveries", new Case(Expect.NOT_FOUND, "/api/v1/webhooks/" + aWebhook + "/deliveries", null));
        cases.put("POST /api/v1/webhooks/:id/deliveries/:deliveryId/retry", new Case(Expect.NOT_FOUND,
                "/api/v1/webhooks/" + aWebhook + "/deliveries/" + A_DELIVERY + "/retry", null));
        cases.put("GET /api/v1/channels/:id/senders", new Case(Expect.NOT_FOUND, "/api/v1/channels/" + aBot + "/senders", null));
        cases.put("GET /api/v1/pairings", new Case(Expect.OWN_ONLY, "/api/v1/pairings", null));
        cases.put("POST /api/v1/pairings/:code/approve", new Case(Expect.NOT_FOUND, "/api/v1/pairings/" + A_CODE + "/approve", null));
        cases.put("PATCH /api/v1/channels/:id", new Case(Expect.NOT_FOUND, "/api/v1/channels/" + aBot,
                new JsonObject().put("mode", "polling")));
        cases.put("DELETE /api/v1/channels/:id", new Case(Expect.NOT_FOUND, "/api/v1/channels/" + aBot, null));
        // Telegram's posts carry the channel's own secret, not a key: aWebhookTakesOnlyItsOwnChannelsSecret
        cases.put("POST /hooks/telegram/:id", new Case(Expect.NOT_TENANT, null, null));
        // Slack's posts are signed with the app's own signing secret: aSlackWebhookTakesOnlyRequestsSignedByItsOwnApp
        cases.put("POST /hooks/slack/:id", new Case(Expect.NOT_TENANT, null, null));
        // Meta's posts are signed with the app secret, its check carries the verify token: aWhatsAppWebhookTakesOnlyItsOwnAppsSignature
        cases.put("POST /hooks/whatsapp/:id", new Case(Expect.NOT_TENANT, null, null));
        cases.put("GET /hooks/whatsapp/:id", new Case(Expect.NOT_TENANT, null, null));
        cases.put("GET /api/v1/workspace", new Case(Expect.OWN_ONLY, "/api/v1/workspace", null));
        cases.put("GET " + files, new Case(Expect.NOT_FOUND, files + aFile, null));
        cases.put("PUT " + files, new Case(Expect.MAKES_OWN, files + aFile, new JsonObject().put("content", "b's own")));
        cases.put("DELETE " + files, new Case(Expect.NOT_FOUND, files + "notes/only-a-" + MARK + ".md", null));
        cases.put("GET /api/v1/tasks", new Case(Expect.OWN_ONLY, "/api/v1/tasks", null));
        cases.put("POST /api/v1/tasks", new Case(Expect.NOT_FOUND, "/api/v1/tasks", new JsonObject().put("chatId", aChat + "-never")
                .put("prompt", "x").put("scheduleType", "interval").put("scheduleValue", "3600000")));
        cases.put("GET /api/v1/tasks/:id", new Case(Expect.NOT_FOUND, "/api/v1/tasks/" + aTask, null));
        cases.put("PATCH /api/v1/tasks/:id", new Case(Expect.NOT_FOUND, "/api/v1/tasks/" + aTask,
                new JsonObject().put("status", "paused")));
        cases.put("DELETE /api/v1/tasks/:id", new Case(Expect.NOT_FOUND, "/api/v1/tasks/" + aTask, null));
        cases.put("GET /api/v1/tasks/:id/runs", new Case(Expect.NOT_FOUND, "/api/v1/tasks/" + aTask + "/runs", null));
        // No worker runs here, so B's own turn times out (504): what matters is that nothing of A's comes back.
        cases.put("POST /v1/chat/completions", new Case(Expect.MAKES_OWN, "/v1/chat/completions", new JsonObject()
                .put("model", "default").put("user", aChat).put("messages", new JsonArray()
                        .add(new JsonObject().put("role", "user").put("content", "what did A say?")))));
        cases.put("GET /v1/models", new Case(Expect.OWN_ONLY, "/v1/models", null));
        // A's bots: B has none of that id, so each of A's bot ids answers 404, whatever the route
        cases.put("GET /api/v1/bots", new Case(Expect.OWN_ONLY, "/api/v1/bots", null));
        cases.put("POST /api/v1/bots", new Case(Expect.MAKES_OWN, "/api/v1/bots", new JsonObject().put("id", "bown")));
        cases.put("GET /api/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/api/v1/bots/" + A_BOT, null));
        cases.put("PATCH /api/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/api/v1/bots/" + A_BOT,
                new JsonObject().put("name", "taken")));
        cases.put("DELETE /api/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/api/v1/bots/" + A_BOT, null));
        cases.put("GET /api/v1/bot-deletions/:botId", new Case(Expect.NOT_FOUND, "/api/v1/bot-deletions/" + A_GONE, null));
        // A's bot as an MCP server: B has no bot of that id (sessions bound to tenant, bot and key: McpServerTest)
        JsonObject initialize = new JsonObject().put("jsonrpc", "2.0").put("id", 0).put("method", "initialize")
                .put("params", new JsonObject().put("protocolVersion", "2025-11-25"));
        cases.put("POST /mcp/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/mcp/v1/bots/" + A_BOT, initialize));
        cases.put("GET /mcp/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/mcp/v1/bots/" + A_BOT, null));
        cases.put("DELETE /mcp/v1/bots/:botId", new Case(Expect.NOT_FOUND, "/mcp/v1/bots/" + A_BOT, null));
        // every bot route, on A's bot: the case of the same route for the default bot, under A's bot's prefix
        Map<String, Case> scoped = new LinkedHashMap<>();
        cases.forEach((route, c) -> {
            String method = route.substring(0, route.indexOf(' '));
            String template = route.substring(route.indexOf(' ') + 1);
            if (template.startsWith("/api/v1/") && !template.startsWith("/api/v1/bots") && !template.startsWith("/api/v1/bot-")
                    && c.expect() != Expect.NOT_TENANT) {
                scoped.put(method + " /api/v1/bots/:botId" + template.substring("/api/v1".length()),
                        new Case(Expect.NOT_FOUND, "/api/v1/bots/" + A_BOT + c.path().substring("/api/v1".length()), c.body()));
            }
        });
        cases.putAll(scoped);
        // The operator console: its page is static; its API takes a tenant admin key for its own tenant only, so each of
        // A's ids under /console/api/tenants/iso-a/... is "not found" to B. The operator's parts refuse tenant keys
        // (theOperatorPlaneRefusesTenantKeys); the live stream never ends, its tenant is checked in ConsoleApiTest.
        for (String page : List.of("GET /console", "GET /console/", "GET /console/console.js", "GET /console/console.css",
                "GET /console/api/events", "GET /console/api/cluster", "GET /console/api/tenants",
                "POST /console/api/tenants/:tenant/suspend", "POST /console/api/tenants/:tenant/resume")) {
            cases.put(page, new Case(Expect.NOT_TENANT, null, null));
        }
        cases.put("GET /console/api/session", new Case(Expect.OWN_ONLY, "/console/api/session", null));
        String console = "/console/api/tenants/iso-a";
        String consoleBot = console + "/bots/main";
        cases.put("GET /console/api/tenants/:tenant/bots", new Case(Expect.NOT_FOUND, console + "/bots", null));
        cases.put("GET /console/api/tenants/:tenant/audit", new Case(Expect.NOT_FOUND, console + "/audit", null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/chats", new Case(Expect.NOT_FOUND, consoleBot + "/chats", null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/chats/:channel/:chatKey", new Case(Expect.NOT_FOUND,
                consoleBot + "/chats/api/" + aChat, null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/dead-letters", new Case(Expect.NOT_FOUND,
                consoleBot + "/dead-letters", null));
        cases.put("POST /console/api/tenants/:tenant/bots/:bot/dead-letters/:id/replay", new Case(Expect.NOT_FOUND,
                consoleBot + "/dead-letters/" + aDeadLetter + "/replay", null));
        cases.put("DELETE /console/api/tenants/:tenant/bots/:bot/dead-letters/:id", new Case(Expect.NOT_FOUND,
                consoleBot + "/dead-letters/" + aDeadLetter, null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/tasks", new Case(Expect.NOT_FOUND, consoleBot + "/tasks", null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/tasks/:id/runs", new Case(Expect.NOT_FOUND,
                consoleBot + "/tasks/" + aTask + "/runs", null));
        cases.put("GET /console/api/tenants/:tenant/bots/:bot/sandbox-runs", new Case(Expect.NOT_FOUND,
                consoleBot + "/sandbox-runs", null));
        for (String route : List.of("POST /admin/v1/tenants", "GET /admin/v1/tenants", "GET /admin/v1/tenants/:id",
                "PATCH /admin/v1/tenants/:id", "DELETE /admin/v1/tenants/:id", "GET /admin/v1/tenants/:id/deletion",
                "GET /admin/v1/tenants/:id/keys", "POST /admin/v1/tenants/:id/keys",
                "DELETE /admin/v1/tenants/:id/keys/:keyId", "POST /admin/v1/tenants/:id/keys/:keyId/rotate",
                "GET /admin/v1/usage", "GET /admin/v1/cluster")) {
            cases.put(route, new Case(Expect.NOT_TENANT, null, null));
        }
        return cases;
    }

    @Test
    void everyRouteAnswersTenantBOnTenantAsIdsWithNothingOfAs() throws Exception {
        Map<String, Case> cases = cases();
        Set<String> registered = new TreeSet<>();
        node.routes().forEach(route -> registered.add(route.getKey() + " " + route.getValue()));
        // a route nobody wrote a case for fails here: add its case above
        assertThat(cases.keySet()).as("routes without an isolation case").containsAll(registered);
        List<String> failures = new ArrayList<>();
        // What names A's things first, what makes B's own last: B's own chat of the same name must not
        // stand in for A's in a later case.
        List<String> ordered = registered.stream()
                .sorted(java.util.Comparator.comparing((String route) -> cases.get(route).expect().ordinal())).toList();
        for (String route : ordered) {
            Case c = cases.get(route);
            if (c.expect() == Expect.NOT_TENANT) {
                continue;
            }
            String method = route.substring(0, route.indexOf(' '));
            HttpResponse<String> answer;
            String body;
            if (c.path().equals("/api/v1/export")) {
                HttpResponse<byte[]> archive = client.bytes(c.path(), bKey);
                answer = null;
                body = unzipped(archive.body());
                if (archive.statusCode() != 200 || !body.contains("\"format\"")) {
                    failures.add(route + " -> " + archive.statusCode() + ": not B's archive");
                    continue;
                }
            } else {
                answer = call(method, c.path(), bKey, c.body());
                body = answer.body();
            }
            // B's own input may come back (an id it named, in an error or its own audit row); A's contents never.
            // (B's audit trail lists B's own calls, A's key id among their parameters; an event of A's key would
            // name it as the actor.)
            boolean leaks = A_CONTENTS.stream().anyMatch(body::contains)
                    || body.contains("\"actor\":{\"keyId\":\"" + aKeyId + "\"")
                    || body.contains("\"keyId\" : \"" + aKeyId + "\"")
                    || (body.contains(aKeyId) && !c.path().contains(aKeyId) && !ECHOES_B.contains(c.path()));
            int status = answer == null ? 200 : answer.statusCode();
            boolean fine = switch (c.expect()) {
                case NOT_FOUND -> status == 404;
                case OWN_ONLY -> status == 200;
                case MAKES_OWN -> status != 403 && status != 404;
                case NOT_TENANT -> true;
            };
            if (!fine || leaks) {
                String found = A_CONTENTS.stream().filter(body::contains).findFirst().orElse(aKeyId);
                int at = Math.max(0, body.indexOf(found) - 150);
                failures.add(route + " -> " + status + (leaks ? " LEAKS A's data (" + found + ")" : "") + ": "
                        + body.substring(leaks ? at : 0, Math.min(body.length(), (leaks ? at : 0) + 300)));
            }
        }
        assertThat(failures).as("routes that answered B with A's things").isEmpty();
        assertANeverChanged();
    }

    @Test
    void theOperatorPlaneRefusesTenantKeys() throws Exception {
        for (String route : List.of("GET /admin/v1/tenants", "GET /admin/v1/tenants/iso-a", "GET /admin/v1/tenants/iso-a/keys",
                "GET /admin/v1/usage?tenant=iso-a", "GET /api/v1/cluster", "GET /admin/v1/cluster", "GET /metrics")) {
            String[] parts = route.split(" ");
            assertThat(call(parts[0], parts[1], bKey, null).statusCode()).as(route).isEqualTo(401);
            assertThat(call(parts[0], parts[1], aKey, null).statusCode()).as(route).isEqualTo(401);
            assertThat(call(parts[0], parts[1], null, null).statusCode()).as(route).isEqualTo(401);
            assertThat(call(parts[0], parts[1], OPERATOR, null).statusCode()).as(route).isEqualTo(200);
        }
        // the console's operator parts: a tenant key signs in there (as its tenant) but is refused them
        for (String route : List.of("GET /console/api/cluster", "GET /console/api/tenants", "POST /console/api/tenants/iso-a/suspend",
                "POST /console/api/tenants/iso-b/resume")) {
            String[] parts = route.split(" ");
            assertThat(call(parts[0], parts[1], bKey, null).statusCode()).as(route).isEqualTo(403);
            assertThat(call(parts[0], parts[1], aKey, null).statusCode()).as(route).isEqualTo(403);
            assertThat(call(parts[0], parts[1], null, null).statusCode()).as(route).isEqualTo(401);
        }
        assertThat(call("GET", "/console/api/cluster", OPERATOR, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/console/api/tenants", OPERATOR, null).statusCode()).isEqualTo(200);
    }

    @Test
    void aWebhookTakesOnlyItsOwnChannelsSecret() throws Exception {
        // given a Telegram account of A's and one of B's, both in webhook mode, each with its own secret
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        long aHook = result(store.register(BotRef.main("iso-a"), "telegram", "hook_a", "124:" + MARK + "-hook", "http://127.0.0.1:1")).id();
        long bHook = result(store.register(BotRef.main("iso-b"), "telegram", "hook_b", "125:B-hook-0123456789", "http://127.0.0.1:1")).id();
        String aSecret = io.clawfleet.gateway.telegram.TelegramWebhook.newSecret();
        String bSecret = io.clawfleet.gateway.telegram.TelegramWebhook.newSecret();
        result(store.useWebhook(BotRef.main("iso-a"), aHook, io.clawfleet.gateway.telegram.TelegramWebhook.digest(aSecret), "https://x/a"));
        result(store.useWebhook(BotRef.main("iso-b"), bHook, io.clawfleet.gateway.telegram.TelegramWebhook.digest(bSecret), "https://x/b"));
        String update = new JsonObject().put("update_id", 77).put("message", new JsonObject().put("message_id", 1).put("date", 0)
                .put("chat", new JsonObject().put("id", 4242).put("type", "private")).put("text", "from B")).encode();
        // when B posts to A's webhook: with its own secret, with its API key, with nothing / then 401, nothing taken
        assertThat(hook(aHook, bSecret, null, update).statusCode()).isEqualTo(401);
        assertThat(hook(aHook, null, bKey, update).statusCode()).isEqualTo(401);
        assertThat(hook(aHook, null, null, update).statusCode()).isEqualTo(401);
        // and A's secret does not open B's webhook either
        assertThat(hook(bHook, aSecret, null, update).statusCode()).isEqualTo(401);
        assertThat(value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key IN ($1, $2)",
                aHook + ":4242", bHook + ":4242")).isEqualTo(0L);
        // each secret opens its own webhook only, into its own tenant's chat
        assertThat(hook(bHook, bSecret, null, update).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", bHook + ":4242"))
                .isEqualTo("iso-b");
        assertThat(hook(aHook, aSecret, null, update).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", aHook + ":4242"))
                .isEqualTo("iso-a");
    }

    @Test
    void aSlackWebhookTakesOnlyRequestsSignedByItsOwnApp() throws Exception {
        // given a Slack app of A's and one of B's, each with its own signing secret
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        String aSecret = "aSigningSecret0123456789" + MARK.replaceAll("[^A-Za-z0-9]", "");
        String bSecret = "bSigningSecret0123456789abcdef";
        long aApp = result(store.registerSlack(BotRef.main("iso-a"), "app_a", "UAAA", "xoxb-a-" + MARK, aSecret, "http://127.0.0.1:1",
                "https://x/hooks/slack/")).id();
        long bApp = result(store.registerSlack(BotRef.main("iso-b"), "app_b", "UBBB", "xoxb-b-0123456789", bSecret, "http://127.0.0.1:1",
                "https://x/hooks/slack/")).id();
        String event = new JsonObject().put("type", "event_callback").put("event_id", "Ev1").put("event", new JsonObject()
                .put("type", "message").put("channel", "D4242").put("channel_type", "im").put("user", "U4242").put("text", "from B")
                .put("ts", "1700000000.000100")).encode();
        // when B signs a post to A's webhook with its own secret, or sends its API key, or nothing / then 401, nothing taken
        assertThat(slackHook(aApp, bSecret, null, event).statusCode()).isEqualTo(401);
        assertThat(slackHook(aApp, null, bKey, event).statusCode()).isEqualTo(401);
        // and A's secret does not open B's webhook either; B cannot change or remove A's app
        assertThat(slackHook(bApp, aSecret, null, event).statusCode()).isEqualTo(401);
        assertThat(value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key IN ($1, $2)",
                aApp + ":D4242", bApp + ":D4242")).isEqualTo(0L);
        assertThat(call("PATCH", "/api/v1/channels/" + aApp, bKey, new JsonObject().put("dmPolicy", "pairing")).statusCode())
                .isEqualTo(404);
        assertThat(call("DELETE", "/api/v1/channels/" + aApp, bKey, null).statusCode()).isEqualTo(404);
        // each secret opens its own webhook only, into its own tenant's chat
        assertThat(slackHook(bApp, bSecret, null, event).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", bApp + ":D4242"))
                .isEqualTo("iso-b");
        assertThat(slackHook(aApp, aSecret, null, event).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", aApp + ":D4242"))
                .isEqualTo("iso-a");
        assertThat(value("SELECT dm_policy FROM channel_bots WHERE id = $1", aApp)).isEqualTo("open");
    }

    @Test
    void aWhatsAppWebhookTakesOnlyItsOwnAppsSignature() throws Exception {
        // given a WhatsApp number of A's and one of B's, each with its own app secret and verify token
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        String aSecret = "aAppSecret0123456789" + MARK.replaceAll("[^A-Za-z0-9]", "");
        String bSecret = "bAppSecret0123456789abcdef";
        long aNumber = result(store.registerWhatsApp(BotRef.main("iso-a"), "+1 555 0101", "5550101", "EAAa" + MARK, aSecret,
                io.clawfleet.gateway.telegram.TelegramWebhook.digest("a-verify"), "http://127.0.0.1:1", "https://x/hooks/whatsapp/")).id();
        long bNumber = result(store.registerWhatsApp(BotRef.main("iso-b"), "+1 555 0102", "5550102", "EAAb0123456789", bSecret,
                io.clawfleet.gateway.telegram.TelegramWebhook.digest("b-verify"), "http://127.0.0.1:1", "https://x/hooks/whatsapp/")).id();
        // B's number registered by A, or A's by B: a conflict, nothing changed
        assertThat(result(store.registerWhatsApp(BotRef.main("iso-b"), "+1 555 0101", "5550101", "EAAb0123456789", bSecret,
                io.clawfleet.gateway.telegram.TelegramWebhook.digest("b-verify"), "http://127.0.0.1:1", "https://x/hooks/whatsapp/")
                .map(bot -> "registered").otherwise(e -> e.getMessage()))).contains("already registered");
        java.util.function.LongFunction<String> notification = number -> new JsonObject().put("object", "whatsapp_business_account")
                .put("entry", new JsonArray().add(new JsonObject().put("id", "1").put("changes", new JsonArray().add(new JsonObject()
                        .put("field", "messages").put("value", new JsonObject().put("metadata", new JsonObject()
                                .put("phone_number_id", number == aNumber ? "5550101" : "5550102"))
                                .put("messages", new JsonArray().add(new JsonObject().put("from", "15554242").put("id", "wamid.iso" + number)
                                        .put("type", "text").put("text", new JsonObject().put("body", "from B"))))))))).encode();
        // when B signs a post to A's webhook with its own secret, or sends its API key, or passes Meta's check with its
        // verify token / then 401 and 403, nothing taken
        assertThat(whatsappHook(aNumber, bSecret, null, notification.apply(aNumber)).statusCode()).isEqualTo(401);
        assertThat(whatsappHook(aNumber, null, bKey, notification.apply(aNumber)).statusCode()).isEqualTo(401);
        assertThat(whatsappHook(bNumber, aSecret, null, notification.apply(bNumber)).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/hooks/whatsapp/" + aNumber + "?hub.mode=subscribe&hub.verify_token=b-verify&hub.challenge=7", bKey, null)
                .statusCode()).isEqualTo(403);
        assertThat(value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key IN ($1, $2)",
                aNumber + ":15554242", bNumber + ":15554242")).isEqualTo(0L);
        assertThat(call("DELETE", "/api/v1/channels/" + aNumber, bKey, null).statusCode()).isEqualTo(404);
        // each signature opens its own webhook only, into its own tenant's chat
        assertThat(whatsappHook(bNumber, bSecret, null, notification.apply(bNumber)).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", bNumber + ":15554242"))
                .isEqualTo("iso-b");
        assertThat(whatsappHook(aNumber, aSecret, null, notification.apply(aNumber)).statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", aNumber + ":15554242"))
                .isEqualTo("iso-a");
    }

    @Test
    void aSignedWebhookTakesOnlyItsOwnSecret() throws Exception {
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        String aSecret = io.clawfleet.gateway.webhooks.StandardWebhooks.newSecret();
        String bSecret = io.clawfleet.gateway.webhooks.StandardWebhooks.newSecret();
        long aHook = result(store.registerInboundWebhook(BotRef.main("iso-a"), "a", aSecret, "https://x/hooks/inbound/")).id();
        long bHook = result(store.registerInboundWebhook(BotRef.main("iso-b"), "b", bSecret, "https://x/hooks/inbound/")).id();
        String body = new JsonObject().put("chatId", "c42").put("text", "from B").encode();
        // B's secret on A's hook, B's API key, A's secret on B's: 401, nothing taken
        assertThat(inboundHook(aHook, bSecret, null, "e1", body).statusCode()).isEqualTo(401);
        assertThat(inboundHook(aHook, null, bKey, "e1", body).statusCode()).isEqualTo(401);
        assertThat(inboundHook(bHook, aSecret, null, "e1", body).statusCode()).isEqualTo(401);
        assertThat(value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key IN ($1, $2)",
                aHook + ":c42", bHook + ":c42")).isEqualTo(0L);
        // each secret opens its own hook, into its own tenant's chat
        assertThat(inboundHook(bHook, bSecret, null, "e1", body).statusCode()).isEqualTo(202);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", bHook + ":c42"))
                .isEqualTo("iso-b");
        assertThat(inboundHook(aHook, aSecret, null, "e1", body).statusCode()).isEqualTo(202);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1", aHook + ":c42"))
                .isEqualTo("iso-a");
    }

    @Test
    void aDiscordReplyGoesOnlyThroughItsOwnTenantsBot() throws Exception {
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        var aBot = result(store.register(BotRef.main("iso-a"), "discord", "a_bot", "1100000000000000077",
                "MTk4NjIyNDgzNDcxOTI1MjQ4.isolation-a." + java.util.UUID.randomUUID(), "http://127.0.0.1:9/api/v10"));
        var api = new io.clawfleet.gateway.discord.DiscordApi(vertx, new io.clawfleet.gateway.delivery.PlatformHttp(vertx,
                new io.clawfleet.shared.security.EgressGuard(List.of("127.0.0.1"), host -> io.vertx.core.Future.succeededFuture(
                        List.of(java.net.InetAddress.getLoopbackAddress())))), 1_000);
        var sender = new io.clawfleet.gateway.discord.DiscordSender(api, new io.clawfleet.gateway.delivery.ChannelAccounts(store));
        // B's reply naming A's bot in its chat key: refused for good, nothing sent through A's bot
        Throwable refused = io.clawfleet.shared.testing.Await.failure(sender.send("iso-b", aBot.id() + ":2200000000000000001", "from B",
                0, n -> io.vertx.core.Future.succeededFuture()));
        assertThat(refused).isInstanceOf(io.clawfleet.gateway.delivery.DeliveryException.class).hasMessageContaining("no longer registered");
        assertThat(((io.clawfleet.gateway.delivery.DeliveryException) refused).retryable()).isFalse();
        // A's own reply goes to A's bot (whose API is unreachable here: a failure to connect, to be retried)
        Throwable own = io.clawfleet.shared.testing.Await.failure(sender.send("iso-a", aBot.id() + ":2200000000000000001", "from A",
                0, n -> io.vertx.core.Future.succeededFuture()));
        assertThat(own).isInstanceOf(io.clawfleet.gateway.delivery.DeliveryException.class).hasMessageNotContaining("no longer registered");
        assertThat(((io.clawfleet.gateway.delivery.DeliveryException) own).retryable()).isTrue();
    }

    @Test
    void aDiscordInteractionTakesOnlyItsOwnApplicationsSignature() throws Exception {
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        java.security.KeyPair aKey = java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        java.security.KeyPair bKeyPair = java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        var aBot = result(store.register(BotRef.main("iso-a"), "discord", "a_i", "1100000000000000081",
                "MTk4NjIyNDgzNDcxOTI1MjQ4.interactions-a." + java.util.UUID.randomUUID(), "http://127.0.0.1:9/api/v10"));
        var bBot = result(store.register(BotRef.main("iso-b"), "discord", "b_i", "1100000000000000082",
                "MTk4NjIyNDgzNDcxOTI1MjQ4.interactions-b." + java.util.UUID.randomUUID(), "http://127.0.0.1:9/api/v10"));
        result(store.setInteractionsKey(BotRef.main("iso-a"), aBot.id(), rawHex(aKey)));
        result(store.setInteractionsKey(BotRef.main("iso-b"), bBot.id(), rawHex(bKeyPair)));
        String ask = io.clawfleet.testkit.FakeDiscord.askCommand("5500000000000000091", "2200000000000000091", null,
                "4400000000000000091", "from B").encode();
        String now = Long.toString(System.currentTimeMillis() / 1000);
        // B's application's signature on A's endpoint, B's API key: 401, nothing taken
        assertThat(discordInteraction(aBot.id(), ask, now, io.clawfleet.testkit.FakeDiscord.sign(bKeyPair.getPrivate(), now, ask), null)
                .statusCode()).isEqualTo(401);
        assertThat(discordInteraction(aBot.id(), ask, now, null, bKey).statusCode()).isEqualTo(401);
        assertThat(value("SELECT count(*) FROM inbox WHERE idempotency_key = 'i5500000000000000091'")).isEqualTo(0L);
        // each application's signature opens its own endpoint, into its own tenant's chat
        assertThat(discordInteraction(bBot.id(), ask, now, io.clawfleet.testkit.FakeDiscord.sign(bKeyPair.getPrivate(), now, ask), null)
                .statusCode()).isEqualTo(200);
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE i.idempotency_key = "
                + "'i5500000000000000091'")).isEqualTo("iso-b");
    }

    private static String rawHex(java.security.KeyPair pair) {
        byte[] der = pair.getPublic().getEncoded();
        return java.util.HexFormat.of().formatHex(der, der.length - 32, der.length);
    }

    private HttpResponse<String> discordInteraction(long id, String body, String timestamp, String signature, String key) throws Exception {
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/hooks/discord/" + id))
                .header("content-type", "application/json").header("X-Signature-Timestamp", timestamp)
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (signature != null) {
            request.header("X-Signature-Ed25519", signature);
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return java.net.http.HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aWebChatOpensOnlyItsOwnAccountsChats() throws Exception {
        ChannelBotStore store = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        String aSecret = io.clawfleet.gateway.webchat.WebChat.newSecret();
        String bSecret = io.clawfleet.gateway.webchat.WebChat.newSecret();
        var aAccount = result(store.registerWebChat(BotRef.main("iso-a"), "a", io.clawfleet.gateway.webchat.WebChat.newPublicPart(),
                aSecret, List.of("*"), true));
        var bAccount = result(store.registerWebChat(BotRef.main("iso-b"), "b", io.clawfleet.gateway.webchat.WebChat.newPublicPart(),
                bSecret, List.of("*"), true));
        String aKey = io.clawfleet.gateway.webchat.WebChat.publishableKey(aAccount);
        String bKeyOfChat = io.clawfleet.gateway.webchat.WebChat.publishableKey(bAccount);
        long exp = System.currentTimeMillis() / 1000 + 600;
        // B's secret on A's key, A's secret on B's key: closed at the hello, nothing read or taken
        assertThat(webChatHello(aKey, io.clawfleet.gateway.webchat.EndUserTokens.mint(bSecret, "u1", null, exp))
                .getString("closed")).isEqualTo("4401");
        assertThat(webChatHello(bKeyOfChat, io.clawfleet.gateway.webchat.EndUserTokens.mint(aSecret, "u1", null, exp))
                .getString("closed")).isEqualTo("4401");
        // B's API key is not a web chat token either
        assertThat(webChatHello(aKey, bKey).getString("closed")).isEqualTo("4401");
        // A's own token opens A's chat, into A's tenant; B's user of the same id sees nothing of it
        JsonObject a = webChatHello(aKey, io.clawfleet.gateway.webchat.EndUserTokens.mint(aSecret, "u1", null, exp));
        assertThat(a.getString("ready")).isEqualTo("u1");
        assertThat(value("SELECT c.tenant_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1",
                aAccount.id() + ":u1")).isEqualTo("iso-a");
        JsonObject b = webChatHello(bKeyOfChat, io.clawfleet.gateway.webchat.EndUserTokens.mint(bSecret, "u1", null, exp));
        assertThat(b.getJsonArray("history")).as("B's user sees nothing of A's chat").isEmpty();
        assertThat(value("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1 AND c.tenant_id = 'iso-b'",
                aAccount.id() + ":u1")).isEqualTo(0L);
    }

    /**
     * Opens a web chat with {@code token}, and when it is taken sends one message: what came back ({@code closed} with
     * the close code, or {@code ready} with the user id and {@code history}).
     */
    private JsonObject webChatHello(String publishableKey, String token) throws Exception {
        io.vertx.core.http.WebSocketClient ws = vertx.createWebSocketClient();
        try {
            io.vertx.core.http.WebSocket socket = result(ws.connect(new io.vertx.core.http.WebSocketConnectOptions()
                    .setHost("127.0.0.1").setPort(java.net.URI.create(base).getPort()).setURI("/webchat/v1/ws?key=" + publishableKey)));
            java.util.concurrent.BlockingQueue<JsonObject> frames = new java.util.concurrent.LinkedBlockingQueue<>();
            java.util.concurrent.CompletableFuture<Short> closed = new java.util.concurrent.CompletableFuture<>();
            socket.textMessageHandler(text -> frames.add(new JsonObject(text)));
            socket.closeHandler(v -> closed.complete(socket.closeStatusCode()));
            result(socket.writeTextMessage(new JsonObject().put("type", "hello").put("token", token).encode()));
            JsonObject seen = new JsonObject();
            for (long end = System.nanoTime() + 20_000_000_000L; System.nanoTime() < end; ) {
                if (closed.isDone()) {
                    return seen.put("closed", String.valueOf(closed.get()));
                }
                JsonObject frame = frames.poll(100, java.util.concurrent.TimeUnit.MILLISECONDS);
                if (frame == null) {
                    continue;
                }
                if ("ready".equals(frame.getString("type"))) {
                    seen.put("ready", frame.getString("userId"));
                } else if ("history".equals(frame.getString("type"))) {
                    seen.put("history", frame.getJsonArray("messages"));
                    result(socket.writeTextMessage(new JsonObject().put("type", "message").put("id", "iso-1").put("text", "hi")
                            .encode()));
                } else if ("ack".equals(frame.getString("type"))) {
                    result(socket.close());
                    return seen;
                }
            }
            throw new AssertionError("the web chat neither closed nor took the message: " + seen);
        } finally {
            result(ws.close());
        }
    }

    private HttpResponse<String> inboundHook(long id, String secret, String key, String messageId, String body) throws Exception {
        long timestamp = System.currentTimeMillis() / 1000;
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/hooks/inbound/" + id))
                .header("content-type", "application/json").header("webhook-id", messageId)
                .header("webhook-timestamp", Long.toString(timestamp)).POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (secret != null) {
            request.header("webhook-signature", io.clawfleet.gateway.webhooks.StandardWebhooks.sign(secret, messageId, timestamp, body));
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return java.net.http.HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> whatsappHook(long id, String appSecret, String key, String body) throws Exception {
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/hooks/whatsapp/" + id))
                .header("content-type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (appSecret != null) {
            request.header("X-Hub-Signature-256", io.clawfleet.testkit.FakeWhatsApp.sign(appSecret, io.vertx.core.buffer.Buffer.buffer(body)));
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return java.net.http.HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> slackHook(long id, String signingSecret, String key, String body) throws Exception {
        String timestamp = Long.toString(System.currentTimeMillis() / 1000);
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/hooks/slack/" + id))
                .header("content-type", "application/json").header("X-Slack-Request-Timestamp", timestamp)
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (signingSecret != null) {
            request.header("X-Slack-Signature", io.clawfleet.testkit.FakeSlack.sign(signingSecret, timestamp,
                    io.vertx.core.buffer.Buffer.buffer(body)));
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return java.net.http.HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> hook(long id, String secret, String key, String body) throws Exception {
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/hooks/telegram/" + id))
                .header("content-type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (secret != null) {
            request.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return java.net.http.HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A's things after B's calls: the chat normal, the task active, the file A's, its keys working, the bot and the rest there. */
    private void assertANeverChanged() throws Exception {
        assertThat(value("SELECT count(*) FROM chats WHERE tenant_id = 'iso-a' AND chat_key = $1 AND role = 'normal'", aChat))
                .isEqualTo(2L);
        assertThat(value("SELECT status FROM tasks WHERE id = $1", aTask)).isEqualTo("active");
        assertThat(value("SELECT content FROM workspace_files WHERE tenant_id = 'iso-a' AND bot_id = 'main' AND path = $1", aFile))
                .isEqualTo("file " + MARK);
        assertThat(value("SELECT count(*) FROM api_keys WHERE tenant_id = 'iso-a' AND revoked_at IS NULL")).isEqualTo(2L);
        assertThat(value("SELECT count(*) FROM channel_bots WHERE id = $1", aBot)).isEqualTo(1L);
        assertThat(value("SELECT enabled FROM webhook_endpoints WHERE id = $1 AND tenant_id = 'iso-a'", aWebhook)).isEqualTo(false);
        assertThat(value("SELECT status FROM webhook_deliveries WHERE id = $1", A_DELIVERY)).isEqualTo("failed");
        assertThat(value("SELECT mode FROM channel_bots WHERE id = $1", aBot)).isEqualTo("polling");
        assertThat(value("SELECT dm_policy FROM channel_bots WHERE id = $1", aBot)).isEqualTo("open");
        assertThat(value("SELECT status FROM channel_senders WHERE code = $1", A_CODE)).isEqualTo("pending");
        assertThat(value("SELECT decision FROM pending_approvals WHERE approval_id = $1", aApproval)).isNull();
        assertThat(value("SELECT replayed_at FROM dead_letters WHERE id = $1", aDeadLetter)).isNull();
        assertThat(value("SELECT settings ->> 'autonomy' FROM bots WHERE tenant_id = 'iso-a' AND id = 'main'")).isNull();
        assertThat(value("SELECT name FROM bots WHERE tenant_id = 'iso-a' AND id = $1", A_BOT)).isEqualTo("bot " + MARK);
        assertThat(value("SELECT content FROM workspace_files WHERE tenant_id = 'iso-a' AND bot_id = $1 AND path = $2", A_BOT,
                aFile)).isEqualTo("bot file " + MARK);
        assertThat(call("GET", "/api/v1/settings", aKey, null).statusCode()).isEqualTo(200);
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return client.call(method, path, key, body);
    }

    /** Every entry of a zip archive, as text, one after another. */
    private static String unzipped(byte[] zip) throws Exception {
        StringBuilder text = new StringBuilder();
        try (var in = new java.util.zip.ZipInputStream(new java.io.ByteArrayInputStream(zip))) {
            for (var entry = in.getNextEntry(); entry != null; entry = in.getNextEntry()) {
                text.append(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)).append('\n');
            }
        }
        return text.toString();
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
