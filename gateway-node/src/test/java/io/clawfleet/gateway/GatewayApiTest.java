package io.clawfleet.gateway;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.gateway.http.MessagesApi;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.EchoWorker;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The gateway's public HTTP surface, black-box over real HTTP, on embedded PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayApiTest {

    private static final String KEY = "test-key-0123456789abcdef";
    private static final String OPERATOR_KEY = "operator-key-gateway-api-0123456789";
    private static final String METRICS_KEY = "metrics-key-gateway-api-0123456789";
    private static final int MAX_BODY = 4_096;

    private NodeRuntime node;
    private int managementPort;
    private Vertx client;
    private Database database;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        managementPort = io.clawfleet.shared.node.FreePorts.take();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw1",
                "http.maxBodyBytes", Integer.toString(MAX_BODY), "http.replyTimeoutMs", "10000",
                "limits.chatMessagesPerMinute", "30", "operatorKey", OPERATOR_KEY, "metricsKey", METRICS_KEY,
                "http.management.port", Integer.toString(managementPort))), db,
                List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
        new EchoWorker(node.vertx(), database.pool(), 16);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    private HttpResponse<String> post(String path, String contentType, byte[] body, String key) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (contentType != null) {
            request.header("content-type", contentType);
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> postJson(String path, JsonObject body) throws Exception {
        return post(path, "application/json", body.encode().getBytes(), KEY);
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject message(String chat, String id, String text) {
        return new JsonObject().put("chatId", chat).put("senderId", "alice").put("messageId", id).put("text", text);
    }

    private long inboxRows() {
        return result(database.pool().query("SELECT count(*) FROM inbox").execute()).iterator().next().getLong(0);
    }

    @Test
    void aMessageIsAcceptedOnceAndAnswered() throws Exception {
        String chat = "c-" + UUID.randomUUID();
        HttpResponse<String> first = postJson("/api/v1/messages", message(chat, "m1", "hello"));
        HttpResponse<String> again = postJson("/api/v1/messages", message(chat, "m1", "hello"));
        assertThat(first.statusCode()).isEqualTo(202);
        assertThat(again.statusCode()).isEqualTo(200);
        JsonObject accepted = new JsonObject(first.body());
        assertThat(new JsonObject(again.body()).getString("id")).isEqualTo(accepted.getString("id"));
        assertThat(accepted.getInteger("partition")).isBetween(0, 15);

        JsonArray replies = new JsonObject(get("/api/v1/chats/" + chat + "/replies?after=0&wait=10").body()).getJsonArray("replies");
        assertThat(replies).hasSize(1);
        assertThat(replies.getJsonObject(0).getString("text")).isEqualTo("re: hello");
        assertThat(replies.getJsonObject(0).getString("inReplyTo")).isEqualTo(accepted.getString("id"));
        assertThat(replies.getJsonObject(0).getLong("seq")).isEqualTo(1);
    }

    @Test
    void aLongPollIsWokenByTheReply() throws Exception {
        String chat = "c-" + UUID.randomUUID();
        long started = System.nanoTime();
        double waitingBefore = waitingPolls();
        CompletableFuture<HttpResponse<String>> poll = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=0&wait=20"))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
        // the message goes in only once the poll is parked, so it is the reply that wakes it
        Await.until("the long poll to be waiting", Duration.ofSeconds(10), () -> waitingPolls() > waitingBefore);
        postJson("/api/v1/messages", message(chat, "m1", "wake me"));
        HttpResponse<String> response = poll.get(15, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(new JsonObject(response.body()).getJsonArray("replies").getJsonObject(0).getString("text")).isEqualTo("re: wake me");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void aReplyCommittedWithoutANoticeReachesALongPollWhileTheGatewaySeesNoWorker() throws Exception {
        // This gateway sees no worker member (the echo worker here is no cluster node), as when it is cut off from
        // every worker: no notice can be relied on, so its long polls read the outbox themselves on the backstop's tick.
        String chat = "c-" + UUID.randomUUID();
        postJson("/api/v1/messages", message(chat, "m1", "first"));
        JsonObject first = new JsonObject(get("/api/v1/chats/" + chat + "/replies?after=0&wait=10").body())
                .getJsonArray("replies").getJsonObject(0);
        double waitingBefore = waitingPolls();
        long started = System.nanoTime();
        CompletableFuture<HttpResponse<String>> poll = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=1&wait=25"))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
        Await.until("the long poll to be waiting", Duration.ofSeconds(10), () -> waitingPolls() > waitingBefore);
        // a reply committed with no notice (a worker's sweep on the other side of a cut)
        result(database.pool().preparedQuery("""
                        INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text, status)
                        SELECT $1, o.tenant_id, o.chat_id, 2, o.in_reply_to, 'found by the sweep', 'delivered'
                          FROM outbox o WHERE o.in_reply_to = $2""")
                .execute(io.vertx.sqlclient.Tuple.of("backstop-" + chat, Long.parseLong(first.getString("inReplyTo")))));
        HttpResponse<String> response = poll.get(20, java.util.concurrent.TimeUnit.SECONDS);
        JsonArray replies = new JsonObject(response.body()).getJsonArray("replies");
        assertThat(replies).hasSize(1);
        assertThat(replies.getJsonObject(0).getString("text")).isEqualTo("found by the sweep");
        // long before the poll's deadline of 25 s: the backstop ticks every 2 s
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(15));
    }

    @Test
    void aLongPollWithNothingNewAnswersEmptyAtItsDeadline() throws Exception {
        long started = System.nanoTime();
        HttpResponse<String> response = get("/api/v1/chats/quiet-" + UUID.randomUUID() + "/replies?after=0&wait=1");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(response.body()).getJsonArray("replies")).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThanOrEqualTo(Duration.ofMillis(900));
    }

    static Stream<Arguments> badRequests() {
        byte[] valid = message("bad", "x", "hi").encode().getBytes();
        byte[] invalidUtf8 = "{\"chatId\":\"c\",\"senderId\":\"u\",\"messageId\":\"x\",\"text\":\"\u0000\"}".getBytes();
        invalidUtf8[invalidUtf8.length - 3] = (byte) 0xff;
        return Stream.of(
                Arguments.of("malformed JSON", "application/json", "{\"chatId\":".getBytes(), KEY, 400, "invalid_json"),
                Arguments.of("not an object", "application/json", "[1,2]".getBytes(), KEY, 400, "invalid_json"),
                Arguments.of("missing field", "application/json", "{\"chatId\":\"c\",\"senderId\":\"u\",\"text\":\"t\"}".getBytes(), KEY, 400, "invalid_request"),
                Arguments.of("mistyped field", "application/json", "{\"chatId\":1,\"senderId\":\"u\",\"messageId\":\"x\",\"text\":\"t\"}".getBytes(), KEY, 400, "invalid_request"),
                Arguments.of("unknown field", "application/json", "{\"chatID\":\"c\",\"senderId\":\"u\",\"messageId\":\"x\",\"text\":\"t\"}".getBytes(), KEY, 400, "invalid_request"),
                Arguments.of("empty text", "application/json", "{\"chatId\":\"c\",\"senderId\":\"u\",\"messageId\":\"x\",\"text\":\"  \"}".getBytes(), KEY, 400, "invalid_request"),
                Arguments.of("invalid UTF-8", "application/json", invalidUtf8, KEY, 400, "invalid_json"),
                Arguments.of("body over the limit", "application/json", new byte[MAX_BODY + 1], KEY, 413, "payload_too_large"),
                Arguments.of("wrong content type", "text/plain", valid, KEY, 415, "unsupported_media_type"),
                Arguments.of("no content type", null, valid, KEY, 415, "unsupported_media_type"),
                Arguments.of("missing key", "application/json", valid, null, 401, "unauthorized"),
                Arguments.of("wrong key", "application/json", valid, "not-a-key", 401, "unauthorized"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badRequests")
    void badInputGetsAClearErrorAndChangesNothing(String name, String type, byte[] body, String key, int status, String code)
            throws Exception {
        long before = inboxRows();
        HttpResponse<String> response = post("/api/v1/messages", type, body, key);
        assertThat(response.statusCode()).isEqualTo(status);
        assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
        JsonObject error = new JsonObject(response.body()).getJsonObject("error");
        assertThat(error.getString("code")).isEqualTo(code);
        assertThat(error.getString("message")).isNotBlank();
        assertThat(inboxRows()).isEqualTo(before);
    }

    @Test
    void aChatSendingTooFastIsToldWhenToRetryAndNothingIsStored() throws Exception {
        // given a limit of 30 messages per chat per minute
        String chat = "fast-" + UUID.randomUUID();
        for (int i = 0; i < 30; i++) {
            assertThat(postJson("/api/v1/messages", message(chat, "m" + i, "x")).statusCode()).isEqualTo(202);
        }
        long before = inboxRows();
        // when the 31st arrives within the minute
        HttpResponse<String> refused = postJson("/api/v1/messages", message(chat, "m30", "x"));
        // then 429 with Retry-After, and nothing stored; other chats are not affected
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("code")).isEqualTo("rate_limited");
        assertThat(Long.parseLong(refused.headers().firstValue("retry-after").orElseThrow())).isBetween(1L, 3L);
        assertThat(inboxRows()).isEqualTo(before);
        assertThat(postJson("/api/v1/messages", message("other-" + UUID.randomUUID(), "m", "x")).statusCode()).isEqualTo(202);
    }

    @Test
    void unknownRoutesAndMethodsAreJsonErrors() throws Exception {
        assertThat(get("/api/v1/nope").statusCode()).isEqualTo(404);
        assertThat(new JsonObject(get("/api/v1/nope").body()).getJsonObject("error").getString("code")).isEqualTo("not_found");
        HttpResponse<String> delete = http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/messages"))
                .header("authorization", "Bearer " + KEY).DELETE().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(delete.statusCode()).isEqualTo(405);
    }

    @Test
    void badQueryParametersAreRefused() throws Exception {
        HttpResponse<String> response = get("/api/v1/chats/c/replies?wait=forever");
        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(response.body()).contains("wait");
    }

    @Test
    void openAiCompletionKeepsTheChatOnTheServer() throws Exception {
        String user = "u-" + UUID.randomUUID();
        JsonObject request = new JsonObject().put("model", "default").put("user", user)
                .put("messages", new JsonArray().add(new JsonObject().put("role", "system").put("content", "ignored here"))
                        .add(new JsonObject().put("role", "user").put("content", "hi there")));
        HttpResponse<String> response = postJson("/v1/chat/completions", request);
        assertThat(response.statusCode()).isEqualTo(200);
        JsonObject body = new JsonObject(response.body());
        assertThat(body.getString("object")).isEqualTo("chat.completion");
        assertThat(body.getJsonArray("choices").getJsonObject(0).getJsonObject("message").getString("content")).isEqualTo("re: hi there");
        assertThat(body.getJsonArray("choices").getJsonObject(0).getString("finish_reason")).isEqualTo("stop");
        long chats = result(database.pool().preparedQuery("SELECT count(*) FROM chats WHERE channel = 'openai' AND chat_key = $1")
                .execute(io.vertx.sqlclient.Tuple.of(user))).iterator().next().getLong(0);
        assertThat(chats).isEqualTo(1);
    }

    @Test
    void openAiStreamingAnswersWithServerSentEvents() throws Exception {
        JsonObject request = new JsonObject().put("model", "default").put("stream", true)
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "stream this")));
        HttpResponse<String> response = postJson("/v1/chat/completions", request);
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("content-type")).hasValue("text/event-stream");
        List<String> events = new ArrayList<>();
        for (String line : response.body().split("\n")) {
            if (line.startsWith("data: ")) {
                events.add(line.substring(6));
            }
        }
        assertThat(events.get(events.size() - 1)).isEqualTo("[DONE]");
        StringBuilder text = new StringBuilder();
        String finish = null;
        for (String event : events.subList(0, events.size() - 1)) {
            JsonObject choice = new JsonObject(event).getJsonArray("choices").getJsonObject(0);
            text.append(choice.getJsonObject("delta").getString("content", ""));
            finish = choice.getString("finish_reason", finish);
        }
        assertThat(text).hasToString("re: stream this");
        assertThat(finish).isEqualTo("stop");
    }

    @Test
    void openAiRefusesAnUnknownModelAndAMissingUserMessage() throws Exception {
        JsonArray messages = new JsonArray().add(new JsonObject().put("role", "user").put("content", "x"));
        HttpResponse<String> model = postJson("/v1/chat/completions", new JsonObject().put("model", "gpt-9").put("messages", messages));
        assertThat(model.statusCode()).isEqualTo(404);
        assertThat(model.body()).contains("model_not_found");
        HttpResponse<String> last = postJson("/v1/chat/completions", new JsonObject().put("model", "default")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "assistant").put("content", "x"))));
        assertThat(last.statusCode()).isEqualTo(400);
        assertThat(last.body()).contains("role 'user'");
    }

    @Test
    void openAiReadsTheLastOfALongConversationAndStillRefusesABodyThatIsNotJsonAnywhere() throws Exception {
        JsonArray messages = new JsonArray();
        for (int i = 0; i < 60; i++) { // within this test's 4 KB body limit
            messages.add(new JsonObject().put("role", i % 2 == 0 ? "user" : "assistant").put("content", "e ] " + i));
        }
        messages.add(new JsonObject().put("role", "user").put("content", "the last one"));
        HttpResponse<String> answered = postJson("/v1/chat/completions", new JsonObject().put("model", "default")
                .put("user", "u-" + UUID.randomUUID()).put("messages", messages));
        assertThat(answered.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(answered.body()).getJsonArray("choices").getJsonObject(0).getJsonObject("message")
                .getString("content")).isEqualTo("re: the last one");

        // an earlier message the server does not read is still JSON it must be able to read
        String broken = "{\"model\":\"default\",\"messages\":[{\"role\":\"user\",\"content\":oops},"
                + "{\"role\":\"user\",\"content\":\"x\"}]}";
        HttpResponse<String> invalid = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                .header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(broken)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(invalid.statusCode()).isEqualTo(400);
        assertThat(invalid.body()).contains("invalid_json");

        // errors name the last message by its place in the whole conversation
        JsonArray endsWrong = messages.copy();
        endsWrong.set(endsWrong.size() - 1, "c");
        HttpResponse<String> notObject = postJson("/v1/chat/completions", new JsonObject().put("model", "default")
                .put("messages", endsWrong));
        assertThat(notObject.statusCode()).isEqualTo(400);
        assertThat(notObject.body()).contains("messages[60] must be an object");
    }

    @Test
    void modelsListsTheDefaultModel() throws Exception {
        JsonObject models = new JsonObject(get("/v1/models").body());
        assertThat(models.getJsonArray("data").getJsonObject(0).getString("id")).isEqualTo("default");
    }

    @Test
    void clusterViewShowsMembersAndEveryPartitionToTheOperatorOnly() throws Exception {
        assertThat(get("/api/v1/cluster").statusCode()).as("a tenant key").isEqualTo(401);
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/cluster"))
                .header("authorization", "Bearer " + OPERATOR_KEY).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        JsonObject cluster = new JsonObject(response.body());
        assertThat(cluster.getJsonArray("members").getJsonObject(0).getString("nodeId")).isEqualTo("gw1");
        assertThat(cluster.getJsonArray("partitions")).hasSize(16);
        assertThat(cluster.getJsonObject("partitionsByOwner").getInteger("echo")).isEqualTo(16);
        assertThat(cluster.getJsonArray("partitions").getJsonObject(0).getLong("epoch")).isPositive();
    }

    /**
     * A long poll woken by the worker's notice of the chat's next reply serves it as it came (SECURITY.md rule 5): what
     * the client gets is exactly what the outbox holds. With --insecure-cluster a notice is only a wake-up
     * (BusTrustIT.aReplyNoticePublishedByAProcessWithoutTheSecretIsNeverServed).
     */
    @Test
    void aLongPollServedFromTheNoticeGetsExactlyTheOutboxRow() throws Exception {
        String chat = "c-" + UUID.randomUUID();
        double waitingBefore = waitingPolls();
        CompletableFuture<HttpResponse<String>> poll = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=0&wait=20"))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
        Await.until("the long poll to be waiting", Duration.ofSeconds(10), () -> waitingPolls() > waitingBefore);
        postJson("/api/v1/messages", message(chat, "m1", "tab\there, \u00e9t\u00e9 \uD83D\uDE00"));
        String served = poll.get(15, java.util.concurrent.TimeUnit.SECONDS).body();
        assertThat(new JsonObject(served).getJsonArray("replies")).hasSize(1);
        assertThat(new JsonObject(served)).isEqualTo(new JsonObject(get("/api/v1/chats/" + chat + "/replies?after=0").body()));
    }

    /**
     * A node that runs alone has a bus no other process reaches: a notice on it comes from its own worker, and a long
     * poll waiting for the chat's next reply serves it without reading. Shown with a notice whose reply is in no outbox:
     * served here, it would only wake the poll (which then reads and finds nothing) on a cluster without certificates.
     */
    @Test
    void onANodeAloneALongPollServesTheNextRepliesNoticeWithoutARead() throws Exception {
        String chat = "alone-" + UUID.randomUUID();
        double waitingBefore = waitingPolls();
        CompletableFuture<HttpResponse<String>> poll = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=0&wait=20"))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
        Await.until("the long poll to be waiting", Duration.ofSeconds(10), () -> waitingPolls() > waitingBefore);
        // when a notice of reply 2 (not the next), then of reply 1 of another tenant's chat of that key, then of reply 1
        node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("n-2", BotRef.main(GatewayRole.DEFAULT_TENANT),
                MessagesApi.CHANNEL, chat, 1, 2, 1, "not the next one", Instant.now()));
        node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("n-other", BotRef.main("someone-else"),
                MessagesApi.CHANNEL, chat, 1, 1, 1, "another tenant's", Instant.now()));
        // then reply 2 woke the poll, which read the outbox, found nothing, and answered empty
        HttpResponse<String> response = poll.get(15, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(new JsonObject(response.body()).getJsonArray("replies")).isEmpty();
        // and a poll waiting when the notice of reply 1 comes serves it
        double parkedBefore = waitingPolls();
        CompletableFuture<HttpResponse<String>> next = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=0&wait=20"))
                .header("authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString());
        Await.until("the long poll to be waiting", Duration.ofSeconds(10), () -> waitingPolls() > parkedBefore);
        node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("n-other", BotRef.main("someone-else"),
                MessagesApi.CHANNEL, chat, 1, 1, 1, "another tenant's", Instant.now()));
        node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("n-1", BotRef.main(GatewayRole.DEFAULT_TENANT),
                MessagesApi.CHANNEL, chat, 1, 1, 1, "pushed", Instant.now()));
        JsonArray replies = new JsonObject(next.get(15, java.util.concurrent.TimeUnit.SECONDS).body()).getJsonArray("replies");
        assertThat(replies).hasSize(1);
        assertThat(replies.getJsonObject(0).getString("text")).isEqualTo("pushed");
    }

    /** Long polls parked on this gateway now, from its /metrics. */
    private double waitingPolls() {
        try {
            String metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
                    .header("authorization", "Bearer " + METRICS_KEY).build(), HttpResponse.BodyHandlers.ofString()).body();
            return Prometheus.sum(metrics, "clawfleet_gateway_waiting{");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void healthAnswersWithoutAKeyAndMetricsOnlyWithOneOrOnTheManagementPort() throws IOException, InterruptedException {
        HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create(base + "/readyz")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(ready.body()).getJsonObject("checks").getString("database")).isEqualTo("up");
        assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/livez")).build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
        // on the public port: not without a key, not with a tenant's key or a wrong one
        HttpResponse<String> bare = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(bare.statusCode()).isEqualTo(401);
        assertThat(bare.body()).contains("management port").doesNotContain("clawfleet_");
        for (String wrong : List.of(KEY, METRICS_KEY + "x", "")) {
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).header("authorization", "Bearer " + wrong)
                    .build(), HttpResponse.BodyHandlers.ofString()).statusCode()).as(wrong).isEqualTo(401);
        }
        for (String key : List.of(METRICS_KEY, OPERATOR_KEY)) {
            HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
                    .header("authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(metrics.statusCode()).isEqualTo(200);
            assertThat(metrics.body()).contains("clawfleet_database_up");
        }
        // the management listener: metrics and health without a key, nothing of the API
        String management = "http://127.0.0.1:" + managementPort;
        assertThat(http.send(HttpRequest.newBuilder(URI.create(management + "/metrics")).build(), HttpResponse.BodyHandlers.ofString())
                .body()).contains("clawfleet_database_up");
        assertThat(http.send(HttpRequest.newBuilder(URI.create(management + "/readyz")).build(), HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(200);
        assertThat(http.send(HttpRequest.newBuilder(URI.create(management + "/api/v1/cluster"))
                .header("authorization", "Bearer " + OPERATOR_KEY).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                .isEqualTo(404);
    }
}
