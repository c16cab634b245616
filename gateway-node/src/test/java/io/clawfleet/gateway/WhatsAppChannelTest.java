package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeWhatsApp;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * WhatsApp (Cloud API) end to end at the gateway (issue 15): a business number registered with its access token and
 * app secret, Meta's webhook verification with the verify token given at registration, notifications signed as Meta
 * signs them ({@link FakeWhatsApp}, whose HMAC code is its own) and posted again until answered, replies sent with the
 * Graph API. The worker is {@link io.clawfleet.testkit.EchoWorker} ({@code re: <text>}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WhatsAppChannelTest {

    private static final String KEY = "whatsapp-key-0123456789";
    private static final Pattern CODE = Pattern.compile("pairing code is ([A-Z0-9]{4}-[A-Z0-9]{4})");

    private ChannelGateway gateway;
    private FakeWhatsApp whatsapp;
    private Database database;
    private long channelId;
    private String verifyToken;

    @BeforeAll
    void start() throws Exception {
        gateway = new ChannelGateway("gw-whatsapp", KEY);
        database = gateway.database;
        whatsapp = new FakeWhatsApp(gateway.vertx);
        HttpResponse<String> registered = register(FakeWhatsApp.TOKEN, FakeWhatsApp.APP_SECRET, FakeWhatsApp.PHONE_NUMBER_ID);
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        JsonObject account = new JsonObject(registered.body());
        channelId = account.getLong("id");
        verifyToken = account.getString("verifyToken");
        whatsapp.callback(account.getString("webhookUrl"));
    }

    @AfterAll
    void stop() {
        gateway.close();
    }

    private HttpResponse<String> register(String token, String appSecret, String phoneNumberId) throws Exception {
        return gateway.call("POST", "/api/v1/channels/whatsapp", new JsonObject().put("accessToken", token).put("appSecret", appSecret)
                .put("phoneNumberId", phoneNumberId).put("apiUrl", whatsapp.url()));
    }

    /** A user writes; Meta posts the notification (again until answered 200), and it is taken. */
    private JsonObject says(String from, String text) {
        JsonObject message = whatsapp.text(from, text);
        delivered(whatsapp.notification(List.of(message), List.of()));
        return message;
    }

    private void delivered(JsonObject notification) {
        assertThat(result(whatsapp.deliver(notification), Duration.ofSeconds(60))).as("answers so far: %s", whatsapp.answers())
                .isEqualTo(200);
    }

    private HttpResponse<String> verify(String mode, String token, String challenge) {
        return gateway.send(HttpRequest.newBuilder(URI.create(gateway.base + "/hooks/whatsapp/" + channelId + "?hub.mode=" + mode
                + "&hub.verify_token=" + URLEncoder.encode(token, StandardCharsets.UTF_8) + "&hub.challenge=" + challenge)).GET());
    }

    private HttpResponse<String> post(String path, String body, String signature) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(gateway.base + path)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (signature != null) {
            request.header("X-Hub-Signature-256", signature);
        }
        return gateway.send(request);
    }

    @Test
    void aNumberIsRegisteredWithItsSecretsSealedAndMetasVerificationNeedsTheTokenShownOnce() throws Exception {
        JsonObject account = new JsonObject(gateway.call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").stream()
                .map(JsonObject.class::cast).filter(c -> c.getLong("id") == channelId).findFirst().orElseThrow();
        assertThat(account.getString("channel")).isEqualTo("whatsapp");
        assertThat(account.getString("name")).isEqualTo(FakeWhatsApp.DISPLAY_NUMBER);
        assertThat(account.getString("accountUserId")).isEqualTo(FakeWhatsApp.PHONE_NUMBER_ID);
        assertThat(account.getString("webhookUrl")).isEqualTo(gateway.publicUrl + "/hooks/whatsapp/" + channelId);
        assertThat(account.getString("tokenHint")).isEqualTo("EAA…6789");
        assertThat(account.containsKey("verifyToken")).isFalse();
        assertThat(account.encode()).doesNotContain(FakeWhatsApp.TOKEN).doesNotContain(FakeWhatsApp.APP_SECRET).doesNotContain(verifyToken);
        Row row = result(database.pool().preparedQuery("SELECT token, token_enc, signing_secret_enc, webhook_secret_hash FROM channel_bots"
                + " WHERE id = $1").execute(Tuple.of(channelId))).iterator().next();
        assertThat(row.getString("token")).isNull();
        assertThat(row.getBuffer("token_enc").toString()).doesNotContain(FakeWhatsApp.TOKEN);
        assertThat(row.getBuffer("signing_secret_enc").toString()).doesNotContain(FakeWhatsApp.APP_SECRET);
        assertThat(row.getBuffer("webhook_secret_hash").toString()).doesNotContain(verifyToken);
        // Meta's check of the callback URL: the challenge back with the right token, 403 otherwise
        HttpResponse<String> verified = verify("subscribe", verifyToken, "1158201444");
        assertThat(verified.statusCode()).isEqualTo(200);
        assertThat(verified.body()).isEqualTo("1158201444");
        assertThat(verify("subscribe", "not-the-token", "1158201444").statusCode()).isEqualTo(403);
        assertThat(verify("unsubscribe", verifyToken, "1158201444").statusCode()).isEqualTo(403);
    }

    @Test
    void badRegistrationsAreClearErrorsAndStoreNothing() throws Exception {
        int before = new JsonObject(gateway.call("GET", "/api/v1/channels", null).body()).getJsonArray("channels").size();
        assertThat(register("short", FakeWhatsApp.APP_SECRET, FakeWhatsApp.PHONE_NUMBER_ID).statusCode()).isEqualTo(400);
        assertThat(register(FakeWhatsApp.TOKEN, "x", FakeWhatsApp.PHONE_NUMBER_ID).statusCode()).isEqualTo(400);
        assertThat(register(FakeWhatsApp.TOKEN, FakeWhatsApp.APP_SECRET, "+1 555 0100").statusCode()).isEqualTo(400);
        HttpResponse<String> refused = register("EAAGanotherTokenMetaRefuses0123", FakeWhatsApp.APP_SECRET, FakeWhatsApp.PHONE_NUMBER_ID);
        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("code")).isEqualTo("token_check_failed");
        assertThat(gateway.call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("mode", "polling")).statusCode())
                .isEqualTo(400);
        assertThat(new JsonObject(gateway.call("GET", "/api/v1/channels", null).body()).getJsonArray("channels")).hasSize(before);
    }

    @Test
    void messagesOfOneNotificationAreAnsweredInOrderOnceEachAndMarkedRead() {
        JsonObject first = whatsapp.text("15550001", "one");
        JsonObject second = whatsapp.text("15550001", "two");
        JsonObject third = whatsapp.text("15550002", "three");
        JsonObject notification = whatsapp.notification(List.of(first, second, third), List.of());
        delivered(notification);
        // Meta posts it again (its answer lost on the way), to this gateway or another: nothing new
        delivered(notification);
        Await.until("three replies", Duration.ofSeconds(20),
                () -> whatsapp.sentTo("15550001").size() >= 2 && whatsapp.sentTo("15550002").size() >= 1);
        ChannelGateway.pause(1_500);
        assertThat(whatsapp.sentTo("15550001")).containsExactly("re: one", "re: two");
        assertThat(whatsapp.sentTo("15550002")).containsExactly("re: three");
        assertThat(gateway.inboxRows("whatsapp", "%:15550001")).isEqualTo(2);
        Await.until("read receipts", Duration.ofSeconds(5), () -> whatsapp.read().containsAll(
                List.of(first.getString("id"), second.getString("id"), third.getString("id"))));
    }

    @Test
    void statusesImagesAndOtherNumbersAreNotMessages() {
        JsonObject image = new JsonObject().put("from", "15550003").put("id", "wamid.IMG1").put("timestamp", "1").put("type", "image")
                .put("image", new JsonObject().put("id", "media-1"));
        JsonObject failed = new JsonObject().put("id", "wamid.OUT1").put("status", "failed").put("recipient_id", "15550003")
                .put("errors", new io.vertx.core.json.JsonArray().add(new JsonObject().put("code", 131047).put("title", "Re-engagement message")));
        delivered(whatsapp.notification(List.of(image), List.of(failed, new JsonObject().put("id", "wamid.OUT2").put("status", "read"))));
        JsonObject otherNumber = whatsapp.notification(List.of(whatsapp.text("15550003", "to another number")), List.of());
        otherNumber.getJsonArray("entry").getJsonObject(0).getJsonArray("changes").getJsonObject(0).getJsonObject("value")
                .getJsonObject("metadata").put("phone_number_id", "999999999");
        delivered(otherNumber);
        assertThat(gateway.inboxRows("whatsapp", "%:15550003")).isZero();
        String metrics = gateway.metrics();
        assertThat(metrics).contains("clawfleet_whatsapp_status_total{").contains("status=\"failed\"");
        assertThat(metrics).contains("reason=\"other_number\"").contains("reason=\"not_text\"");
    }

    @Test
    void forgedOrTamperedNotificationsAreRefusedAndStoreNothing() {
        String body = whatsapp.notification(List.of(whatsapp.text("15550004", "forged")), List.of()).encode();
        String path = "/hooks/whatsapp/" + channelId;
        assertThat(post(path, body, FakeWhatsApp.sign("another-app-secret-0123456789", Buffer.buffer(body))).statusCode()).isEqualTo(401);
        assertThat(post(path, body, null).statusCode()).isEqualTo(401);
        assertThat(post(path, body.replace("forged", "FORGED"), FakeWhatsApp.sign(FakeWhatsApp.APP_SECRET, Buffer.buffer(body))).statusCode())
                .isEqualTo(401);
        assertThat(post("/hooks/whatsapp/999999", body, FakeWhatsApp.sign(FakeWhatsApp.APP_SECRET, Buffer.buffer(body))).statusCode())
                .isEqualTo(401);
        assertThat(post("/hooks/slack/" + channelId, body, null).statusCode()).isEqualTo(401);
        assertThat(gateway.inboxRows("whatsapp", "%:15550004")).isZero();
        assertThat(post(path, body, FakeWhatsApp.sign(FakeWhatsApp.APP_SECRET, Buffer.buffer(body))).statusCode()).isEqualTo(200);
        assertThat(gateway.inboxRows("whatsapp", "%:15550004")).isEqualTo(1);
    }

    @Test
    void repliesAreInWhatsAppsMarksSplitUnderItsSizeAndAThrottledSendIsRetried() {
        whatsapp.failNextSendsTo("15550005", 130429);
        says("15550005", "**bold**, *lean*, ~~gone~~ and [docs](https://example.com)");
        Await.until("the reply after the throttle", Duration.ofSeconds(20), () -> whatsapp.sentTo("15550005").size() == 1);
        assertThat(whatsapp.sentTo("15550005")).containsExactly("re: *bold*, _lean_, ~gone~ and docs (https://example.com)");
        String paragraph = "word ".repeat(700).strip();
        says("15550006", paragraph + "\n\n" + paragraph);
        Await.until("two parts", Duration.ofSeconds(20), () -> whatsapp.sentTo("15550006").size() >= 2);
        assertThat(whatsapp.sentTo("15550006")).hasSize(2).allMatch(part -> part.length() <= 4_096);
    }

    @Test
    void aReplyOutsideTheTwentyFourHourWindowIsADeadLetterAtOnce() throws Exception {
        whatsapp.failNextSendsTo("15550007", 131047);
        says("15550007", "late");
        JsonObject[] letter = {null};
        Await.until("an outbound dead letter", Duration.ofSeconds(20), () -> {
            try {
                letter[0] = new JsonObject(gateway.call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters").stream()
                        .map(JsonObject.class::cast).filter(l -> l.getString("error", "").contains("131047")).findFirst().orElse(null);
                return letter[0] != null;
            } catch (Exception e) {
                return false;
            }
        });
        assertThat(letter[0].getInteger("attempts")).isEqualTo(1);
        assertThat(whatsapp.sentTo("15550007")).isEmpty();
    }

    @Test
    void inPairingModeAStrangerGetsACodeAndIsAnsweredOnceApproved() throws Exception {
        assertThat(gateway.call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("dmPolicy", "pairing")).statusCode())
                .isEqualTo(200);
        try {
            says("15550008", "let me in");
            Await.until("a code", Duration.ofSeconds(10), () -> whatsapp.sentTo("15550008").size() == 1);
            Matcher code = CODE.matcher(whatsapp.sentTo("15550008").get(0));
            assertThat(code.find()).isTrue();
            assertThat(gateway.inboxRows("whatsapp", "%:15550008")).isZero();
            HttpResponse<String> approved = gateway.call("POST", "/api/v1/pairings/" + code.group(1) + "/approve", null);
            assertThat(approved.statusCode()).as(approved.body()).isEqualTo(200);
            Await.until("told", Duration.ofSeconds(10), () -> whatsapp.sentTo("15550008").size() == 2);
            says("15550008", "hello now");
            Await.until("answered", Duration.ofSeconds(20), () -> whatsapp.sentTo("15550008").size() == 3);
            assertThat(whatsapp.sentTo("15550008").get(2)).isEqualTo("re: hello now");
        } finally {
            gateway.call("PATCH", "/api/v1/channels/" + channelId, new JsonObject().put("dmPolicy", "open"));
        }
    }
}
