package io.clawfleet.gateway;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.gateway.webchat.EndUserTokens;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Future;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The web chat channel (issue 15) at a gateway, over real WebSockets: registration, the origin check at the upgrade,
 * end-user tokens (the tenant's own HS256 JWTs; anonymous ones from the gateway when allowed), a message taken once by
 * its client id, its reply, the history on a fresh connection and the catch-up after a reconnect. The worker is
 * {@link io.clawfleet.testkit.EchoWorker} ({@code re: <text>}); streaming is covered with a real worker by the browser
 * test in the deploy module.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WebChatTest {

    private static final String KEY = "webchat-key-0123456789";
    private static final String SITE = "https://shop.example";

    private ChannelGateway gateway;
    private WebSocketClient client;

    @BeforeAll
    void start() throws Exception {
        gateway = new ChannelGateway("gw-webchat", KEY);
        client = gateway.vertx.createWebSocketClient();
    }

    @AfterAll
    void stop() {
        result(client.close());
        gateway.close();
    }

    /** A connection's frames as they come, and how it closed. */
    private static final class Socket {
        final WebSocket ws;
        final BlockingQueue<JsonObject> frames = new LinkedBlockingQueue<>();
        final BlockingQueue<Short> closed = new LinkedBlockingQueue<>();

        Socket(WebSocket ws) {
            this.ws = ws;
            ws.textMessageHandler(text -> frames.add(new JsonObject(text)));
            ws.closeHandler(v -> closed.add(ws.closeStatusCode() == null ? -1 : ws.closeStatusCode()));
        }

        void send(JsonObject frame) {
            result(ws.writeTextMessage(frame.encode()));
        }

        /** The next frame of {@code type}, skipping others (deltas, pongs). */
        JsonObject next(String type) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < end) {
                JsonObject frame = frames.poll(200, TimeUnit.MILLISECONDS);
                if (frame != null && type.equals(frame.getString("type"))) {
                    return frame;
                }
            }
            throw new AssertionError("no " + type + " frame within 20 s");
        }

        short closeCode() throws InterruptedException {
            Short code = closed.poll(20, TimeUnit.SECONDS);
            assertThat(code).as("the server closed the connection").isNotNull();
            return code;
        }

        void close() {
            result(ws.close());
        }
    }

    private Future<WebSocket> connect(String publishableKey, String origin) {
        WebSocketConnectOptions options = new WebSocketConnectOptions().setHost("127.0.0.1").setPort(gateway.node.httpPort())
                .setURI("/webchat/v1/ws?key=" + publishableKey);
        if (origin != null) {
            options.addHeader("origin", origin);
        }
        return client.connect(options);
    }

    private Socket open(String publishableKey, String token, Long after, Long afterUser) throws InterruptedException {
        Socket socket = new Socket(result(connect(publishableKey, SITE)));
        JsonObject hello = new JsonObject().put("type", "hello").put("token", token);
        if (after != null) {
            hello.put("after", after).put("afterUser", afterUser);
        }
        socket.send(hello);
        return socket;
    }

    private JsonObject account(JsonObject body) throws Exception {
        HttpResponse<String> created = gateway.call("POST", "/api/v1/channels/webchat", body);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body());
    }

    private static String token(String secret, String userId) {
        return EndUserTokens.mint(secret, userId, "Ada", Instant.now().getEpochSecond() + 600);
    }

    @Test
    void registrationChecksOriginsAndShowsTheKeyAndWidgetButTheSecretOnce() throws Exception {
        assertThat(gateway.call("POST", "/api/v1/channels/webchat", new JsonObject()).statusCode()).isEqualTo(400);
        for (Object bad : List.of(new JsonArray(), new JsonArray().add("https://shop.example/path"), new JsonArray().add("shop.example"),
                new JsonArray().add(42), "https://shop.example")) {
            HttpResponse<String> refused = gateway.call("POST", "/api/v1/channels/webchat", new JsonObject().put("allowedOrigins", bad));
            assertThat(refused.statusCode()).as(String.valueOf(bad)).isEqualTo(400);
            assertThat(refused.body()).contains("allowedOrigins");
        }
        JsonObject account = account(new JsonObject().put("allowedOrigins", new JsonArray().add("https://Shop.example:8443"))
                .put("name", "site"));
        String key = account.getString("publishableKey");
        assertThat(key).matches("pk_" + account.getLong("id") + "_[A-Za-z0-9_-]{22}");
        assertThat(account.getString("secret")).startsWith("wcs_");
        String secret = account.getString("secret");
        assertThat(account.getString("tokenHint")).isEqualTo("wcs_…" + secret.substring(secret.length() - 4));
        assertThat(account.getJsonArray("allowedOrigins")).containsExactly("https://shop.example:8443");
        assertThat(account.getBoolean("anonymousUsers")).isFalse();
        assertThat(account.getString("widgetScript")).isEqualTo("<script src=\"" + gateway.publicUrl + "/webchat/v1/widget.js\" "
                + "data-key=\"" + key + "\" async></script>");
        assertThat(account.getString("websocketUrl")).isEqualTo(gateway.publicUrl.replace("http", "ws") + "/webchat/v1/ws?key=" + key);

        String listed = gateway.call("GET", "/api/v1/channels", null).body();
        assertThat(listed).contains(key).doesNotContain(account.getString("secret"));
        HttpResponse<String> policies = gateway.call("PATCH", "/api/v1/channels/" + account.getLong("id"),
                new JsonObject().put("dmPolicy", "pairing"));
        assertThat(policies.statusCode()).isEqualTo(400);
        assertThat(policies.body()).contains("do not apply");

        HttpResponse<String> widget = gateway.send(HttpRequest.newBuilder(URI.create(gateway.base + "/webchat/v1/widget.js")));
        assertThat(widget.statusCode()).isEqualTo(200);
        assertThat(widget.headers().firstValue("content-type").orElse("")).startsWith("text/javascript");
        assertThat(widget.body()).contains("/webchat/v1/ws");
    }

    @Test
    void onlyAllowedOriginsUpgradeAndOnlyTheAccountsOwnTokensSpeak() throws Exception {
        JsonObject account = account(new JsonObject().put("allowedOrigins", new JsonArray().add(SITE)));
        JsonObject other = account(new JsonObject().put("allowedOrigins", new JsonArray().add(SITE)));
        String key = account.getString("publishableKey");
        String secret = account.getString("secret");

        assertThat(rejected(key, "https://evil.example")).isEqualTo(403);
        String forged = key.substring(0, key.lastIndexOf('_') + 1) + "AAAAAAAAAAAAAAAAAAAAAA";
        assertThat(rejected(forged, SITE)).isEqualTo(403);
        assertThat(rejected("pk_nonsense", SITE)).isEqualTo(400);

        long now = Instant.now().getEpochSecond();
        String header = b64("{\"alg\":\"none\",\"typ\":\"JWT\"}");
        List<String> refused = List.of(
                token(other.getString("secret"), "ada"),                       // another account's secret
                EndUserTokens.mint(secret, "ada", null, now - 120),            // expired
                header + "." + b64("{\"sub\":\"ada\",\"exp\":" + (now + 600) + "}") + ".",   // alg none
                EndUserTokens.mint(secret, "ada/../x", null, now + 600),       // not a user id
                "not-a-token");
        for (String token : refused) {
            Socket socket = open(key, token, null, null);
            assertThat(socket.closeCode()).as(token).isEqualTo((short) 4401);
        }
        Socket first = new Socket(result(connect(key, SITE)));
        first.send(new JsonObject().put("type", "message").put("id", "m1").put("text", "hi"));
        assertThat(first.next("error").getString("code")).isEqualTo("hello_first");
        first.close();
        assertThat(gateway.inboxRows(Channels.WEBCHAT, account.getLong("id") + ":%")).isZero();
    }

    @Test
    void aMessageIsTakenOnceByItsIdAnsweredAndKeptForTheNextConnection() throws Exception {
        JsonObject account = account(new JsonObject().put("allowedOrigins", new JsonArray().add(SITE)));
        String key = account.getString("publishableKey");
        String token = token(account.getString("secret"), "user-42");

        Socket socket = open(key, token, null, null);
        assertThat(socket.next("ready").getString("userId")).isEqualTo("user-42");
        assertThat(socket.next("history").getJsonArray("messages")).isEmpty();
        socket.send(new JsonObject().put("type", "message").put("id", "m-1").put("text", "hello there"));
        JsonObject ack = socket.next("ack");
        assertThat(ack.getString("id")).isEqualTo("m-1");
        assertThat(ack.getBoolean("duplicate")).isFalse();
        JsonObject reply = socket.next("message");
        assertThat(reply.getString("role")).isEqualTo("assistant");
        assertThat(reply.getString("text")).isEqualTo("re: hello there");
        assertThat(reply.getString("replyTo")).isEqualTo("m-1");
        long replySeq = reply.getLong("seq");

        // Sent again (its ack lost in a reconnect): the same message, no second turn, no second reply.
        socket.send(new JsonObject().put("type", "message").put("id", "m-1").put("text", "hello there"));
        assertThat(socket.next("ack").getBoolean("duplicate")).isTrue();
        socket.send(new JsonObject().put("type", "message").put("id", "bad id!").put("text", "x"));
        assertThat(socket.next("error").getString("code")).isEqualTo("bad_message");
        socket.send(new JsonObject().put("type", "message").put("id", "m-big").put("text", "x".repeat(16_001)));
        assertThat(socket.next("error").getString("code")).isEqualTo("too_long");
        socket.send(new JsonObject().put("type", "ping"));
        socket.next("pong");
        ChannelGateway.pause(500);
        assertThat(socket.frames.stream().filter(f -> "message".equals(f.getString("type")))).isEmpty();
        assertThat(gateway.inboxRows(Channels.WEBCHAT, account.getLong("id") + ":user-42")).isEqualTo(1);

        // A message sent while the user is away: the reconnect with the cursors brings only what is new.
        socket.send(new JsonObject().put("type", "message").put("id", "m-2").put("text", "second"));
        long userSeq = socket.next("ack").getLong("seq");
        socket.next("message");
        socket.close();
        Socket resumed = open(key, token, replySeq, userSeq);
        resumed.next("ready");
        JsonArray missed = resumed.next("history").getJsonArray("messages");
        assertThat(missed).hasSize(1);
        assertThat(missed.getJsonObject(0).getString("text")).isEqualTo("re: second");
        resumed.close();

        // A fresh page: the whole history, in order, each side with its ids.
        Socket fresh = open(key, token, null, null);
        fresh.next("ready");
        JsonArray history = fresh.next("history").getJsonArray("messages");
        assertThat(history.stream().map(e -> ((JsonObject) e).getString("role") + ":" + ((JsonObject) e).getString("text")))
                .containsExactly("user:hello there", "assistant:re: hello there", "user:second", "assistant:re: second");
        assertThat(history.getJsonObject(0).getString("id")).isEqualTo("m-1");
        assertThat(history.getJsonObject(1).getString("replyTo")).isEqualTo("m-1");
        fresh.close();

        // Another user of the same site sees none of it.
        Socket stranger = open(key, token(account.getString("secret"), "user-43"), null, null);
        stranger.next("ready");
        assertThat(stranger.next("history").getJsonArray("messages")).isEmpty();
        stranger.close();
    }

    @Test
    void onANodeAloneTheReplyIsSentFromItsNoticeAsTheHistoryHasItButANoticeOfAnotherChatOnlyWakes() throws Exception {
        JsonObject account = account(new JsonObject().put("allowedOrigins", new JsonArray().add(SITE)));
        String key = account.getString("publishableKey");
        String chatKey = account.getLong("id") + ":user-7";
        double pushedBefore = pushed();
        Socket socket = open(key, token(account.getString("secret"), "user-7"), null, null);
        socket.next("ready");
        socket.next("history");
        String text = "slow:1500 a tab\there, accents é à, an emoji \uD83E\uDD80";
        socket.send(new JsonObject().put("type", "message").put("id", "m-1").put("text", text));
        socket.next("ack");
        long inboxId = result(gateway.database.pool().preparedQuery("SELECT i.id FROM inbox i JOIN chats c ON c.id = i.chat_id"
                + " WHERE c.channel = $1 AND c.chat_key = $2").execute(Tuple.of(Channels.WEBCHAT, chatKey))).iterator().next()
                .getLong(0);

        // while the turn runs, notices naming that message as the chat's next reply, but of another tenant, or of
        // another chat of this bot: each only makes the connection read, which finds nothing
        BotRef owner = new BotRef(account.getString("tenantId", GatewayRole.DEFAULT_TENANT), account.getString("botId", BotRef.MAIN));
        gateway.node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("forged-1", BotRef.main("someone-else"),
                Channels.WEBCHAT, chatKey, 1, 1, inboxId, "another tenant's", Instant.now()));
        gateway.node.vertx().eventBus().publish(Addresses.REPLY_READY, new OutboundReply("forged-2", owner,
                Channels.WEBCHAT, account.getLong("id") + ":user-8", 1, 1, inboxId, "another chat's", Instant.now()));

        // then the echo worker's reply comes from its notice (counted as pushed), exactly as the outbox has it
        JsonObject reply = socket.next("message");
        assertThat(reply.getString("text")).isEqualTo("re: " + text);
        assertThat(reply.getString("replyTo")).isEqualTo("m-1");
        assertThat(pushed()).isEqualTo(pushedBefore + 1);
        socket.close();
        Socket fresh = open(key, token(account.getString("secret"), "user-7"), null, null);
        fresh.next("ready");
        JsonArray history = fresh.next("history").getJsonArray("messages");
        assertThat(history).hasSize(2);
        assertThat(history.getJsonObject(1)).isEqualTo(reply);
        fresh.close();
    }

    /** Replies this gateway served from their notices, from its /metrics. */
    private double pushed() {
        return Prometheus.sum(gateway.metrics(), "clawfleet_gateway_replies_pushed_total{");
    }

    @Test
    void anonymousVisitorsGetATokenOnlyWhenTheAccountAllowsThemAndOnlyFromItsOrigins() throws Exception {
        JsonObject account = account(new JsonObject().put("allowedOrigins", new JsonArray().add(SITE)));
        String key = account.getString("publishableKey");
        assertThat(session(key, SITE).statusCode()).isEqualTo(403);
        HttpResponse<String> patched = gateway.call("PATCH", "/api/v1/channels/" + account.getLong("id"),
                new JsonObject().put("anonymousUsers", true));
        assertThat(patched.statusCode()).as(patched.body()).isEqualTo(200);
        assertThat(new JsonObject(patched.body()).getBoolean("anonymousUsers")).isTrue();

        assertThat(session(key, "https://evil.example").statusCode()).isEqualTo(403);
        HttpResponse<String> preflight = gateway.send(HttpRequest.newBuilder(URI.create(gateway.base + "/webchat/v1/sessions"))
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).header("origin", SITE)
                .header("access-control-request-method", "POST"));
        assertThat(preflight.statusCode()).isEqualTo(204);
        assertThat(preflight.headers().firstValue("access-control-allow-origin")).contains(SITE);

        HttpResponse<String> created = session(key, SITE);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(created.headers().firstValue("access-control-allow-origin")).contains(SITE);
        JsonObject session = new JsonObject(created.body());
        assertThat(session.getString("userId")).startsWith("anon-");
        Socket socket = open(key, session.getString("token"), null, null);
        assertThat(socket.next("ready").getString("userId")).isEqualTo(session.getString("userId"));
        socket.next("history");
        socket.send(new JsonObject().put("type", "message").put("id", "a-1").put("text", "anyone there?"));
        assertThat(socket.next("message").getString("text")).isEqualTo("re: anyone there?");
        socket.close();

        // Narrowed to another origin, the old one is refused at once.
        gateway.call("PATCH", "/api/v1/channels/" + account.getLong("id"),
                new JsonObject().put("allowedOrigins", new JsonArray().add("https://other.example")));
        assertThat(rejected(key, SITE)).isEqualTo(403);
    }

    /** The status a refused upgrade got. */
    private int rejected(String publishableKey, String origin) {
        Throwable failure = io.clawfleet.shared.testing.Await.failure(connect(publishableKey, origin));
        assertThat(failure).isInstanceOf(UpgradeRejectedException.class);
        return ((UpgradeRejectedException) failure).getStatus();
    }

    private HttpResponse<String> session(String key, String origin) {
        return gateway.send(HttpRequest.newBuilder(URI.create(gateway.base + "/webchat/v1/sessions")).header("origin", origin)
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("key", key).encode())));
    }

    private static String b64(String json) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(json.getBytes(StandardCharsets.UTF_8));
    }
}
