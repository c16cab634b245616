package io.clawfleet.testkit;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import static io.clawfleet.shared.testing.Await.result;

/**
 * A Telegram Bot API stand-in whose failures a test can script: getMe, getUpdates (with real offset
 * semantics: updates stay until an offset past them confirms them), sendMessage, and webhooks as Telegram does them:
 * after setWebhook, getUpdates answers 409 and pending updates are posted to the URL one at a time, in order, with the
 * secret in {@code X-Telegram-Bot-Api-Secret-Token}, each posted again until it is answered with a 2xx; deleteWebhook
 * keeps what is pending for getUpdates.
 */
public final class FakeTelegram {

    public static final String TOKEN = "123456:fake-token-ABCDEFGHIJ";

    private final Vertx vertx;
    private final HttpServer server;
    private final List<JsonObject> updates = new ArrayList<>();
    private final List<JsonObject> sent = new ArrayList<>();
    private final Deque<Integer> sendFailures = new ArrayDeque<>();
    private final List<Integer> webhookAnswers = new ArrayList<>();
    private final List<String> actions = new ArrayList<>();
    private final HttpClient client;
    private long nextUpdateId = 1;
    private int nextMessageId = 1;
    private String webhookUrl;
    private String webhookSecret;
    private boolean posting;
    private String refuseWebhook;
    private long webhookDelayMs;

    public FakeTelegram(Vertx vertx) {
        this.vertx = vertx;
        server = result(vertx.createHttpServer().requestHandler(this::handle).listen(0, "127.0.0.1"));
        client = vertx.createHttpClient();
        vertx.setPeriodic(50, id -> postNextUpdate());
    }

    /** The chat actions ("typing") the bot showed, as {@code chat:action}, in order. */
    public synchronized List<String> actions() {
        return List.copyOf(actions);
    }

    /** The parse_mode of each message the bot sent to a chat, in order (null: plain text). */
    public synchronized List<String> parseModesTo(long chatId) {
        return sent.stream().filter(m -> m.getString("chat_id").equals(Long.toString(chatId)))
                .map(m -> m.getString("parse_mode")).toList();
    }

    /** The webhook set by the bot, or null. */
    public synchronized String webhookUrl() {
        return webhookUrl;
    }

    /** The secret token given with setWebhook, or null. */
    public synchronized String webhookSecret() {
        return webhookSecret;
    }

    /** The HTTP statuses the webhook answered, in order (-1: no answer). */
    public synchronized List<Integer> webhookAnswers() {
        return List.copyOf(webhookAnswers);
    }

    /** Updates not yet taken (by getUpdates with a later offset, or a 2xx from the webhook). */
    public synchronized int pending() {
        return updates.size();
    }

