package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Who may talk to a Telegram bot (issue 15): {@code dmPolicy} open, allowlist and pairing, and {@code groupPolicy}
 * mention, open and off. A message that does not count is not stored at all. Telegram is a scripted stand-in, the
 * worker {@code EchoWorker}; each test sets the policies it needs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ChannelAccessTest {

    private static final String KEY = "channel-access-key-0123456789";
    private static final Pattern CODE = Pattern.compile("pairing code is ([A-Z0-9]{4}-[A-Z0-9]{4})");

    private TelegramGateway gateway;
    private FakeTelegram telegram;
    private Database database;
    private String base;
    private long channelId;

    @BeforeAll
    void start() throws Exception {
        gateway = new TelegramGateway(KEY, Map.of("nodeId", "gw-access"));
        telegram = gateway.telegram;
        database = gateway.database;
        base = gateway.base;
        channelId = gateway.channelId;
        JsonObject channel = new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").getJsonObject(0);
        assertThat(channel.getString("dmPolicy")).isEqualTo("open");
        assertThat(channel.getString("groupPolicy")).isEqualTo("mention");
    }

    @AfterAll
    void stop() {
        gateway.close();
    }

    @BeforeEach
    void openAgain() throws Exception {
        assertThat(patch(new JsonObject().put("dmPolicy", "open").put("groupPolicy", "mention").put("allowFrom", new JsonArray()))
                .statusCode()).isEqualTo(200);
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return gateway.call(method, path, body);
    }

    private HttpResponse<String> patch(JsonObject body) throws Exception {
        return call("PATCH", "/api/v1/channels/" + channelId, body);
    }

    private long storedFrom(long chatId) {
        return result(database.pool().preparedQuery("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1")
                .execute(Tuple.of(channelId + ":" + chatId))).iterator().next().getLong(0);
    }

    /** Waits until the bot has taken every update so far (the fake's queue is empty), then a little for the turn. */
    private void drained() throws InterruptedException {
        Await.until("the updates taken", Duration.ofSeconds(20), () -> telegram.pending() == 0);
        Thread.sleep(300);
    }

    @Test
    void anAllowlistTakesOnlyItsSendersAndStoresNothingOfOthers() throws Exception {
        HttpResponse<String> set = patch(new JsonObject().put("dmPolicy", "allowlist").put("allowFrom", new JsonArray().add(3001).add("3009")));
        assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
        assertThat(new JsonObject(set.body()).getString("dmPolicy")).isEqualTo("allowlist");
        telegram.userSays(3002, "let me in");
        telegram.userSays(3001, "hello");
        Await.until("the allowed sender's reply", Duration.ofSeconds(20), () -> telegram.sentTo(3001).size() == 1);
        drained();
        assertThat(telegram.sentTo(3001)).containsExactly("re: hello");
        assertThat(telegram.sentTo(3002)).as("nobody answers a stranger, not even with a code").isEmpty();
        assertThat(storedFrom(3002)).as("a stranger's message is not stored").isZero();
        JsonArray senders = new JsonObject(call("GET", "/api/v1/channels/" + channelId + "/senders", null).body()).getJsonArray("senders");
        assertThat(senders.stream().map(s -> ((JsonObject) s).getString("senderId")).toList()).containsExactly("3001", "3009");
    }

    @Test
    void anUnknownSenderGetsACodeTheTenantApprovesAndIsAnsweredFromThenOn() throws Exception {
        assertThat(patch(new JsonObject().put("dmPolicy", "pairing")).statusCode()).isEqualTo(200);
        // a stranger writes: a code, once, and nothing stored
        telegram.userSays(3003, "hello?");
        telegram.userSays(3003, "anyone?");
        drained();
        assertThat(telegram.sentTo(3003)).hasSize(1);
        Matcher matcher = CODE.matcher(telegram.sentTo(3003).get(0));
        assertThat(matcher.find()).as(telegram.sentTo(3003).get(0)).isTrue();
        String code = matcher.group(1);
        assertThat(storedFrom(3003)).isZero();
        // the tenant sees it waiting, with who asked
        JsonArray pairings = new JsonObject(call("GET", "/api/v1/pairings", null).body()).getJsonArray("pairings");
        JsonObject pending = pairings.stream().map(JsonObject.class::cast).filter(p -> code.equals(p.getString("code"))).findFirst()
                .orElseThrow();
        assertThat(pending.getString("senderId")).isEqualTo("3003");
        assertThat(pending.getLong("channelId")).isEqualTo(channelId);
        // a wrong code is a 404; the right one, typed loosely, approves and tells the sender
        assertThat(call("POST", "/api/v1/pairings/ZZZZ-ZZZZ/approve", null).statusCode()).isEqualTo(404);
        HttpResponse<String> approved = call("POST", "/api/v1/pairings/" + code.toLowerCase().replace("-", "") + "/approve", null);
        assertThat(approved.statusCode()).as(approved.body()).isEqualTo(200);
        assertThat(new JsonObject(approved.body()).getString("senderId")).isEqualTo("3003");
        Await.until("the approval notice", Duration.ofSeconds(10), () -> telegram.sentTo(3003).size() == 2);
        assertThat(telegram.sentTo(3003).get(1)).contains("approved");
        // a code works once
        assertThat(call("POST", "/api/v1/pairings/" + code + "/approve", null).statusCode()).isEqualTo(404);
        // and the sender is answered now
        telegram.userSays(3003, "now?");
        Await.until("the reply", Duration.ofSeconds(20), () -> telegram.sentTo(3003).size() == 3);
        assertThat(telegram.sentTo(3003).get(2)).isEqualTo("re: now?");
        assertThat(storedFrom(3003)).isEqualTo(1);
    }

    @Test
    void groupMessagesCountWhenTheyNameTheBotUnlessTheTenantSaysOtherwise() throws Exception {
        // mention (the default): only "@fake_bot ..." counts
        telegram.userSaysInGroup(-4001, 3004, "talking among ourselves");
        telegram.userSaysInGroup(-4001, 3004, "@Fake_Bot what time is it?");
        Await.until("the reply in the group", Duration.ofSeconds(20), () -> telegram.sentTo(-4001).size() == 1);
        drained();
        assertThat(telegram.sentTo(-4001)).containsExactly("re: @Fake_Bot what time is it?");
        // open: every message
        assertThat(patch(new JsonObject().put("groupPolicy", "open")).statusCode()).isEqualTo(200);
        telegram.userSaysInGroup(-4001, 3004, "and this");
        Await.until("a reply without a mention", Duration.ofSeconds(20), () -> telegram.sentTo(-4001).size() == 2);
        // off: none
        assertThat(patch(new JsonObject().put("groupPolicy", "off")).statusCode()).isEqualTo(200);
        telegram.userSaysInGroup(-4001, 3004, "@fake_bot hello?");
        drained();
        assertThat(telegram.sentTo(-4001)).hasSize(2);
        // with an allowlist, a group message needs an allowed sender too, and a stranger gets no code in a group
        assertThat(patch(new JsonObject().put("groupPolicy", "open").put("dmPolicy", "pairing")).statusCode()).isEqualTo(200);
        telegram.userSaysInGroup(-4001, 3005, "@fake_bot I am new");
        drained();
        assertThat(telegram.sentTo(-4001)).hasSize(2);
        assertThat(telegram.sentTo(3005)).isEmpty();
    }

    @Test
    void badPoliciesAreClearErrorsAndChangeNothing() throws Exception {
        assertThat(patch(new JsonObject().put("dmPolicy", "friends")).statusCode()).isEqualTo(400);
        assertThat(patch(new JsonObject().put("groupPolicy", "always")).statusCode()).isEqualTo(400);
        assertThat(patch(new JsonObject().put("allowFrom", "3001")).statusCode()).isEqualTo(400);
        assertThat(patch(new JsonObject().put("allowFrom", new JsonArray().add(1.5))).statusCode()).isEqualTo(400);
        assertThat(patch(new JsonObject().put("allowFrom", new JsonArray().add("x".repeat(65)))).statusCode()).isEqualTo(400);
        assertThat(patch(new JsonObject()).statusCode()).isEqualTo(400);
        assertThat(call("GET", "/api/v1/channels/999999/senders", null).statusCode()).isEqualTo(404);
        JsonObject channel = new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").getJsonObject(0);
        assertThat(channel.getString("dmPolicy")).isEqualTo("open");
        assertThat(channel.getString("groupPolicy")).isEqualTo("mention");
    }
}
