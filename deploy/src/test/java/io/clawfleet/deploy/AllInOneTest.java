package io.clawfleet.deploy;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
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
import java.util.Map;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Every role in one JVM, as {@code up} runs them: behaviours that cross gateway and worker. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AllInOneTest {

    private static final String KEY = "all-in-one-key-0123456789";
    private static final String METRICS_KEY = "all-in-one-metrics-key-0123456789";

    private MockedNode fixture;
    private MockLlmServer model;
    private NodeRuntime node;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        fixture = MockedNode.start("gateway,worker,sandbox,scheduler", KEY, Map.of("llm.maxRetries", "1",
                "llm.retryBackoffMs", "10", "metricsKey", METRICS_KEY));
        model = fixture.model;
        node = fixture.node;
        base = fixture.base;
    }

    @AfterAll
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + KEY)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The input and output tokens of the usage rows of the one message of the OpenAI chat {@code user}. */
    private List<Long> usageRows(String user) {
        Database database = Database.connect(node.vertx(), fixture.db, 1, 5_000);
        try {
            Row row = Await.result(database.pool().preparedQuery("""
                            SELECT sum(u.input_tokens)::bigint AS input, sum(u.output_tokens)::bigint AS output, count(DISTINCT i.id) AS messages
                              FROM llm_usage u JOIN inbox i ON i.id = u.inbox_id JOIN chats c ON c.id = i.chat_id
                             WHERE c.channel = 'openai' AND c.chat_key = $1""")
                    .execute(Tuple.of(user))).iterator().next();
            assertThat(row.getLong("messages")).isEqualTo(1);
            return List.of(row.getLong("input"), row.getLong("output"));
        } finally {
            Await.result(database.close());
        }
    }

    /** Replies this node served from their notices, from its /metrics. */
    private double pushed() throws Exception {
        String metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).header("authorization", "Bearer " + METRICS_KEY)
                .build(), HttpResponse.BodyHandlers.ofString()).body();
        return Prometheus.sum(metrics, "clawfleet_gateway_replies_pushed_total{");
    }

    private JsonArray replies(String chat, int count) {
        JsonArray[] replies = {new JsonArray()};
        Await.until(count + " replies", Duration.ofSeconds(30), () -> {
            try {
                replies[0] = new JsonObject(call("GET", "/api/v1/chats/" + chat + "/replies?wait=5", null).body()).getJsonArray("replies");
                return replies[0].size() >= count;
            } catch (Exception e) {
                return false;
            }
        });
        return replies[0];
    }

    @Test
    void aMessageTheModelFailedIsADeadLetterThatCanBeReplayedOnce() throws Exception {
        // given the model is down when a message arrives
        String chat = "dl-" + UUID.randomUUID();
        model.outage(503);
        call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u").put("messageId", "m1")
                .put("text", "are you there?"));
        JsonArray first = replies(chat, 1);
        model.outage(0);
        // then the chat got a clear error reply and a dead letter names the message and the error
        assertThat(first.getJsonObject(0).getString("text")).contains("could not get an answer").contains("503");
        JsonObject letter = new JsonObject(call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters")
                .stream().map(JsonObject.class::cast).filter(l -> chat.equals(l.getString("chatId"))).findFirst().orElseThrow();
        assertThat(letter.getString("kind")).isEqualTo("inbound");
        assertThat(letter.getString("error")).contains("503");
        assertThat(letter.getString("text")).isEqualTo("are you there?");

        // when it is replayed, twice
        HttpResponse<String> replay = call("POST", "/api/v1/dead-letters/" + letter.getLong("id") + "/replay", null);
        HttpResponse<String> again = call("POST", "/api/v1/dead-letters/" + letter.getLong("id") + "/replay", null);

        // then the message is answered once more, properly, in the chat's order
        assertThat(replay.statusCode()).isEqualTo(202);
        assertThat(new JsonObject(again.body()).getString("id")).isEqualTo(new JsonObject(replay.body()).getString("id"));
        JsonArray after = replies(chat, 2);
        assertThat(after).hasSize(2);
        assertThat(after.getJsonObject(1).getString("text")).isEqualTo("echo: are you there?");
        assertThat(after.getJsonObject(1).getString("inReplyTo")).isEqualTo(new JsonObject(replay.body()).getString("id"));
        JsonObject listed = new JsonObject(call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters")
                .stream().map(JsonObject.class::cast).filter(l -> l.getLong("id").equals(letter.getLong("id"))).findFirst().orElseThrow();
        assertThat(listed.getString("replayedAt")).isNotNull();
    }

    /** Issue 22 end to end: supervised by default; a risky call waits until the tenant's admin approves it by hash. */
    @Test
    void aRiskyCallWaitsForTheAdminsApprovalByDefaultAndRunsOnceApproved() throws Exception {
        assertThat(new JsonObject(call("GET", "/api/v1/settings", null).body()).getString("autonomy")).isEqualTo("supervised");
        // when the model calls a tool that acts beyond the chat (a task that runs prompts on its own)
        String chat = "sup-" + UUID.randomUUID();
        call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u").put("messageId", "m1")
                .put("text", "call:tasks_schedule {\"prompt\":\"stretch\",\"schedule_type\":\"interval\",\"schedule_value\":\"3600000\"}"));
        // then the chat is told it waits for an admin, and nothing is scheduled
        assertThat(replies(chat, 1).getJsonObject(0).getString("text")).contains("needs an admin's approval");
        JsonObject waiting = new JsonObject(call("GET", "/api/v1/approvals", null).body()).getJsonArray("approvals").stream()
                .map(JsonObject.class::cast).filter(a -> a.getString("chatId").equals(chat)).findFirst().orElseThrow();
        assertThat(waiting.getString("tool")).isEqualTo("tasks_schedule");
        assertThat(new JsonObject(call("GET", "/api/v1/tasks", null).body()).encode()).doesNotContain("stretch");
        // when the tenant's admin approves exactly that call
        HttpResponse<String> approved = call("POST", "/api/v1/approvals/" + waiting.getString("id"),
                new JsonObject().put("decision", "approve").put("argsHash", waiting.getString("argsHash")));
        assertThat(approved.statusCode()).as(approved.body()).isEqualTo(200);
        // then the turn carries on in the chat and the task exists
        assertThat(replies(chat, 2).getJsonObject(1).getString("text")).contains("was approved by api key")
                .contains("tool tasks_schedule said: Scheduled");
        assertThat(new JsonObject(call("GET", "/api/v1/tasks", null).body()).encode()).contains("stretch");
    }

    @Test
    void aBadSettingIsRefusedWithItsName() throws Exception {
        HttpResponse<String> put = call("PUT", "/api/v1/settings", new JsonObject().put("autonomy", "reckless"));
        assertThat(put.statusCode()).isEqualTo(400);
        assertThat(put.body()).contains("autonomy");
    }

    @Test
    void tokenUsageIsRecordedPerTurnAndAvailableThroughTheApi() throws Exception {
        String chat = "usage-" + UUID.randomUUID();
        for (int i = 0; i < 3; i++) {
            call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u").put("messageId", "m" + i)
                    .put("text", "count my tokens " + i));
        }
        replies(chat, 3);
        JsonObject usage = new JsonObject(call("GET", "/api/v1/usage?chatId=" + chat, null).body());
        assertThat(usage.getJsonObject("total").getLong("turns")).isEqualTo(3);
        assertThat(usage.getJsonObject("total").getLong("inputTokens")).isPositive();
        assertThat(usage.getJsonArray("usage").getJsonObject(0).getString("model")).isEqualTo("mock");
        assertThat(call("GET", "/api/v1/usage?since=yesterday", null).statusCode()).isEqualTo(400);
    }

    @Test
    void replayingAnUnknownDeadLetterIsANotFound() throws Exception {
        HttpResponse<String> response = call("POST", "/api/v1/dead-letters/999999/replay", null);
        assertThat(response.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(response.body()).getJsonObject("error").getString("code")).isEqualTo("not_found");
    }

    @Test
    void aFailingChatDoesNotHoldUpTheOtherChatsOfItsPartition() throws Exception {
        // given a chat whose messages keep failing (a scripted failure) and healthy chats beside it
        String broken = "broken-" + UUID.randomUUID();
        for (int i = 0; i < 3; i++) {
            call("POST", "/api/v1/messages", new JsonObject().put("chatId", broken).put("senderId", "u")
                    .put("messageId", "b" + i).put("text", "fail:500 number " + i));
        }
        for (int c = 0; c < 20; c++) {
            call("POST", "/api/v1/messages", new JsonObject().put("chatId", "fine-" + c).put("senderId", "u")
                    .put("messageId", "f").put("text", "hello " + c));
        }
        // then every healthy chat is answered, and the broken one gets an error reply per message
        for (int c = 0; c < 20; c++) {
            assertThat(replies("fine-" + c, 1).getJsonObject(0).getString("text")).isEqualTo("echo: hello " + c);
        }
        assertThat(replies(broken, 3)).allSatisfy(r -> assertThat(((JsonObject) r).getString("text")).contains("500"));
    }

    @Test
    void aStreamedCompletionArrivesWordByWordAndAddsUpToTheAnswerOnce() throws Exception {
        // given a long answer (the mock model echoes), asked for as a stream
        String question = "tell me " + "a rather long story ".repeat(30);
        JsonObject body = new JsonObject().put("model", "default").put("stream", true).put("user", "sse-" + UUID.randomUUID())
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", question)));
        HttpResponse<String> response = call("POST", "/v1/chat/completions", body);
        // then several content events arrive, and together they are the answer exactly once
        assertThat(response.statusCode()).isEqualTo(200);
        StringBuilder text = new StringBuilder();
        int contentEvents = 0;
        for (String line : response.body().split("\n")) {
            if (line.startsWith("data: {")) {
                JsonObject delta = new JsonObject(line.substring(6)).getJsonArray("choices").getJsonObject(0).getJsonObject("delta");
                if (delta.getString("content") != null && !delta.getString("content").isEmpty()) {
                    contentEvents++;
                    text.append(delta.getString("content"));
                }
            }
        }
        assertThat(text.toString()).isEqualTo("echo: " + question);
        assertThat(contentEvents).isGreaterThan(2);
        assertThat(response.body()).endsWith("data: [DONE]\n\n");
    }

    /**
     * Issue 14: OpenAI clients get the usage they expect, streamed or not, and client tools are refused by name. On a
     * node alone both answers are served from the reply's notice (SECURITY.md rule 5), tokens included, with no read:
     * the counts must be the turn's usage rows exactly.
     */
    @Test
    void aCompletionReportsTheTokensItsTurnUsedAndClientToolsAreRefused() throws Exception {
        JsonArray messages = new JsonArray().add(new JsonObject().put("role", "user").put("content", "count my tokens please"));
        double pushedBefore = pushed();
        String plainUser = "usage-" + UUID.randomUUID();
        HttpResponse<String> plain = call("POST", "/v1/chat/completions", new JsonObject().put("model", "default")
                .put("user", plainUser).put("messages", messages));
        assertThat(plain.statusCode()).as(plain.body()).isEqualTo(200);
        JsonObject usage = new JsonObject(plain.body()).getJsonObject("usage");
        assertThat(usage.getLong("prompt_tokens")).isPositive();
        assertThat(usage.getLong("completion_tokens")).isPositive();
        assertThat(usage.getLong("total_tokens")).isEqualTo(usage.getLong("prompt_tokens") + usage.getLong("completion_tokens"));
        assertThat(usageRows(plainUser)).isEqualTo(List.of(usage.getLong("prompt_tokens"), usage.getLong("completion_tokens")));
        assertThat(pushed()).as("the answer was served from the notice").isGreaterThanOrEqualTo(pushedBefore + 1);
        // streamed with stream_options.include_usage: a last chunk without choices carries the usage
        double pushedBeforeStream = pushed();
        String streamUser = "usage-" + UUID.randomUUID();
        HttpResponse<String> streamed = call("POST", "/v1/chat/completions", new JsonObject().put("model", "default")
                .put("stream", true).put("stream_options", new JsonObject().put("include_usage", true))
                .put("user", streamUser).put("messages", messages));
        List<JsonObject> chunks = streamed.body().lines().filter(line -> line.startsWith("data: {"))
                .map(line -> new JsonObject(line.substring(6))).toList();
        JsonObject last = chunks.get(chunks.size() - 1);
        assertThat(last.getJsonArray("choices")).isEmpty();
        assertThat(last.getJsonObject("usage").getLong("total_tokens")).isPositive();
        assertThat(usageRows(streamUser)).isEqualTo(List.of(last.getJsonObject("usage").getLong("prompt_tokens"),
                last.getJsonObject("usage").getLong("completion_tokens")));
        assertThat(pushed()).as("the answer was served from the notice").isGreaterThanOrEqualTo(pushedBeforeStream + 1);
        assertThat(chunks.subList(0, chunks.size() - 1)).allSatisfy(chunk -> assertThat(chunk.containsKey("usage")).isFalse());
        assertThat(streamed.body()).endsWith("data: [DONE]\n\n");
        // tools the client defines are not silently ignored
        for (String field : List.of("tools", "tool_choice")) {
            HttpResponse<String> refused = call("POST", "/v1/chat/completions", new JsonObject().put("model", "default")
                    .put("messages", messages).put(field, field.equals("tools") ? new JsonArray().add(new JsonObject()) : "auto"));
            assertThat(refused.statusCode()).as(field).isEqualTo(400);
            assertThat(refused.body()).contains("unsupported_parameter").contains(field);
        }
    }

    @Test
    void theModelsListNamesTheDefaultRole() throws Exception {
        JsonArray data = new JsonObject(call("GET", "/v1/models", null).body()).getJsonArray("data");
        assertThat(data.stream().map(m -> ((JsonObject) m).getString("id"))).contains("default");
    }
}