    /** Posts the oldest pending update to the webhook, if one is set and no post is under way (max_connections 1). */
    private void postNextUpdate() {
        JsonObject update;
        String url;
        String secret;
        synchronized (this) {
            if (webhookUrl == null || posting || updates.isEmpty()) {
                return;
            }
            posting = true;
            update = updates.get(0);
            url = webhookUrl;
            secret = webhookSecret;
        }
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(url)
                .putHeader("content-type", "application/json").setTimeout(10_000);
        if (secret != null) {
            options.putHeader("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        client.request(options).compose(request -> request.send(update.encode())).compose(response ->
                response.body().map(body -> response.statusCode())).onComplete(answer -> {
            synchronized (this) {
                posting = false;
                int status = answer.succeeded() ? answer.result() : -1;
                webhookAnswers.add(status);
                if (status >= 200 && status < 300) {
                    updates.remove(update);
                }
            }
        });
    }

    public String url() {
        return "http://127.0.0.1:" + server.actualPort();
    }

    /** A user writes to the bot in a chat. */
    public synchronized void userSays(long chatId, String text) {
        updates.add(new JsonObject().put("update_id", nextUpdateId++).put("message", new JsonObject()
                .put("message_id", nextMessageId++).put("date", System.currentTimeMillis() / 1000)
                .put("chat", new JsonObject().put("id", chatId).put("type", "private"))
                .put("from", new JsonObject().put("id", chatId).put("is_bot", false).put("first_name", "User"))
                .put("text", text)));
    }

    /** A user writes in a group chat the bot is in. */
    public synchronized void userSaysInGroup(long groupId, long userId, String text) {
        updates.add(new JsonObject().put("update_id", nextUpdateId++).put("message", new JsonObject()
                .put("message_id", nextMessageId++).put("date", System.currentTimeMillis() / 1000)
                .put("chat", new JsonObject().put("id", groupId).put("type", "group").put("title", "Group"))
                .put("from", new JsonObject().put("id", userId).put("is_bot", false).put("first_name", "User"))
                .put("text", text)));
    }

    /** The next sendMessage calls answer with these HTTP statuses, in order (200: that one goes through). */
    /** The next setWebhook is refused as Telegram refuses a URL it will not call: 400 "bad webhook: {reason}". */
    public synchronized void refuseNextWebhook(String reason) {
        refuseWebhook = reason;
    }

    /** setWebhook answers only after this delay (a slow API, for switches that overlap); 0 = at once. */
    public synchronized void delayWebhook(long delayMs) {
        webhookDelayMs = delayMs;
    }

    public synchronized void failNextSends(Integer... statuses) {
        sendFailures.addAll(List.of(statuses));
    }

    /** When each message the bot sent arrived ({@link System#nanoTime()}), in order. */
    public synchronized List<Long> sendTimes() {
        return sent.stream().map(m -> m.getLong("at")).toList();
    }

    /** Texts the bot sent to a chat, in order. */
    public synchronized List<String> sentTo(long chatId) {
        return sent.stream().filter(m -> m.getString("chat_id").equals(Long.toString(chatId)))
                .map(m -> m.getString("text")).toList();
    }

    private void handle(HttpServerRequest request) {
        request.body().onSuccess(body -> {
            String[] path = request.path().split("/");
            String token = path.length > 1 ? path[1].substring(3) : "";
            String method = path.length > 2 ? path[2] : "";
            JsonObject params = body.length() == 0 ? new JsonObject() : body.toJsonObject();
            synchronized (this) {
                if (!TOKEN.equals(token)) {
                    reply(request, 401, error(401, "Unauthorized", -1));
                    return;
                }
                switch (method) {
                    case "getMe" -> reply(request, 200, ok(new JsonObject().put("id", 123456).put("is_bot", true)
                            .put("username", "fake_bot")));
                    case "setWebhook" -> {
                        if (refuseWebhook != null) {
                            reply(request, 400, error(400, "Bad Request: bad webhook: " + refuseWebhook, -1));
                            refuseWebhook = null;
                            return;
                        }
                        webhookUrl = params.getString("url");
                        webhookSecret = params.getString("secret_token");
                        if (params.getBoolean("drop_pending_updates", false)) {
                            updates.clear();
                        }
                        if (webhookDelayMs > 0) {
                            vertx.setTimer(webhookDelayMs, t -> reply(request, 200, ok(true)));
                        } else {
                            reply(request, 200, ok(true));
                        }
                    }
                    case "sendChatAction" -> {
                        actions.add(params.getValue("chat_id") + ":" + params.getString("action"));
                        reply(request, 200, ok(true));
                    }
                    case "deleteWebhook" -> {
                        webhookUrl = null;
                        webhookSecret = null;
                        if (params.getBoolean("drop_pending_updates", false)) {
                            updates.clear();
                        }
                        reply(request, 200, ok(true));
                    }
                    case "getUpdates" -> {
                        if (webhookUrl != null) {
                            reply(request, 409, error(409, "Conflict: can't use getUpdates method while webhook is active; "
                                    + "use deleteWebhook to delete the webhook first", -1));
                            return;
                        }
                        long offset = params.getLong("offset", 0L);
                        updates.removeIf(u -> u.getLong("update_id") < offset);
                        reply(request, 200, ok(new JsonArray(new ArrayList<>(updates))));
                    }
                    case "sendMessage" -> {
                        Integer failure = sendFailures.poll();
                        if (failure != null && failure != 200) {
                            reply(request, failure, error(failure, failure == 403 ? "Forbidden: bot was blocked by the user"
                                    : failure == 400 ? "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\""
                                    : "scripted failure", failure == 429 ? 1 : -1));
                        } else {
                            sent.add(new JsonObject().put("chat_id", String.valueOf(params.getValue("chat_id")))
                                    .put("text", params.getString("text")).put("parse_mode", params.getString("parse_mode"))
                                    .put("at", System.nanoTime()));
                            reply(request, 200, ok(new JsonObject().put("message_id", nextMessageId++)));
                        }
                    }
                    default -> reply(request, 404, error(404, "Not Found", -1));
                }
            }
        });
    }

    private static JsonObject ok(Object result) {
        return new JsonObject().put("ok", true).put("result", result);
    }

    private static JsonObject error(int code, String description, int retryAfter) {
        JsonObject error = new JsonObject().put("ok", false).put("error_code", code).put("description", description);
        if (retryAfter > 0) {
            error.put("parameters", new JsonObject().put("retry_after", retryAfter));
        }
        return error;
    }

    private static void reply(HttpServerRequest request, int status, JsonObject body) {
        request.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
    }
}
