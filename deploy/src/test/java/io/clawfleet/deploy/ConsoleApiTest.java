package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator console's API (issue 17) on a real node: who may sign in and what each sees; the operator sees the
 * fleet and every tenant's metadata but no chat content unless {@code console.operatorContent} allows it; a tenant
 * admin sees its own tenant only (another tenant's ids are "not found", its dead letters cannot be touched); every
 * view of content and every change is in the tenant's audit trail; the live stream sends the cluster and the tenant's
 * summary; the page is served with a strict content security policy. The browser test (ConsoleBrowserIT) drives the
 * page itself.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ConsoleApiTest {

    private static final String KEY = "console-tenant-key-0123456789";
    private static final String OPERATOR = "console-operator-key-0123456789abcdef";

    private MockedNode fixture;
    private MockLlmServer model;
    private NodeRuntime node;
    private NodeRuntime readingNode;
    private String base;
    private ApiChat tenant;
    private String otherKey;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        Map<String, String> settings = new HashMap<>(Map.of("operatorKey", OPERATOR, "llm.maxRetries", "1",
                "llm.retryBackoffMs", "10", "console.liveMs", "200"));
        settings.put("allowShell", "true");
        fixture = MockedNode.start("gateway,worker,sandbox", KEY, settings);
        model = fixture.model;
        node = fixture.node;
        base = fixture.base;
        tenant = fixture.api;
        JsonObject created = new JsonObject(call("POST", "/admin/v1/tenants", OPERATOR,
                new JsonObject().put("id", "other").put("name", "Other Ltd")).body());
        otherKey = created.getJsonObject("apiKey").getString("key");
        // a second gateway on the same database whose operator may read content
        settings.putAll(Map.of("apiKey", KEY, "llm.baseUrl", fixture.modelUrl(), "llm.model", "mock",
                "console.operatorContent", "true", "nodeId", "reading-gateway"));
        ClawfleetConfig reading = TestNodes.config("gateway", settings);
        readingNode = TestNodes.start(reading, fixture.db, Roles.of(reading));
    }

    @AfterAll
    void stop() {
        if (readingNode != null) {
            result(readingNode.stop(), Duration.ofSeconds(60));
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void thePageIsServedWithAStrictContentSecurityPolicy() throws Exception {
        for (String path : List.of("/console", "/console/", "/console/console.js", "/console/console.css")) {
            HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(base + path)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(page.statusCode()).as(path).isEqualTo(200);
            assertThat(page.headers().firstValue("content-security-policy").orElse(""))
                    .contains("default-src 'none'", "script-src 'self'", "frame-ancestors 'none'");
            assertThat(page.headers().firstValue("x-frame-options")).hasValue("DENY");
            assertThat(page.headers().firstValue("x-content-type-options")).hasValue("nosniff");
            assertThat(page.headers().firstValue("referrer-policy")).hasValue("no-referrer");
        }
        String html = http.send(HttpRequest.newBuilder(URI.create(base + "/console")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertThat(html).contains("/console/console.js").doesNotContainIgnoringCase("<script>").doesNotContain("style=\"");
    }

    @Test
    void theOperatorOrATenantAdminForAllBotsSignsInAndNoOneElse() throws Exception {
        JsonObject operator = new JsonObject(call("GET", "/console/api/session", OPERATOR, null).body());
        assertThat(operator.getString("role")).isEqualTo("operator");
        assertThat(operator.getBoolean("contentVisible")).isFalse();
        JsonObject admin = new JsonObject(call("GET", "/console/api/session", KEY, null).body());
        assertThat(admin.getString("role")).isEqualTo("tenant");
        assertThat(admin.getJsonObject("tenant").getString("id")).isEqualTo("default");
        assertThat(admin.getBoolean("contentVisible")).isTrue();

        String reader = newKey(KEY, new JsonObject().put("name", "reader").put("scopes", new JsonArray().add("read")));
        String oneBot = newKey(KEY, new JsonObject().put("name", "one-bot").put("scopes", new JsonArray().add("admin"))
                .put("botIds", new JsonArray().add("main")));
        assertThat(call("GET", "/console/api/session", reader, null).statusCode()).isEqualTo(403);
        assertThat(call("GET", "/console/api/session", oneBot, null).statusCode()).isEqualTo(403);
        assertThat(call("GET", "/console/api/session", "not-a-key-0123456789", null).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/console/api/session", null, null).statusCode()).isEqualTo(401);
        HttpResponse<String> refused = call("GET", "/console/api/session", reader, null);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("message")).contains("admin");
    }

    @Test
    void aTenantAdminSeesItsOwnTenantOnly() throws Exception {
        String chat = "isolated-" + UUID.randomUUID();
        tenant.ask(chat, "mine only");
        long letter = deadLetter("lost-" + UUID.randomUUID(), "a letter of the default tenant");

        assertThat(call("GET", "/console/api/cluster", otherKey, null).statusCode()).isEqualTo(403);
        assertThat(call("GET", "/console/api/tenants", otherKey, null).statusCode()).isEqualTo(403);
        assertThat(call("POST", "/console/api/tenants/default/suspend", otherKey, null).statusCode()).isEqualTo(403);
        for (String path : List.of("/console/api/tenants/default/bots", "/console/api/tenants/default/audit",
                "/console/api/tenants/default/bots/main/chats", "/console/api/tenants/default/bots/main/chats/api/" + chat,
                "/console/api/tenants/default/bots/main/dead-letters", "/console/api/tenants/default/bots/main/tasks",
                "/console/api/tenants/default/bots/main/sandbox-runs")) {
            HttpResponse<String> answer = call("GET", path, otherKey, null);
            assertThat(answer.statusCode()).as(path).isEqualTo(404);
            assertThat(answer.body()).doesNotContain(chat).doesNotContain("mine only");
        }
        assertThat(call("POST", "/console/api/tenants/default/bots/main/dead-letters/" + letter + "/replay", otherKey, null)
                .statusCode()).isEqualTo(404);
        assertThat(call("DELETE", "/console/api/tenants/default/bots/main/dead-letters/" + letter, otherKey, null)
                .statusCode()).isEqualTo(404);
        // the other tenant's own bot cannot reach the default tenant's letter either
        assertThat(call("DELETE", "/console/api/tenants/other/bots/main/dead-letters/" + letter, otherKey, null)
                .statusCode()).isEqualTo(404);
        assertThat(deadLetters(KEY, "default").stream().map(JsonObject.class::cast).map(d -> d.getLong("id")))
                .contains(letter);
        // its own tenant: nothing of the default tenant's
        assertThat(call("GET", "/console/api/tenants/other/bots/main/chats", otherKey, null).body()).doesNotContain(chat);
        assertThat(call("GET", "/console/api/tenants/other/audit", otherKey, null).body()).doesNotContain(chat);
        // its stream is about itself, whatever it asks for
        Map<String, JsonObject> events = events(otherKey, "?tenant=default", List.of("tenant"));
        assertThat(events.get("tenant").getString("tenant")).isEqualTo("other");
    }

    @Test
    void theOperatorSeesMetadataButNoContentUnlessAllowedAndEveryViewIsAudited() throws Exception {
        String chat = "private-" + UUID.randomUUID();
        assertThat(tenant.ask(chat, "my secret plans")).isEqualTo("echo: my secret plans");

        JsonArray chats = new JsonObject(call("GET", "/console/api/tenants/default/bots/main/chats?q=" + chat.substring(0, 20),
                OPERATOR, null).body()).getJsonArray("chats");
        assertThat(chats.stream().map(JsonObject.class::cast).map(c -> c.getString("chatId"))).contains(chat);
        HttpResponse<String> hidden = call("GET", "/console/api/tenants/default/bots/main/chats/api/" + chat, OPERATOR, null);
        assertThat(hidden.statusCode()).isEqualTo(403);
        assertThat(new JsonObject(hidden.body()).getJsonObject("error").getString("code")).isEqualTo("content_hidden");
        assertThat(hidden.body()).doesNotContain("secret plans");

        // the tenant's admin reads it, and the trail says so
        JsonObject transcript = new JsonObject(call("GET", "/console/api/tenants/default/bots/main/chats/api/" + chat, KEY, null).body());
        assertThat(transcript.getJsonArray("messages").stream().map(JsonObject.class::cast)
                .map(m -> m.getString("role") + ":" + m.getString("text")))
                .containsSubsequence("user:my secret plans", "assistant:echo: my secret plans");
        // an operator allowed to read content (console.operatorContent on that gateway) reads it, audited as the operator
        String readingBase = "http://127.0.0.1:" + readingNode.httpPort();
        HttpResponse<String> read = send(readingBase, "GET", "/console/api/tenants/default/bots/main/chats/api/" + chat, OPERATOR);
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).contains("my secret plans");

        JsonArray trail = new JsonObject(call("GET", "/console/api/tenants/default/audit", KEY, null).body()).getJsonArray("events");
        List<JsonObject> views = trail.stream().map(JsonObject.class::cast)
                .filter(e -> "content_viewed".equals(e.getString("type")) && e.getJsonObject("chat") != null
                        && chat.equals(e.getJsonObject("chat").getString("chatId")))
                .toList();
        assertThat(views).hasSize(2);
        assertThat(views.stream().map(v -> v.getJsonObject("actor").getBoolean("operator"))).containsExactlyInAnyOrder(true, false);
        // the operator without content sees the trail's metadata, not its reasons or arguments
        JsonArray operatorTrail = new JsonObject(call("GET", "/console/api/tenants/default/audit", OPERATOR, null).body())
                .getJsonArray("events");
        assertThat(operatorTrail).isNotEmpty();
        assertThat(operatorTrail.stream().map(JsonObject.class::cast)).allSatisfy(e -> assertThat(e.containsKey("reason")).isFalse());
    }

    @Test
    void aTranscriptShowsToolCallsTheirResultsAndTheApprovalsAskedAndDecided() throws Exception {
        String admin = fixture.adminChat();
        // a call that runs at once: the model's message carries it, the tool's result answers it
        tenant.ask(admin, "call:fs_list {}");
        // a call that waits for an admin
        String call = "call:shell_exec " + new JsonObject().put("command", "echo console-approved").encode();
        assertThat(tenant.ask(admin, call)).contains("needs an admin's approval");
        JsonObject waiting = new JsonObject(tenant.call("GET", "/api/v1/approvals", null).body()).getJsonArray("approvals")
                .stream().map(JsonObject.class::cast).filter(a -> admin.equals(a.getString("chatId"))).findFirst().orElseThrow();
        String path = "/console/api/tenants/default/bots/main/chats/api/" + admin;
        JsonArray asked = new JsonObject(call("GET", path, KEY, null).body()).getJsonArray("approvals");
        assertThat(asked.stream().map(JsonObject.class::cast).map(a -> a.getString("tool") + ":" + a.getString("state")))
                .contains("shell_exec:pending", "shell_exec:requested");

        assertThat(tenant.call("POST", "/api/v1/approvals/" + waiting.getString("id"), new JsonObject()
                .put("decision", "approve").put("argsHash", waiting.getString("argsHash"))).statusCode()).isEqualTo(200);
        JsonObject[] transcript = {null};
        Await.until("the approved call's result in the transcript", Duration.ofSeconds(30), () -> {
            transcript[0] = new JsonObject(unchecked(() -> call("GET", path, KEY, null)).body());
            return transcript[0].getJsonArray("messages").stream().map(JsonObject.class::cast)
                    .anyMatch(m -> "tool".equals(m.getString("role")) && "console-approved\n".equals(m.getString("text")));
        });
        List<JsonObject> messages = transcript[0].getJsonArray("messages").stream().map(JsonObject.class::cast).toList();
        JsonObject asking = messages.stream().filter(m -> m.getJsonArray("toolCalls") != null && !m.getJsonArray("toolCalls").isEmpty())
                .findFirst().orElseThrow(() -> new AssertionError(transcript[0].encodePrettily()));
        JsonObject toolCall = asking.getJsonArray("toolCalls").getJsonObject(0);
        assertThat(toolCall.getString("name")).isEqualTo("fs_list");
        assertThat(toolCall.getString("arguments")).isEqualTo("{}");
        JsonObject result = messages.stream().filter(m -> "tool".equals(m.getString("role"))).findFirst().orElseThrow();
        assertThat(result.getString("toolCallId")).isEqualTo(toolCall.getString("id"));
        assertThat(transcript[0].getJsonArray("approvals").stream().map(JsonObject.class::cast)
                .filter(a -> "approve".equals(a.getString("state"))).findFirst().orElseThrow().getString("by")).isNotBlank();
    }

    @Test
    void deadLettersAreReplayedAndDiscardedAndTheOperatorDoesNotSeeTheirText() throws Exception {
        String chat = "dead-" + UUID.randomUUID();
        long replayed = deadLetter(chat, "please answer me later");
        long discarded = deadLetter("dead-" + UUID.randomUUID(), "never mind this one");

        JsonObject seenByOperator = deadLetters(OPERATOR, "default").stream().map(JsonObject.class::cast)
                .filter(d -> d.getLong("id") == replayed).findFirst().orElseThrow();
        assertThat(seenByOperator.getValue("text")).isNull();
        assertThat(seenByOperator.getBoolean("textHidden")).isTrue();
        JsonObject seenByTenant = deadLetters(KEY, "default").stream().map(JsonObject.class::cast)
                .filter(d -> d.getLong("id") == replayed).findFirst().orElseThrow();
        assertThat(seenByTenant.getString("text")).isEqualTo("please answer me later");

        assertThat(call("POST", "/console/api/tenants/default/bots/main/dead-letters/" + replayed + "/replay", OPERATOR, null)
                .statusCode()).isEqualTo(202);
        Await.until("the replayed message to be answered", Duration.ofSeconds(30), () -> {
            JsonObject transcript = new JsonObject(unchecked(() -> call("GET", "/console/api/tenants/default/bots/main/chats/api/"
                    + chat, KEY, null)).body());
            return transcript.getJsonArray("messages").stream().map(JsonObject.class::cast)
                    .anyMatch(m -> "echo: please answer me later".equals(m.getString("text")));
        });
        assertThat(call("DELETE", "/console/api/tenants/default/bots/main/dead-letters/" + discarded, OPERATOR, null)
                .statusCode()).isEqualTo(204);
        assertThat(call("DELETE", "/console/api/tenants/default/bots/main/dead-letters/" + discarded, OPERATOR, null)
                .statusCode()).isEqualTo(404);
        JsonArray after = deadLetters(KEY, "default");
        assertThat(after.stream().map(JsonObject.class::cast).map(d -> d.getLong("id"))).doesNotContain(discarded);
        assertThat(after.stream().map(JsonObject.class::cast).filter(d -> d.getLong("id") == replayed)
                .findFirst().orElseThrow().getString("replayedAt")).isNotNull();

        JsonArray trail = new JsonObject(call("GET", "/console/api/tenants/default/audit", KEY, null).body()).getJsonArray("events");
        assertThat(trail.stream().map(JsonObject.class::cast).filter(e -> "http_write".equals(e.getString("type"))
                        && e.getJsonObject("actor").getBoolean("operator")).map(e -> e.getJsonObject("http").getString("method")))
                .contains("POST", "DELETE");
    }

    @Test
    void theOperatorSuspendsAndResumesATenantFromTheConsole() throws Exception {
        JsonArray tenants = new JsonObject(call("GET", "/console/api/tenants", OPERATOR, null).body()).getJsonArray("tenants");
        JsonObject other = tenants.stream().map(JsonObject.class::cast).filter(t -> "other".equals(t.getString("id")))
                .findFirst().orElseThrow();
        assertThat(other.getString("status")).isEqualTo("active");
        assertThat(other.getJsonObject("usage").getLong("messagesToday")).isNotNull();

        assertThat(call("POST", "/console/api/tenants/other/suspend", OPERATOR, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/bots", otherKey, null).statusCode()).isEqualTo(403);
        assertThat(call("GET", "/console/api/session", otherKey, null).statusCode()).isEqualTo(403);
        assertThat(call("POST", "/console/api/tenants/other/resume", OPERATOR, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/bots", otherKey, null).statusCode()).isEqualTo(200);
        assertThat(call("POST", "/console/api/tenants/nobody/resume", OPERATOR, null).statusCode()).isEqualTo(404);
    }

    @Test
    void taskPromptsAreContentTooHiddenFromTheOperatorAndAuditedWhenShown() throws Exception {
        String chat = "tasks-" + UUID.randomUUID();
        tenant.ask(chat, "hello");
        assertThat(tenant.call("POST", "/api/v1/tasks", new JsonObject().put("chatId", chat).put("prompt", "water the plants")
                .put("scheduleType", "interval").put("scheduleValue", "3600000")).statusCode()).isEqualTo(201);
        String path = "/console/api/tenants/default/bots/main/tasks";
        JsonObject seenByOperator = new JsonObject(call("GET", path, OPERATOR, null).body()).getJsonArray("tasks").stream()
                .map(JsonObject.class::cast).filter(t -> chat.equals(t.getString("chatId"))).findFirst().orElseThrow();
        assertThat(seenByOperator.getValue("prompt")).isNull();
        assertThat(call("GET", path, KEY, null).body()).contains("water the plants");
        JsonArray trail = new JsonObject(call("GET", "/console/api/tenants/default/audit", KEY, null).body()).getJsonArray("events");
        List<JsonObject> views = trail.stream().map(JsonObject.class::cast)
                .filter(e -> "content_viewed".equals(e.getString("type")) && "task prompts read in the console".equals(e.getString("reason")))
                .toList();
        assertThat(views).isNotEmpty().allSatisfy(v -> assertThat(v.getJsonObject("actor").getBoolean("operator")).isFalse());
    }

    @Test
    void theTenantsComeAPageAtATime() throws Exception {
        for (int i = 0; i < 101; i++) {
            assertThat(call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", String.format("page-%03d", i))
                    .put("name", "Paged " + i)).statusCode()).isEqualTo(201);
        }
        java.util.Set<String> seen = new java.util.TreeSet<>();
        String after = null;
        int pages = 0;
        do {
            JsonObject page = new JsonObject(call("GET", "/console/api/tenants" + (after == null ? "" : "?after=" + after),
                    OPERATOR, null).body());
            page.getJsonArray("tenants").forEach(t -> assertThat(seen.add(((JsonObject) t).getString("id"))).isTrue());
            after = page.getString("nextCursor");
            pages++;
        } while (after != null);
        assertThat(pages).isGreaterThan(1);
        assertThat(seen).contains("default", "other", "page-000", "page-100");
        assertThat(call("GET", "/console/api/tenants?after=not%20an%20id", OPERATOR, null).statusCode()).isEqualTo(400);
    }

    @Test
    void theLiveStreamSendsTheClusterAndTheTenantsSummary() throws Exception {
        Map<String, JsonObject> operator = events(OPERATOR, "?tenant=default", List.of("cluster", "tenant"));
        JsonObject cluster = operator.get("cluster");
        assertThat(cluster.getJsonArray("members")).isNotEmpty();
        assertThat(cluster.getInteger("partitionCount")).isPositive();
        assertThat(cluster.getJsonArray("partitions").getJsonObject(0).containsKey("lagSeconds")).isTrue();
        assertThat(cluster.getInteger("unowned")).isNotNull();
        assertThat(operator.get("tenant").getString("tenant")).isEqualTo("default");

        Map<String, JsonObject> admin = events(KEY, "", List.of("tenant"));
        assertThat(admin).doesNotContainKey("cluster");
        assertThat(admin.get("tenant").getLong("chats")).isNotNull();
    }

    // --- helpers

    /** A message whose turn fails (the model is down): its dead letter's id, found through the console. */
    private long deadLetter(String chat, String text) throws Exception {
        model.outage(503);
        try {
            tenant.call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u")
                    .put("messageId", UUID.randomUUID().toString()).put("text", text));
            long[] id = {0};
            Await.until("a dead letter for " + chat, Duration.ofSeconds(60), () -> {
                unchecked(() -> deadLetters(KEY, "default")).stream().map(JsonObject.class::cast)
                        .filter(d -> chat.equals(d.getString("chatId"))).findFirst().ifPresent(d -> id[0] = d.getLong("id"));
                return id[0] != 0;
            });
            return id[0];
        } finally {
            model.outage(0);
        }
    }

    private JsonArray deadLetters(String key, String tenantId) throws Exception {
        HttpResponse<String> answer = call("GET", "/console/api/tenants/" + tenantId + "/bots/main/dead-letters", key, null);
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
        return new JsonObject(answer.body()).getJsonArray("deadLetters");
    }

    private String newKey(String adminKey, JsonObject body) throws Exception {
        HttpResponse<String> created = call("POST", "/api/v1/keys", adminKey, body);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body()).getJsonObject("key").getString("key");
    }

    /** Reads the live stream until each of {@code wanted} came once; their data by event name. */
    private Map<String, JsonObject> events(String key, String query, List<String> wanted) throws Exception {
        HttpResponse<InputStream> stream = http.send(HttpRequest.newBuilder(URI.create(base + "/console/api/events" + query))
                .header("authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(stream.statusCode()).isEqualTo(200);
        assertThat(stream.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
        Map<String, JsonObject> seen = new HashMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
            String event = null;
            String line;
            while (!seen.keySet().containsAll(wanted) && System.nanoTime() < deadline && (line = lines.readLine()) != null) {
                if (line.startsWith("event: ")) {
                    event = line.substring(7);
                } else if (line.startsWith("data: ") && event != null) {
                    seen.put(event, new JsonObject(line.substring(6)));
                }
            }
        }
        assertThat(seen.keySet()).containsAll(wanted);
        return seen;
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("content-type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()));
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static <T> T unchecked(java.util.concurrent.Callable<T> call) {
        try {
            return call.call();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private HttpResponse<String> send(String at, String method, String path, String key) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(at + path)).header("authorization", "Bearer " + key)
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }
}
