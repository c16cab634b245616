package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeSlack;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Slack (Events API) end to end at the gateway (issue 15): an app registered with its token and signing secret, events
 * posted signed as Slack signs them (by {@link FakeSlack}, whose signing code is its own), replies posted back with
 * {@code chat.postMessage} in the thread the chat is. The worker is {@link EchoWorker} ({@code re: <text>}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SlackChannelTest {

    private static final String KEY = "slack-key-0123456789abc";
    private static final Pattern CODE = Pattern.compile("pairing code is ([A-Z0-9]{4}-[A-Z0-9]{4})");

    private ChannelGateway gateway;
    private FakeSlack slack;
    private Database database;
    private String base;
    private String publicUrl;
    private long channelId;

    @BeforeAll
    void start() throws Exception {
        gateway = new ChannelGateway("gw-slack", KEY);
        database = gateway.database;
        base = gateway.base;
        publicUrl = gateway.publicUrl;
        slack = new FakeSlack(gateway.vertx);
        HttpResponse<String> registered = register(FakeSlack.TOKEN, FakeSlack.SIGNING_SECRET);
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        JsonObject account = new JsonObject(registered.body());
        channelId = account.getLong("id");
        slack.subscribe(account.getString("webhookUrl"), FakeSlack.SIGNING_SECRET);
    }

    @AfterAll
    void stop() {
        gateway.close();
    }

    private HttpResponse<String> register(String token, String signingSecret) throws Exception {
        return call("POST", "/api/v1/channels/slack", new JsonObject().put("token", token).put("signingSecret", signingSecret)
                .put("apiUrl", slack.url()));
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return gateway.call(method, path, body);
    }

    /** A user writes, and Slack delivers the event (retrying as Slack does); returns the message's ts. */
    private String says(String conversation, String user, String text, String threadTs) {
        String ts = slack.nextTs();
        delivered(slack.envelope(slack.messageEvent(conversation, user, text, ts, threadTs)));
        return ts;
    }

    /** Slack delivers an envelope, retrying as Slack does, and it is taken. */
    private void delivered(JsonObject envelope) {
        assertThat(result(slack.deliver(envelope), Duration.ofSeconds(60))).as("answers of the Request URL so far: %s", slack.answers())
                .isEqualTo(200);
    }

    private long inboxRows(String chatKeyLike) {
        return gateway.inboxRows("slack", chatKeyLike);
    }

    @Test
    void anAppIsRegisteredByItsTokenAndSigningSecretAndNeitherIsShownOrStoredInTheClear() throws Exception {
        HttpResponse<String> list = call("GET", "/api/v1/channels", null);
        JsonObject account = new JsonObject(list.body()).getJsonArray("channels").stream().map(JsonObject.class::cast)
                .filter(c -> c.getLong("id") == channelId).findFirst().orElseThrow();
        assertThat(account.getString("channel")).isEqualTo("slack");
        assertThat(account.getString("name")).isEqualTo(FakeSlack.BOT_NAME);
        assertThat(account.getString("accountUserId")).isEqualTo(FakeSlack.BOT_USER);
        assertThat(account.getString("mode")).isEqualTo("webhook");
        assertThat(account.getString("webhookUrl")).isEqualTo(publicUrl + "/hooks/slack/" + channelId);
        assertThat(account.getString("tokenHint")).isEqualTo("xoxb-…oken");
        assertThat(list.body()).doesNotContain(FakeSlack.TOKEN).doesNotContain(FakeSlack.SIGNING_SECRET);
        Row row = result(database.pool().preparedQuery("SELECT token, token_enc, signing_secret_enc FROM channel_bots WHERE id = $1")
                .execute(Tuple.of(channelId))).iterator().next();
        assertThat(row.getString("token")).isNull();
        assertThat(row.getBuffer("token_enc").toString()).doesNotContain(FakeSlack.TOKEN);
        assertThat(row.getBuffer("signing_secret_enc").toString()).doesNotContain(FakeSlack.SIGNING_SECRET);
        // registering the same app again (a new signing secret, say) changes it, and adds nothing
        HttpResponse<String> again = register(FakeSlack.TOKEN, FakeSlack.SIGNING_SECRET);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(201);
        assertThat(new JsonObject(again.body()).getLong("id")).isEqualTo(channelId);
    }

    @Test
    void badRegistrationsAreClearErrorsAndStoreNothing() throws Exception {
        int before = new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").size();
        assertThat(register("not-a-token", FakeSlack.SIGNING_SECRET).statusCode()).isEqualTo(400);
        assertThat(register(FakeSlack.TOKEN, "short").statusCode()).isEqualTo(400);
        HttpResponse<String> refused = register("xoxb-9999-9999-someOtherToken", FakeSlack.SIGNING_SECRET);
        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("code")).isEqualTo("token_check_failed");
        HttpResponse<String> mode = call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "polling"));
        assertThat(mode.statusCode()).isEqualTo(400);
        assertThat(mode.body()).contains("webhook only");
        assertThat(new JsonObject(call("GET", "/api/v1/channels", null).body()).getJsonArray("channels")).hasSize(before);
    }

    @Test
    void theRequestUrlAnswersSlacksChallenge() {
        JsonObject verification = new JsonObject().put("token", "x").put("challenge", "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
                .put("type", "url_verification");
        HttpResponse<String> answer = post(verification, FakeSlack.SIGNING_SECRET, now(), "/hooks/slack/" + channelId);
        assertThat(answer.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(answer.body()).getString("challenge")).isEqualTo("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");
    }

    @Test
    void aDirectMessageIsAnsweredInItsConversationInOrder() {
        for (int i = 0; i < 4; i++) {
            says("D0001", "U0001", "hello " + i, null);
        }
        Await.until("4 replies in D0001", Duration.ofSeconds(20), () -> slack.sentTo("D0001").size() >= 4);
        assertThat(slack.sentTo("D0001")).containsExactly("re: hello 0", "re: hello 1", "re: hello 2", "re: hello 3");
        assertThat(slack.sent()).filteredOn(m -> m.getString("channel").equals("D0001")).allMatch(m -> m.getValue("thread_ts") == null);
        assertThat(inboxRows("%:D0001")).isEqualTo(4);
    }

    @Test
    void aRetriedEventAndAMentionsTwoEventsAreOneMessageAndOneReply() {
        // Slack retries an event whose answer it did not see: the same event_id, X-Slack-Retry-Num 1
        String ts = slack.nextTs();
        JsonObject envelope = slack.envelope(slack.messageEvent("D0002", "U0002", "once", ts, null));
        delivered(envelope);
        assertThat(postRetry(envelope).statusCode()).isEqualTo(200);
        // a mention in a channel comes as a message event and an app_mention event, with two event ids
        String mentionTs = slack.nextTs();
        String text = "<@" + FakeSlack.BOT_USER + "> what is 2 & 3?";
        delivered(slack.envelope(slack.messageEvent("C0003", "U0003", text, mentionTs, null)));
        delivered(slack.envelope(slack.mentionEvent("C0003", "U0003", text, mentionTs, null)));
        Await.until("both replies", Duration.ofSeconds(20), () -> slack.sentTo("D0002").size() == 1 && slack.sentTo("C0003").size() == 1);
        // the channel's reply goes in the thread the mention started, as mrkdwn (Slack's escapes, the mention as a name)
        JsonObject reply = slack.sent().stream().filter(m -> m.getString("channel").equals("C0003")).findFirst().orElseThrow();
        assertThat(reply.getString("thread_ts")).isEqualTo(mentionTs);
        assertThat(reply.getString("text")).isEqualTo("re: @" + FakeSlack.BOT_NAME + " what is 2 &amp; 3?");
        pause(2_000);
        assertThat(slack.sentTo("D0002")).hasSize(1);
        assertThat(slack.sentTo("C0003")).hasSize(1);
        assertThat(inboxRows("%:D0002")).isEqualTo(1);
        assertThat(inboxRows("%:C0003:" + mentionTs)).isEqualTo(1);
    }

    @Test
    void aThreadIsAChatAndTheAppsOwnMessagesAndEditsAreNotMessages() {
        String root = says("C0004", "U0004", "<@" + FakeSlack.BOT_USER + "> start", null);
        says("C0004", "U0005", "<@" + FakeSlack.BOT_USER + "> more", root);
        // not the app's to answer: its own reply coming back, another bot's message, an edit
        says("C0004", FakeSlack.BOT_USER, "re: something", root);
        JsonObject botMessage = slack.messageEvent("C0004", "U0006", "beep", slack.nextTs(), root).put("bot_id", "B0009");
        delivered(slack.envelope(botMessage));
        JsonObject edit = slack.messageEvent("C0004", "U0004", "<@" + FakeSlack.BOT_USER + "> edited", slack.nextTs(), root)
                .put("subtype", "message_changed");
        delivered(slack.envelope(edit));
        Await.until("two replies in the thread", Duration.ofSeconds(20), () -> slack.sentTo("C0004").size() >= 2);
        assertThat(slack.sent()).filteredOn(m -> m.getString("channel").equals("C0004")).extracting(m -> m.getString("thread_ts"))
                .containsExactly(root, root);
        assertThat(inboxRows("%:C0004:" + root)).isEqualTo(2);
        assertThat(inboxRows("%:C0004%")).isEqualTo(2);
    }

    @Test
    void forgedStaleOrTamperedRequestsAreRefusedAndStoreNothing() {
        String ts = slack.nextTs();
        JsonObject envelope = slack.envelope(slack.messageEvent("D0005", "U0007", "forged", ts, null));
        String path = "/hooks/slack/" + channelId;
        assertThat(post(envelope, "wrongsecret0123456789abcdef", now(), path).statusCode()).isEqualTo(401);
        assertThat(post(envelope, FakeSlack.SIGNING_SECRET, now() - 301, path).statusCode()).isEqualTo(401);
        assertThat(post(envelope, FakeSlack.SIGNING_SECRET, now() + 301, path).statusCode()).isEqualTo(401);
        assertThat(post(envelope, FakeSlack.SIGNING_SECRET, now(), "/hooks/slack/999999").statusCode()).isEqualTo(401);
        // the Slack account's id at the Telegram webhook is no Telegram webhook
        assertThat(post(envelope, FakeSlack.SIGNING_SECRET, now(), "/hooks/telegram/" + channelId).statusCode()).isEqualTo(401);
        // signed, then changed on the way
        String timestamp = Long.toString(now());
        String signature = FakeSlack.sign(FakeSlack.SIGNING_SECRET, timestamp, Buffer.buffer(envelope.encode()));
        HttpResponse<String> tampered = send(path, envelope.encode().replace("forged", "FORGED"), timestamp, signature);
        assertThat(tampered.statusCode()).isEqualTo(401);
        assertThat(send(path, envelope.encode(), timestamp, null).statusCode()).isEqualTo(401);
        assertThat(inboxRows("%:D0005")).isZero();
        // the genuine request, for contrast, is taken
        assertThat(send(path, envelope.encode(), timestamp, signature).statusCode()).isEqualTo(200);
        assertThat(inboxRows("%:D0005")).isEqualTo(1);
    }

    @Test
    void longRepliesGoOutInPartsUnderSlacksSizeAsMrkdwn() {
        String paragraph = "**Bold** words, _lean_ words and [a link](https://example.com/a?b=1&c=2). ".repeat(30);
        String text = paragraph + "\n\n" + paragraph + "\n\n" + paragraph;
        says("D0006", "U0008", text, null);
        Await.until("the parts", Duration.ofSeconds(20), () -> slack.sentTo("D0006").size() >= 2);
        pause(1_000);
        List<String> parts = slack.sentTo("D0006");
        assertThat(parts).hasSizeBetween(2, 3).allMatch(p -> p.length() <= 4_000 + 200);
        assertThat(parts.get(0)).startsWith("re: *Bold* words, _lean_ words and <https://example.com/a?b=1&amp;c=2|a link>.");
        assertThat(String.join(" ", parts)).doesNotContain("**");
    }

    @Test
    void aRateLimitedPostWaitsItsRetryAfterAndAnErrorSlackKeepsGivingIsADeadLetter() throws Exception {
        slack.failNextPosts("429");
        says("D0007", "U0009", "slow down", null);
        Await.until("the reply after the 429", Duration.ofSeconds(20), () -> slack.sentTo("D0007").size() == 1);
        // the channel went away: Slack answers channel_not_found, which no retry changes
        slack.failNextPosts("channel_not_found");
        says("D0008", "U0010", "anyone?", null);
        JsonObject[] letter = {null};
        Await.until("an outbound dead letter", Duration.ofSeconds(20), () -> {
            try {
                letter[0] = new JsonObject(call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters").stream()
                        .map(JsonObject.class::cast).filter(l -> "outbound".equals(l.getString("kind"))
                                && l.getString("error", "").contains("channel_not_found")).findFirst().orElse(null);
                return letter[0] != null;
            } catch (Exception e) {
                return false;
            }
        });
        assertThat(letter[0].getInteger("attempts")).isEqualTo(1);
        assertThat(slack.sentTo("D0008")).isEmpty();
        assertThat(call("POST", "/api/v1/dead-letters/" + letter[0].getLong("id") + "/replay", null).statusCode()).isEqualTo(202);
        Await.until("the replayed reply", Duration.ofSeconds(20), () -> slack.sentTo("D0008").size() == 1);
        assertThat(slack.sentTo("D0008")).containsExactly("re: anyone?");
    }

    @Test
    void inPairingModeAStrangerGetsACodeAndIsAnsweredOnceApprovedAndGroupsNeedAMention() throws Exception {
        HttpResponse<String> pairing = call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("dmPolicy", "pairing"));
        assertThat(pairing.statusCode()).as(pairing.body()).isEqualTo(200);
        try {
            says("D0009", "U0011", "let me in", null);
            Await.until("a code", Duration.ofSeconds(10), () -> slack.sentTo("D0009").size() == 1);
            Matcher code = CODE.matcher(slack.sentTo("D0009").get(0));
            assertThat(code.find()).isTrue();
            assertThat(inboxRows("%:D0009")).isZero();
            HttpResponse<String> approved = call("POST", "/api/v1/pairings/" + code.group(1) + "/approve", null);
            assertThat(approved.statusCode()).as(approved.body()).isEqualTo(200);
            assertThat(new JsonObject(approved.body()).getString("senderId")).isEqualTo("U0011");
            Await.until("told", Duration.ofSeconds(10), () -> slack.sentTo("D0009").size() == 2);
            assertThat(slack.sentTo("D0009").get(1)).contains("approved");
            says("D0009", "U0011", "hello now", null);
            Await.until("answered", Duration.ofSeconds(20), () -> slack.sentTo("D0009").size() == 3);
            assertThat(slack.sentTo("D0009").get(2)).isEqualTo("re: hello now");
            // in a channel, the approved sender is answered only when the app is named (groupPolicy mention)
            says("C0010", "U0011", "just chatting", null);
            String named = says("C0010", "U0011", "<@" + FakeSlack.BOT_USER + "> and you?", null);
            Await.until("the named one answered", Duration.ofSeconds(20), () -> slack.sentTo("C0010").size() == 1);
            assertThat(inboxRows("%:C0010%")).isEqualTo(1);
            assertThat(slack.sent()).filteredOn(m -> m.getString("channel").equals("C0010"))
                    .extracting(m -> m.getString("thread_ts")).containsExactly(named);
        } finally {
            call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("dmPolicy", "open"));
        }
    }

    private HttpResponse<String> postRetry(JsonObject envelope) {
        String timestamp = Long.toString(now());
        String body = envelope.encode();
        return gateway.send(HttpRequest.newBuilder(URI.create(base + "/hooks/slack/" + channelId))
                .header("content-type", "application/json").header("X-Slack-Request-Timestamp", timestamp)
                .header("X-Slack-Signature", FakeSlack.sign(FakeSlack.SIGNING_SECRET, timestamp, Buffer.buffer(body)))
                .header("X-Slack-Retry-Num", "1").header("X-Slack-Retry-Reason", "http_timeout")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private HttpResponse<String> post(JsonObject envelope, String secret, long timestamp, String path) {
        String body = envelope.encode();
        return send(path, body, Long.toString(timestamp), FakeSlack.sign(secret, Long.toString(timestamp), Buffer.buffer(body)));
    }

    private HttpResponse<String> send(String path, String body, String timestamp, String signature) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).header("content-type", "application/json")
                .header("X-Slack-Request-Timestamp", timestamp).POST(HttpRequest.BodyPublishers.ofString(body));
        if (signature != null) {
            request.header("X-Slack-Signature", signature);
        }
        return gateway.send(request);
    }

    private static void pause(long ms) {
        ChannelGateway.pause(ms);
    }

    private static long now() {
        return System.currentTimeMillis() / 1000;
    }
}
