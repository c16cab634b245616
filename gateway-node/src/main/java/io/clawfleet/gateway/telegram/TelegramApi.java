package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.shared.security.EgressGuard;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The few Telegram Bot API methods Clawfleet uses, over the Vert.x HTTP client. Failures are
 * {@link DeliveryException}s that say whether a retry may help (429, 5xx, network) and what the
 * server asked us to wait. The token is in the URL path: it is never put in an error message.
 */
public final class TelegramApi {

    /** Longest text of one Telegram message. */
    public static final int MAX_TEXT = 4096;

    private final HttpClient client;
    private final EgressGuard egress;

    /** @param egress where a bot's API URL may lead: tenants choose it, so not into the operator's network */
    public TelegramApi(Vertx vertx, EgressGuard egress) {
        this.egress = Objects.requireNonNull(egress);
        this.client = vertx.createHttpClient(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setVerifyHost(true)
                        .setForceSni(true)
                        .setConnectTimeout(10_000)
                        .setIdleTimeout(60)
                        .setIdleTimeoutUnit(TimeUnit.SECONDS),
                new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(10_000));
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
        boolean https = "https".equalsIgnoreCase(uri.getScheme());
        int port = uri.getPort() != -1 ? uri.getPort() : https ? 443 : 80;
        return egress.address(uri.getHost())
                .recover(refused -> Future.failedFuture(new DeliveryException("Telegram " + method + " refused before connecting: "
                        + refused.getMessage(), false, -1)))
                .compose(address -> send(uri, https, port, address, method, params, timeoutMs));
    }

    private Future<Object> send(URI uri, boolean https, int port, InetAddress address, String method, JsonObject params, long timeoutMs) {
        RequestOptions options = new RequestOptions()
                .setMethod(HttpMethod.POST)
                // Connect to the address that was checked; the name only goes in Host and TLS (SNI, verification).
                .setServer(SocketAddress.inetSocketAddress(port, address.getHostAddress()))
                .setHost(uri.getHost())
                .setPort(port)
                .setSsl(https)
                .setURI(uri.getRawPath())
                .putHeader("content-type", "application/json")
                .setIdleTimeout(timeoutMs);
        return client.request(options)
                .compose(request -> request.send(Buffer.buffer(params.encode())))
                .compose(response -> response.body().map(body -> {
                    JsonObject json;
                    try {
                        json = body.toJsonObject();
                    } catch (RuntimeException e) {
                        throw new DeliveryException("Telegram " + method + " answered " + response.statusCode()
                                + " with a body that is not JSON", response.statusCode() >= 500, -1);
                    }
                    if (json.getBoolean("ok", false)) {
                        return json.getValue("result");
                    }
                    int code = json.getInteger("error_code", response.statusCode());
                    JsonObject parameters = json.getJsonObject("parameters", new JsonObject());
                    long retryAfter = parameters.containsKey("retry_after") ? parameters.getLong("retry_after") * 1000 : -1;
                    throw new DeliveryException("Telegram " + method + " failed: " + code + " "
                            + json.getString("description", "no description"), code == 429 || code >= 500, retryAfter);
                }))
                .timeout(timeoutMs, TimeUnit.MILLISECONDS)
                .recover(failure -> Future.failedFuture(failure instanceof DeliveryException ? failure
                        : new DeliveryException("Telegram " + method + " failed: " + failure.getClass().getSimpleName()
                                + (failure.getMessage() == null ? "" : " " + failure.getMessage()), true, -1)));
    }
}
