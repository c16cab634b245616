package io.clawfleet.gateway.discord;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.PlatformHttp;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Discord's REST API (v10), as a bot ({@code Authorization: Bot <token>}): who the token is, where the Gateway is,
 * messages and typing. Every call goes through Discord's rate limits ({@link DiscordRateLimits}): a route whose bucket is
 * empty waits for its reset (up to {@code maxWaitMs}; longer, the send is held back without counting as an attempt), and
 * a {@code 429} is retried after its {@code retry_after}.
 */
public final class DiscordApi {

    /** A message's content is at most 2,000 characters. */
    public static final int MAX_TEXT = 2000;
    public static final String DEFAULT_URL = "https://discord.com/api/v10";

    private final Vertx vertx;
    private final PlatformHttp http;
    private final DiscordRateLimits limits = new DiscordRateLimits();
    private final long maxWaitMs;

    public DiscordApi(Vertx vertx, PlatformHttp http, long maxWaitMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.http = Objects.requireNonNull(http);
        this.maxWaitMs = maxWaitMs;
    }

    /** The bot's own user: {@code id}, {@code username}. */
    public Future<JsonObject> me(String apiUrl, String token) {
        return call(0, apiUrl, token, HttpMethod.GET, "/users/@me", "GET /users/@me", null, null).map(Buffer::toJsonObject);
    }

    /** Where to open the Gateway: {@code url} (wss://...). */
    public Future<String> gatewayUrl(long accountId, String apiUrl, String token) {
        return call(accountId, apiUrl, token, HttpMethod.GET, "/gateway/bot", "GET /gateway/bot", null, null)
                .map(body -> body.toJsonObject().getString("url"));
    }

    /**
     * Posts a message in a channel. Mentions in it ping nobody ({@code allowed_mentions} empty): a reply a chat user
     * steered the model into writing cannot ping {@code @everyone}, a role or a user.
     */
    public Future<Void> createMessage(long accountId, String apiUrl, String token, String channelId, String content) {
        JsonObject message = new JsonObject().put("content", content)
                .put("allowed_mentions", new JsonObject().put("parse", new JsonArray()));
        return call(accountId, apiUrl, token, HttpMethod.POST, "/channels/" + channelId + "/messages",
                "POST /channels/" + channelId + "/messages", channelId, message).mapEmpty();
    }

    /** Shows "typing…" in a channel for about 10 s, or until the bot's next message. */
    public Future<Void> typing(long accountId, String apiUrl, String token, String channelId) {
        return call(accountId, apiUrl, token, HttpMethod.POST, "/channels/" + channelId + "/typing",
                "POST /channels/" + channelId + "/typing", channelId, null).mapEmpty();
    }

    /**
     * @param route what Discord buckets the call by: its method and path with the major parameter (the channel)
     */
    private Future<Buffer> call(long accountId, String apiUrl, String token, HttpMethod method, String path, String route,
                                String major, JsonObject body) {
        String what = "Discord " + method.name() + " " + path.replaceAll("[0-9]{5,}", "{id}");
        URI uri;
        try {
            uri = new URI(apiUrl + path);
        } catch (URISyntaxException e) {
            return Future.failedFuture(new DeliveryException(what + " failed: the API URL is not a valid URL", false, -1));
        }
        long wait = limits.reserve(accountId, route, System.nanoTime());
        if (wait > TimeUnit.MILLISECONDS.toNanos(maxWaitMs)) {
            return Future.failedFuture(DeliveryException.paced("held back: Discord's rate limit for this route is used up",
                    TimeUnit.NANOSECONDS.toMillis(wait)));
        }
        Future<Void> due = Future.succeededFuture();
        if (wait > 0) {
            Promise<Void> timer = Promise.promise();
            vertx.setTimer(Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait)), id -> timer.complete());
            due = timer.future();
        }
        MultiMap headers = MultiMap.caseInsensitiveMultiMap().add("authorization", "Bot " + token)
                .add("user-agent", "DiscordBot (https://github.com/clawfleet, 1.0)");
        if (body != null) {
            headers.add("content-type", "application/json");
        }
        return due.compose(v -> http.request(method, what, uri, headers, body == null ? (method == HttpMethod.POST ? Buffer.buffer() : null)
                        : Buffer.buffer(body.encode()), 30_000))
                .map(reply -> {
                    limits.update(accountId, route, reply.headers(), System.nanoTime());
                    if (reply.status() == 429) {
                        JsonObject limited = json(reply.body());
                        long retryAfterMs = (long) Math.ceil(limited.getDouble("retry_after", 1.0) * 1000);
                        boolean global = limited.getBoolean("global", false) || reply.headers().contains("x-ratelimit-global");
                        limits.limited(accountId, route, global, retryAfterMs, System.nanoTime());
                        throw new DeliveryException(what + " failed: 429 rate limited" + (global ? " (global)" : ""), true, retryAfterMs);
                    }
                    if (reply.status() >= 200 && reply.status() < 300) {
                        return reply.body() == null ? Buffer.buffer() : reply.body();
                    }
                    JsonObject error = json(reply.body());
                    // 5xx may pass; 4xx (unknown channel, missing access, a bad token) will not change by trying again
                    throw new DeliveryException(what + " failed: " + reply.status() + " " + error.getString("message", "")
                            + (error.getValue("code") == null ? "" : " (code " + error.getValue("code") + ")"),
                            reply.status() >= 500, -1);
                });
    }

    private static JsonObject json(Buffer body) {
        try {
            return body == null || body.length() == 0 ? new JsonObject() : body.toJsonObject();
        } catch (RuntimeException e) {
            return new JsonObject();
        }
    }
}
