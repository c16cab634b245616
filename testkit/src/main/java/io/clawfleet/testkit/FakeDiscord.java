package io.clawfleet.testkit;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import static io.clawfleet.shared.testing.Await.result;

/**
 * A Discord stand-in as a bot sees it, in the documented shapes (API v10), whose behaviour a test can script.
 * <ul>
 *   <li>REST with {@code Authorization: Bot <token>}: {@code GET /users/@me}, {@code GET /gateway/bot},
 *       {@code POST /channels/{id}/messages} (recorded; rate limited per channel as Discord states it: a bucket of
 *       {@link #bucketSize} per second with {@code X-RateLimit-Bucket}, {@code -Remaining}, {@code -Reset-After}, and
 *       a {@code 429} with {@code retry_after} to a send past it), {@code POST /channels/{id}/typing}.</li>
 *   <li>The Gateway, a WebSocket: Hello (op 10), Identify (op 2) answered with READY (a new session, and its
 *       {@code resume_gateway_url}), Resume (op 6) answered with the events of the session after the given sequence and
 *       RESUMED, Heartbeat (op 1) with its ACK (op 11). Dispatched events are numbered per session and kept, so a
 *       resume from any sequence gets what followed; events dispatched while no connection is open wait for the
 *       resume.</li>
 * </ul>
 */
public final class FakeDiscord {

    public static final String TOKEN = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs-fake";
    public static final String BOT_USER = "1100000000000000001";
    public static final String BOT_NAME = "clawbot";

    private final HttpServer server;
    private final java.security.KeyPair applicationKey;
    private final List<JsonObject> sent = new ArrayList<>();
    private final List<JsonObject> events = new ArrayList<>();
    private final AtomicLong ids = new AtomicLong(1_200_000_000_000_000_000L);
    private final List<String> opens = new ArrayList<>();
    private String sessionId;
    private ServerWebSocket socket;
    private int bucketSize = 5;
    private long bucketResetAt;
    private int bucketUsed;
    private int limited;

