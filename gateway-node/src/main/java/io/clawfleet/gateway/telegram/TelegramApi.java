package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.PlatformHttp;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;

/**
 * The few Telegram Bot API methods Clawfleet uses, over the Vert.x HTTP client. Failures are
 * {@link DeliveryException}s that say whether a retry may help (429, 5xx, network) and what the
 * server asked us to wait. The token is in the URL path: it is never put in an error message.
 */
public final class TelegramApi {

    /** Longest text of one Telegram message. */
    public static final int MAX_TEXT = 4096;

    private final PlatformHttp http;

    /** @param http reaches the Bot API only where the egress rules allow: tenants choose its URL */
    public TelegramApi(PlatformHttp http) {
        this.http = Objects.requireNonNull(http);
    }

    public Future<JsonObject> getMe(String apiUrl, String token) {
        return call(apiUrl, token, "getMe", new JsonObject(), 15_000).map(result -> (JsonObject) result);
    }

    /** Long-polls for updates from {@code offset}; the server may answer at once (emulators do). */
    public Future<JsonArray> getUpdates(String apiUrl, String token, long offset, int waitSeconds) {
        JsonObject params = new JsonObject().put("offset", offset).put("timeout", waitSeconds)
                .put("allowed_updates", new JsonArray().add("message"));
        return call(apiUrl, token, "getUpdates", params, (waitSeconds + 15) * 1000L).map(result -> (JsonArray) result);
    }

    /**
     * Points the bot's updates at a webhook. Telegram then refuses getUpdates, and posts each update to {@code url}
     * with {@code secret} in the {@code X-Telegram-Bot-Api-Secret-Token} header, retrying while it is not answered
     * with a 2xx. Updates not confirmed by getUpdates yet are not dropped: the webhook gets them.
     *
     * @param maxConnections how many updates Telegram posts at once (1 keeps every chat's order as Telegram has it)
     */
    public Future<Void> setWebhook(String apiUrl, String token, String url, String secret, int maxConnections) {
        JsonObject params = new JsonObject().put("url", url).put("secret_token", secret).put("max_connections", maxConnections)
                .put("allowed_updates", new JsonArray().add("message")).put("drop_pending_updates", false);
        return call(apiUrl, token, "setWebhook", params, 30_000).mapEmpty();
    }

    /** Stops webhook delivery, keeping what is pending: the next getUpdates returns it. */
    public Future<Void> deleteWebhook(String apiUrl, String token) {
        return call(apiUrl, token, "deleteWebhook", new JsonObject().put("drop_pending_updates", false), 30_000).mapEmpty();
    }

    public Future<Void> sendMessage(String apiUrl, String token, String chatId, String text) {
        return sendMessage(apiUrl, token, chatId, text, null);
    }

    /** Shows "typing…" in the chat, for up to 5 seconds or until the bot's next message. */
    public Future<Void> sendChatAction(String apiUrl, String token, String chatId, String action) {
        return call(apiUrl, token, "sendChatAction", new JsonObject().put("chat_id", chatId).put("action", action), 10_000).mapEmpty();
    }

    /** @param parseMode {@code HTML} or {@code MarkdownV2}; null = plain text */
    public Future<Void> sendMessage(String apiUrl, String token, String chatId, String text, String parseMode) {
        JsonObject params = new JsonObject().put("chat_id", chatId).put("text", text);
        if (parseMode != null) {
            params.put("parse_mode", parseMode);
        }
        return call(apiUrl, token, "sendMessage", params, 30_000).mapEmpty();
    }

    private Future<Object> call(String apiUrl, String token, String method, JsonObject params, long timeoutMs) {
        URI uri;
        try {
            uri = new URI(apiUrl + "/bot" + token + "/" + method);
        } catch (URISyntaxException e) {
            return Future.failedFuture(new DeliveryException("Telegram " + method + " failed: the API URL is not a valid URL", false, -1));
        }
        return http.post("Telegram " + method, uri, MultiMap.caseInsensitiveMultiMap().add("content-type", "application/json"),
                        Buffer.buffer(params.encode()), timeoutMs)
                .map(reply -> {
                    JsonObject json;
                    try {
                        json = reply.body().toJsonObject();
                    } catch (RuntimeException e) {
                        throw new DeliveryException("Telegram " + method + " answered " + reply.status()
                                + " with a body that is not JSON", reply.status() >= 500, -1);
                    }
                    if (json.getBoolean("ok", false)) {
                        return json.getValue("result");
                    }
                    int code = json.getInteger("error_code", reply.status());
                    JsonObject parameters = json.getJsonObject("parameters", new JsonObject());
                    long retryAfter = parameters.containsKey("retry_after") ? parameters.getLong("retry_after") * 1000 : -1;
                    throw new DeliveryException("Telegram " + method + " failed: " + code + " "
                            + json.getString("description", "no description"), code == 429 || code >= 500, retryAfter);
                });
    }
}
