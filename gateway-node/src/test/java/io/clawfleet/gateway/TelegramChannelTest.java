package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.EchoWorker;
import io.clawfleet.testkit.FakeTelegram;
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

    private TelegramGateway gateway;
    private FakeTelegram telegram;
    private Database database;
    private String base;
    private long channelId;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        gateway = new TelegramGateway(KEY, Map.of("nodeId", "gw-tg", "delivery.backoffMs", "50", "delivery.maxAttempts", "4"));
        telegram = gateway.telegram;
        database = gateway.database;
        base = gateway.base;
        channelId = gateway.channelId;
    }

    @AfterAll
    void stop() {
        gateway.close();
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return gateway.call(method, path, body);
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
        // and the chat was shown "typing…" as its messages were taken
        Await.until("typing shown", Duration.ofSeconds(5), () -> telegram.actions().contains("1001:typing"));
    }

    @Test
    void typingIsShownThroughALongTurnAndStopsWithTheReply() {
        // Telegram shows "typing…" for 5 s: a 10 s turn needs it shown again, twice
        telegram.userSays(1009, "think about it slow:10000");
        Await.until("the slow reply", Duration.ofSeconds(30), () -> telegram.sentTo(1009).size() == 1);
        long shown = telegram.actions().stream().filter("1009:typing"::equals).count();
        assertThat(shown).as("typing shown at once and every 4.5 s of the turn").isBetween(3L, 4L);
        ChannelGateway.pause(5_000);
        assertThat(telegram.actions().stream().filter("1009:typing"::equals).count()).as("no typing after the reply").isEqualTo(shown);
    }

    @Test
    void markdownGoesOutAsTelegramHtmlAndAsPlainTextWhereTelegramCannotParseIt() {
        telegram.userSays(1004, "**bold**, `a < b` and [docs](https://example.com)");
        Await.until("the formatted reply", Duration.ofSeconds(20), () -> telegram.sentTo(1004).size() == 1);
        assertThat(telegram.sentTo(1004)).containsExactly(
                "re: <b>bold</b>, <code>a &lt; b</code> and <a href=\"https://example.com\">docs</a>");
        assertThat(telegram.parseModesTo(1004)).containsExactly("HTML");
        // Telegram refuses the HTML (400 can't parse entities): the same words go out as plain text, at once
        telegram.failNextSends(400);
        telegram.userSays(1004, "**half bold");
        Await.until("the plain reply", Duration.ofSeconds(20), () -> telegram.sentTo(1004).size() == 2);
        assertThat(telegram.sentTo(1004).get(1)).isEqualTo("re: **half bold");
        assertThat(telegram.parseModesTo(1004).get(1)).isNull();
    }

    @Test
    void aLongReplyRetriedAfterAFailedPartSendsOnlyThePartsNotOutYet() {
        String a = "a".repeat(3000);
        String b = "b".repeat(3000);
        String c = "c".repeat(3000);
        // given the second of three parts fails once (a server error)
        telegram.failNextSends(200, 502);
        telegram.userSays(1005, a + "\n" + b + "\n" + c);
        // then the retry starts at the second part: each part once, in order
        Await.until("3 parts in chat 1005", Duration.ofSeconds(20), () -> telegram.sentTo(1005).size() >= 3);
        assertThat(telegram.sentTo(1005)).containsExactly("re: " + a, b, c);
        long[] parts = {0};
        Await.until("the reply recorded as delivered", Duration.ofSeconds(10), () -> {
            var row = result(database.pool().query("SELECT status, parts_sent, attempts FROM outbox o JOIN chats ch ON ch.id = o.chat_id "
                    + "WHERE ch.chat_key LIKE '%:1005'").execute()).iterator().next();
            parts[0] = row.getInteger("parts_sent");
            return "delivered".equals(row.getString("status")) && row.getInteger("attempts") == 2;
        });
        assertThat(parts[0]).isEqualTo(3);
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

    private HttpResponse<String> mode(String mode) throws Exception {
        return call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", mode));
    }

    private long inboxRows(String idempotencyKey) {
        return result(database.pool().preparedQuery("SELECT count(*) FROM inbox WHERE idempotency_key = $1")
                .execute(io.vertx.sqlclient.Tuple.of(idempotencyKey))).iterator().next().getLong(0);
    }

    @Test
    void aBotSwitchedToWebhookModeIsAnsweredThroughItAndBackInPollingModeLosesNothing() throws Exception {
        try {
            // given a message polled before the switch
            telegram.userSays(2001, "polled");
            Await.until("the polled reply", Duration.ofSeconds(20), () -> telegram.sentTo(2001).size() == 1);
            // when the bot is switched to webhook mode
            HttpResponse<String> switched = mode("webhook");
            assertThat(switched.statusCode()).as(switched.body()).isEqualTo(200);
            JsonObject channel = new JsonObject(switched.body());
            assertThat(channel.getString("mode")).isEqualTo("webhook");
            assertThat(channel.getString("webhookUrl")).isEqualTo(base + "/hooks/telegram/" + channelId);
            // then Telegram was given that URL and a fresh 256-bit secret, which the API never shows
            assertThat(telegram.webhookUrl()).isEqualTo(base + "/hooks/telegram/" + channelId);
            assertThat(telegram.webhookSecret()).matches("[A-Za-z0-9_-]{43}");
            assertThat(switched.body()).doesNotContain(telegram.webhookSecret());
            // and messages come through the webhook and are answered in order
            for (int i = 0; i < 3; i++) {
                telegram.userSays(2001, "hooked " + i);
            }
            Await.until("3 replies through the webhook", Duration.ofSeconds(20), () -> telegram.sentTo(2001).size() == 4);
            assertThat(telegram.webhookAnswers()).contains(200);
            // when messages wait at Telegram while the bot goes back to polling
            HttpResponse<String> back = mode("polling");
            assertThat(back.statusCode()).as(back.body()).isEqualTo(200);
            assertThat(new JsonObject(back.body()).getString("mode")).isEqualTo("polling");
            assertThat(new JsonObject(back.body()).getValue("webhookUrl")).isNull();
            assertThat(telegram.webhookUrl()).isNull();
            telegram.userSays(2001, "polled again");
            // then a gateway polls again and every message was answered once, in order
            Await.until("the reply after the switch back", Duration.ofSeconds(20), () -> telegram.sentTo(2001).size() == 5);
            assertThat(telegram.sentTo(2001)).containsExactly("re: polled", "re: hooked 0", "re: hooked 1", "re: hooked 2",
                    "re: polled again");
            assertThat(telegram.pending()).isZero();
        } finally {
            mode("polling");
        }
    }

    @Test
    void theWebhookTakesOnlyAuthenticUpdatesAndAnUpdatePostedTwiceIsOneMessage() throws Exception {
        try {
            assertThat(mode("webhook").statusCode()).isEqualTo(200);
            String secret = telegram.webhookSecret();
            String update = new JsonObject().put("update_id", 900_001).put("message", new JsonObject().put("message_id", 1)
                    .put("date", 0).put("chat", new JsonObject().put("id", 2002).put("type", "private"))
                    .put("from", new JsonObject().put("id", 2002).put("is_bot", false).put("first_name", "U"))
                    .put("text", "once")).encode();
            // a forged update: no secret, a wrong one, the API key instead, the right one on another id -> 401, nothing taken
            assertThat(hook(channelId, null, update).statusCode()).isEqualTo(401);
            assertThat(hook(channelId, "wrong-" + secret.substring(6), update).statusCode()).isEqualTo(401);
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/hooks/telegram/" + channelId))
                    .header("authorization", "Bearer " + KEY).POST(HttpRequest.BodyPublishers.ofString(update)).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(401);
            assertThat(hook(channelId + 1000, secret, update).statusCode()).isEqualTo(401);
            assertThat(hook(channelId, secret, "not json").statusCode()).isEqualTo(400);
            assertThat(hook(channelId, secret, "{\"message\":{}}").statusCode()).isEqualTo(400);
            assertThat(inboxRows("u900001")).isZero();
            // the same update posted twice at once, and once more later (Telegram retrying): one message, one reply
            var first = http.sendAsync(hookRequest(channelId, secret, update), HttpResponse.BodyHandlers.ofString());
            var second = http.sendAsync(hookRequest(channelId, secret, update), HttpResponse.BodyHandlers.ofString());
            assertThat(first.get().statusCode()).isEqualTo(200);
            assertThat(second.get().statusCode()).isEqualTo(200);
            Await.until("the reply", Duration.ofSeconds(20), () -> telegram.sentTo(2002).size() == 1);
            assertThat(hook(channelId, secret, update).statusCode()).isEqualTo(200);
            assertThat(inboxRows("u900001")).isEqualTo(1);
            Thread.sleep(500);
            assertThat(telegram.sentTo(2002)).containsExactly("re: once");
            // a new secret at every switch: the old one is refused from then on
            assertThat(mode("webhook").statusCode()).isEqualTo(200);
            assertThat(telegram.webhookSecret()).isNotEqualTo(secret);
            assertThat(hook(channelId, secret, update).statusCode()).isEqualTo(401);
        } finally {
            mode("polling");
        }
        // and a bot in polling mode has no webhook: its last secret is refused too
        assertThat(hook(channelId, telegram.webhookSecret() == null ? "none" : telegram.webhookSecret(), "{}").statusCode())
                .isEqualTo(401);
    }

    @Test
    void aModeSwitchIsCheckedBeforeTelegramIsCalled() throws Exception {
        assertThat(mode("carrier-pigeon").statusCode()).isEqualTo(400);
        assertThat(call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "webhook")
                .put("maxConnections", 0)).statusCode()).isEqualTo(400);
        assertThat(call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "polling")
                .put("maxConnections", 5)).statusCode()).isEqualTo(400);
        assertThat(call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "webhook")
                .put("token", "x")).statusCode()).isEqualTo(400);
        assertThat(call("PATCH", "/api/v1/channels/999999", new JsonObject().put("mode", "webhook")).statusCode()).isEqualTo(404);
        assertThat(telegram.webhookUrl()).isNull();
    }

    @Test
    void aModeTelegramRefusesChangesNothingNotEvenThePoliciesSentWithIt() throws Exception {
        // given Telegram will not take the webhook URL
        telegram.refuseNextWebhook("HTTPS url must be provided for webhook");
        // when the mode and a sender policy are changed in one request
        HttpResponse<String> refused = call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "webhook")
                .put("dmPolicy", "allowlist").put("allowFrom", new JsonArray().add("42")));
        // then the request fails with Telegram's reason and the channel is as it was: polling, open to everyone
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(502);
        JsonObject error = new JsonObject(refused.body()).getJsonObject("error");
        assertThat(error.getString("code")).isEqualTo("telegram_refused");
        assertThat(error.getString("message")).contains("HTTPS url must be provided").contains("nothing changed");
        JsonObject channel = new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").stream()
                .map(JsonObject.class::cast).filter(c -> c.getLong("id") == channelId).findFirst().orElseThrow();
        assertThat(channel.getString("mode")).isEqualTo("polling");
        assertThat(channel.getString("dmPolicy")).isEqualTo("open");
        assertThat(telegram.webhookUrl()).isNull();
        // and a stranger is still answered
        telegram.userSays(2301, "still open?");
        Await.until("the reply to a stranger", Duration.ofSeconds(20), () -> telegram.sentTo(2301).size() == 1);
    }

    @Test
    void twoModeSwitchesAtOnceAreOneAtATimeAndTheSecretTelegramHoldsIsTheOneTheWebhookTakes() throws Exception {
        try {
            // given Telegram is slow to take a webhook
            telegram.delayWebhook(1_500);
            // when two switches to webhook mode race
            var first = http.sendAsync(patchRequest(new JsonObject().put("mode", "webhook")), HttpResponse.BodyHandlers.ofString());
            Thread.sleep(300); // the first is at Telegram now
            HttpResponse<String> second = http.send(patchRequest(new JsonObject().put("mode", "webhook")),
                    HttpResponse.BodyHandlers.ofString());
            // then the second is refused and changed nothing, and the first went through
            assertThat(second.statusCode()).as(second.body()).isEqualTo(409);
            assertThat(new JsonObject(second.body()).getJsonObject("error").getString("code")).isEqualTo("mode_switch_in_progress");
            assertThat(first.get(30, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            // and the secret Telegram signs with is the one the webhook checks
            String update = new JsonObject().put("update_id", 990_001).put("message", new JsonObject().put("message_id", 1)
                    .put("date", 0).put("chat", new JsonObject().put("id", 2401).put("type", "private"))
                    .put("from", new JsonObject().put("id", 2401).put("is_bot", false).put("first_name", "U"))
                    .put("text", "raced")).encode();
            assertThat(hook(channelId, telegram.webhookSecret(), update).statusCode()).isEqualTo(200);
            // and once the first is done, the account can be switched again at once
            telegram.delayWebhook(0);
            assertThat(mode("polling").statusCode()).isEqualTo(200);
            assertThat(mode("webhook").statusCode()).isEqualTo(200);
        } finally {
            telegram.delayWebhook(0);
            mode("polling");
        }
    }

    private HttpRequest patchRequest(JsonObject body) {
        return HttpRequest.newBuilder(URI.create(base + "/api/v1/channels/" + channelId))
                .header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30)).method("PATCH", HttpRequest.BodyPublishers.ofString(body.encode())).build();
    }

    private HttpRequest hookRequest(long id, String secret, String body) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/hooks/telegram/" + id))
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (secret != null) {
            request.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        return request.build();
    }

    private HttpResponse<String> hook(long id, String secret, String body) throws Exception {
        return http.send(hookRequest(id, secret, body), HttpResponse.BodyHandlers.ofString());
    }
}