    public FakeDiscord(Vertx vertx) {
        server = result(vertx.createHttpServer().requestHandler(this::handle).webSocketHandler(this::gateway).listen(0, "127.0.0.1"));
        try {
            applicationKey = java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The application's public key as the developer portal shows it: the 32 raw bytes, in hex. */
    public String publicKey() {
        byte[] der = applicationKey.getPublic().getEncoded();
        return java.util.HexFormat.of().formatHex(der, der.length - 32, der.length);
    }

    /**
     * Signs an interaction as Discord does: Ed25519 over the timestamp followed by the body, with the application's key
     * (or {@code signer}'s), hex in {@code X-Signature-Ed25519}.
     */
    public static String sign(java.security.PrivateKey signer, String timestamp, String body) {
        try {
            java.security.Signature signature = java.security.Signature.getInstance("Ed25519");
            signature.initSign(signer);
            signature.update((timestamp + body).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(signature.sign());
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The application's signing key. */
    public java.security.PrivateKey signingKey() {
        return applicationKey.getPrivate();
    }

    /** A slash command {@code /ask question:<text>} used by {@code userId} in a channel, as Discord posts it. */
    public static JsonObject askCommand(String interactionId, String channelId, String guildId, String userId, String text) {
        JsonObject user = new JsonObject().put("id", userId).put("username", "user" + userId);
        JsonObject interaction = new JsonObject().put("id", interactionId).put("application_id", "1100000000000000009")
                .put("type", 2).put("token", "interaction-token-" + interactionId).put("version", 1).put("channel_id", channelId)
                .put("data", new JsonObject().put("id", "1100000000000000010").put("name", "ask").put("type", 1)
                        .put("options", new JsonArray().add(new JsonObject().put("name", "question").put("type", 3).put("value", text))));
        if (guildId != null) {
            interaction.put("guild_id", guildId).put("member", new JsonObject().put("user", user));
        } else {
            interaction.put("user", user);
        }
        return interaction;
    }

    /** The REST base URL, as an account's {@code apiUrl}. */
    public String url() {
        return "http://127.0.0.1:" + server.actualPort() + "/api/v10";
    }

    private String gatewayUrl() {
        return "ws://127.0.0.1:" + server.actualPort() + "/gateway";
    }

    /** Sends a channel takes per second before a {@code 429}. */
    public synchronized void bucketSize(int size) {
        this.bucketSize = size;
    }

    /** What was posted to a channel, in order. */
    public synchronized List<String> sentTo(String channelId) {
        return sent.stream().filter(m -> channelId.equals(m.getString("channel"))).map(m -> m.getString("content")).toList();
    }

    /** Every message posted, with its {@code channel}, {@code content} and {@code allowed_mentions}. */
    public synchronized List<JsonObject> sent() {
        return List.copyOf(sent);
    }

    /** How many sends were answered {@code 429}. */
    public synchronized int limited() {
        return limited;
    }

    /** How connections began: {@code identify} or {@code resume:<session>:<seq>}, in order. */
    public synchronized List<String> opens() {
        return List.copyOf(opens);
    }

    /** Whether a Gateway connection is open. */
    public synchronized boolean connected() {
        return socket != null;
    }

    /**
     * A user's message, dispatched as {@code MESSAGE_CREATE} (now, or on the next resume if no connection is open).
     *
     * @param guildId null for a direct message
     * @return the message's id
     */
    public synchronized String message(String channelId, String guildId, String authorId, String content, boolean mentionsBot) {
        String id = Long.toString(ids.incrementAndGet());
        JsonObject message = new JsonObject().put("id", id).put("channel_id", channelId).put("content", content)
                .put("author", new JsonObject().put("id", authorId).put("username", "user" + authorId).put("bot", false))
                .put("mentions", mentionsBot ? new JsonArray().add(new JsonObject().put("id", BOT_USER).put("bot", true))
                        : new JsonArray())
                .put("timestamp", "2026-11-29T12:00:00.000000+00:00").put("type", 0);
        if (guildId != null) {
            message.put("guild_id", guildId);
        }
        dispatch("MESSAGE_CREATE", message);
        return id;
    }

    /** Closes the open connection as a network drop would look (code 1006 on the bot's side: no close frame). */
    public synchronized void drop() {
        if (socket != null) {
            socket.close((short) 4900, "dropped by the test");
            socket = null;
        }
    }

    private synchronized void dispatch(String type, JsonObject data) {
        JsonObject event = new JsonObject().put("op", 0).put("t", type).put("s", events.size() + 1).put("d", data);
        events.add(event);
        if (socket != null) {
            socket.writeTextMessage(event.encode());
        }
    }

    private void gateway(ServerWebSocket ws) {
        if (!ws.path().startsWith("/gateway")) {
            ws.close((short) 4000, "unknown path");
            return;
        }
        ws.writeTextMessage(new JsonObject().put("op", 10).put("d", new JsonObject().put("heartbeat_interval", 1_000)).encode());
        ws.textMessageHandler(text -> frame(ws, new JsonObject(text)));
        ws.closeHandler(v -> {
            synchronized (this) {
                if (socket == ws) {
                    socket = null;
                }
            }
        });
    }

    private synchronized void frame(ServerWebSocket ws, JsonObject frame) {
        int op = frame.getInteger("op", -1);
        JsonObject d = frame.getValue("d") instanceof JsonObject o ? o : new JsonObject();
        switch (op) {
            case 1 -> ws.writeTextMessage(new JsonObject().put("op", 11).encode());
            case 2 -> {
                if (!TOKEN.equals(d.getString("token"))) {
                    ws.close((short) 4004, "Authentication failed.");
                    return;
                }
                opens.add("identify");
                sessionId = UUID.randomUUID().toString().replace("-", "");
                events.clear();
                socket = ws;
                dispatch("READY", new JsonObject().put("v", 10).put("session_id", sessionId)
                        .put("resume_gateway_url", gatewayUrl() + "-resume")
                        .put("user", new JsonObject().put("id", BOT_USER).put("username", BOT_NAME).put("bot", true)));
            }
            case 6 -> {
                long seq = d.getLong("seq", 0L);
                opens.add("resume:" + d.getString("session_id") + ":" + seq);
                if (!TOKEN.equals(d.getString("token")) || !d.getString("session_id", "").equals(sessionId)) {
                    ws.writeTextMessage(new JsonObject().put("op", 9).put("d", false).encode());
                    return;
                }
                socket = ws;
                for (JsonObject event : events) {
                    if (event.getLong("s") > seq) {
                        ws.writeTextMessage(event.encode());
                    }
                }
                dispatch("RESUMED", new JsonObject());
            }
            default -> { }
        }
    }

    private void handle(HttpServerRequest request) {
        request.body().onSuccess(body -> {
            if (!("Bot " + TOKEN).equals(request.getHeader("authorization"))) {
                json(request, 401, new JsonObject().put("message", "401: Unauthorized").put("code", 0));
                return;
            }
            String path = request.path().replaceFirst("^/api/v10", "");
            if (path.equals("/users/@me")) {
                json(request, 200, new JsonObject().put("id", BOT_USER).put("username", BOT_NAME).put("bot", true));
            } else if (path.equals("/gateway/bot")) {
                json(request, 200, new JsonObject().put("url", gatewayUrl()).put("shards", 1));
            } else if (path.matches("/channels/[0-9]+/typing")) {
                request.response().setStatusCode(204).end();
            } else if (path.matches("/channels/[0-9]+/messages")) {
                post(request, path.split("/")[2], body.toJsonObject());
            } else {
                json(request, 404, new JsonObject().put("message", "404: Not Found").put("code", 0));
            }
        });
    }

    private synchronized void post(HttpServerRequest request, String channel, JsonObject message) {
        long now = System.currentTimeMillis();
        if (now >= bucketResetAt) {
            bucketResetAt = now + 1_000;
            bucketUsed = 0;
        }
        double resetAfter = Math.max(0, bucketResetAt - now) / 1000.0;
        request.response().putHeader("x-ratelimit-bucket", "fakebucket0001").putHeader("x-ratelimit-limit", Integer.toString(bucketSize))
                .putHeader("x-ratelimit-reset-after", Double.toString(resetAfter));
        if (bucketUsed >= bucketSize) {
            limited++;
            request.response().putHeader("x-ratelimit-remaining", "0").putHeader("x-ratelimit-scope", "user");
            json(request, 429, new JsonObject().put("message", "You are being rate limited.").put("retry_after", resetAfter)
                    .put("global", false));
            return;
        }
        bucketUsed++;
        request.response().putHeader("x-ratelimit-remaining", Integer.toString(bucketSize - bucketUsed));
        String content = message.getString("content", "");
        if (content.length() > 2000) {
            json(request, 400, new JsonObject().put("message", "Invalid Form Body").put("code", 50035));
            return;
        }
        sent.add(new JsonObject().put("channel", channel).put("content", content)
                .put("allowed_mentions", message.getValue("allowed_mentions")));
        json(request, 200, new JsonObject().put("id", Long.toString(ids.incrementAndGet())).put("channel_id", channel)
                .put("content", content));
    }

    private static void json(HttpServerRequest request, int status, JsonObject body) {
        request.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
    }

    public void close() {
        result(server.close());
    }
}
