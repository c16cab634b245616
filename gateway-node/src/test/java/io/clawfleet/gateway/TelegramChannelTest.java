package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.EchoWorker;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Telegram channel end to end at the gateway: updates polled into the inbox, replies pushed
 * out in order, failed sends retried with backoff, permanent failures turned into dead letters
 * that can be replayed. Telegram is a scripted stand-in; the worker is {@link EchoWorker}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TelegramChannelTest {

    private static final String KEY = "telegram-key-0123456789";

    private NodeRuntime node;
    private Vertx vertx;
    private Database database;
    private FakeTelegram telegram;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        telegram = new FakeTelegram(vertx);
        DbUrl db = TestDatabases.freshEmpty();
        // The fake Bot API listens on loopback, which a tenant's URL may reach only when the operator allows it.
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw-tg",
                "delivery.backoffMs", "50", "delivery.maxAttempts", "4", "egress.allowedHosts", "127.0.0.1")), db,
                List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        database = Database.connect(vertx, db, 2, 5_000);
        new EchoWorker(node.vertx(), database.pool(), 16);
        HttpResponse<String> registered = call("POST", "/api/v1/channels/telegram",
                new JsonObject().put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).isEqualTo(201);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(vertx.close());
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + KEY)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aRegisteredBotIsListedWithoutItsToken() throws Exception {
        HttpResponse<String> list = call("GET", "/api/v1/channels", null);
        JsonArray channels = new JsonObject(list.body()).getJsonArray("channels");
        assertThat(channels.getJsonObject(0).getString("name")).isEqualTo("fake_bot");
        assertThat(channels.getJsonObject(0).getString("channel")).isEqualTo("telegram");
        assertThat(list.body()).doesNotContain(FakeTelegram.TOKEN);
    }

    @Test
    void aTokenTelegramRefusesIsAClearErrorAndNothingIsStored() throws Exception {
        HttpResponse<String> refused = call("POST", "/api/v1/channels/telegram",
                new JsonObject().put("token", "999:wrong-token-ABCDEFGHIJ").put("apiUrl", telegram.url()));
        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("code")).isEqualTo("token_check_failed");
        assertThat(new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels")).hasSize(1);
    }

    @Test
    void messagesAreAnsweredInOrderInTheirChat() {
        for (int i = 0; i < 5; i++) {
            telegram.userSays(1001, "hello " + i);
        }
        Await.until("5 replies in chat 1001", Duration.ofSeconds(20), () -> telegram.sentTo(1001).size() >= 5);
        assertThat(telegram.sentTo(1001)).containsExactly("re: hello 0", "re: hello 1", "re: hello 2", "re: hello 3", "re: hello 4");
    }

    @Test
    void aFailedSendIsRetriedWithBackoffAndKeepsTheChatsOrder() {
        // given Telegram fails the next sends (a server error, then a rate limit with retry_after)
        telegram.failNextSends(502, 429);
        telegram.userSays(1002, "first");
        telegram.userSays(1002, "second");
        // then both replies arrive, in order, the first after its retries
        Await.until("2 replies in chat 1002", Duration.ofSeconds(20), () -> telegram.sentTo(1002).size() >= 2);
        assertThat(telegram.sentTo(1002)).containsExactly("re: first", "re: second");
        long attempts = result(database.pool().query("SELECT max(attempts) FROM outbox WHERE push AND status = 'delivered'").execute())
                .iterator().next().getLong(0);
        assertThat(attempts).isGreaterThanOrEqualTo(3);
    }

    @Test
    void aReplyTelegramRefusesForGoodIsADeadLetterThatCanBeReplayed() throws Exception {
        // given Telegram refuses the send permanently (the user blocked the bot)
        telegram.failNextSends(403);
        telegram.userSays(1003, "are you there?");
        JsonObject[] letter = {null};
        Await.until("an outbound dead letter", Duration.ofSeconds(20), () -> {
            try {
                letter[0] = new JsonObject(call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters").stream()
                        .map(JsonObject.class::cast).filter(l -> "outbound".equals(l.getString("kind"))).findFirst().orElse(null);
                return letter[0] != null;
            } catch (Exception e) {
                return false;
            }
        });
        assertThat(letter[0].getString("error")).contains("403").contains("blocked");
        assertThat(letter[0].getInteger("attempts")).isEqualTo(1);
        assertThat(telegram.sentTo(1003)).isEmpty();
        // when it is replayed (the user unblocked the bot) / then the reply goes out
        assertThat(call("POST", "/api/v1/dead-letters/" + letter[0].getLong("id") + "/replay", null).statusCode()).isEqualTo(202);
        Await.until("the replayed reply", Duration.ofSeconds(20), () -> telegram.sentTo(1003).size() == 1);
        assertThat(telegram.sentTo(1003)).containsExactly("re: are you there?");
    }
}
