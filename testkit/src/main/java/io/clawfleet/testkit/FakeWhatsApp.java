package io.clawfleet.testkit;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static io.clawfleet.shared.testing.Await.result;

/**
 * A WhatsApp Cloud API stand-in (Meta's Graph API as a business number sees it), whose failures a test can script: the
 * number's details and {@code /messages} (texts, read receipts with typing) with a bearer token, errors as the Graph
 * API gives them ({@code {"error": {"message", "code"}}} with a 4xx/5xx). Webhook notifications are posted to the
 * callback URL with {@code X-Hub-Signature-256} (HMAC-SHA256 of the body under the app secret, written here apart from
 * the gateway's code) and posted again, up to three times, while not answered {@code 200}.
 */
public final class FakeWhatsApp {

    public static final String TOKEN = "EAAGfakeWhatsAppAccessToken0123456789";
    public static final String APP_SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    public static final String PHONE_NUMBER_ID = "106540352242922";
    public static final String DISPLAY_NUMBER = "+1 555-0100";

    private final Vertx vertx;
    private final HttpServer server;
    private final HttpClient client;
    private final List<JsonObject> sent = new ArrayList<>();
    private final List<String> read = new ArrayList<>();
    private final java.util.Map<String, Deque<Integer>> sendFailures = new java.util.HashMap<>();
    private final List<Integer> answers = new ArrayList<>();
    private final AtomicLong ids = new AtomicLong(1);
    private String callbackUrl;

    public FakeWhatsApp(Vertx vertx) {
        this.vertx = vertx;
        server = result(vertx.createHttpServer().requestHandler(this::handle).listen(0, "127.0.0.1"));
        // a connection per post: a try must not wait on a connection another one left (a hang there would look like the
        // gateway's); a try that gets no answer in 8 s is given up (-2) and posted again, as the platforms do
        client = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions().setKeepAlive(false));
    }

    /** The Graph API base, as an account's {@code apiUrl}. */
    public String url() {
        return "http://127.0.0.1:" + server.actualPort() + "/v21.0";
    }

    public synchronized void callback(String url) {
        this.callbackUrl = url;
    }

    /**
     * The next text sends to a user fail with these Graph error codes (130429: throughput; 131047: outside the 24-hour
     * window).
     */
    public synchronized void failNextSendsTo(String waId, Integer... codes) {
        sendFailures.computeIfAbsent(waId, k -> new ArrayDeque<>()).addAll(List.of(codes));
    }

    /** Texts sent to a user, in order. */
    public synchronized List<String> sentTo(String waId) {
        return sent.stream().filter(m -> m.getString("to").equals(waId)).map(m -> m.getString("body")).toList();
    }

    /** The message ids marked read (with "typing…"), in order. */
    public synchronized List<String> read() {
        return List.copyOf(read);
    }

    /** The statuses the callback URL answered, in order (-1: the connection failed; -2: no answer within 8 s). */
    public synchronized List<Integer> answers() {
        return List.copyOf(answers);
    }

    /** A user's text message, as a notification's {@code messages} item; its id is new. */
    public JsonObject text(String from, String body) {
        return new JsonObject().put("from", from).put("id", "wamid.HBgL" + ids.getAndIncrement())
                .put("timestamp", Long.toString(System.currentTimeMillis() / 1000)).put("type", "text")
                .put("text", new JsonObject().put("body", body));
    }

    /** A notification of the business number carrying these messages and statuses. */
    public JsonObject notification(List<JsonObject> messages, List<JsonObject> statuses) {
        JsonObject value = new JsonObject().put("messaging_product", "whatsapp").put("metadata", new JsonObject()
                .put("display_phone_number", "15550100").put("phone_number_id", PHONE_NUMBER_ID));
        if (!messages.isEmpty()) {
            value.put("contacts", new JsonArray(messages.stream().map(m -> new JsonObject().put("wa_id", m.getString("from"))
                    .put("profile", new JsonObject().put("name", "User"))).toList()));
            value.put("messages", new JsonArray(new ArrayList<>(messages)));
        }
        if (!statuses.isEmpty()) {
            value.put("statuses", new JsonArray(new ArrayList<>(statuses)));
        }
        return new JsonObject().put("object", "whatsapp_business_account").put("entry", new JsonArray().add(new JsonObject()
                .put("id", "102290129340398").put("changes", new JsonArray().add(new JsonObject().put("field", "messages")
                        .put("value", value)))));
    }

    /** Posts a notification as Meta does: signed, and again up to three times while not answered 200; the last status. */
    public Future<Integer> deliver(JsonObject notification) {
        return deliver(Buffer.buffer(notification.encode()), 0);
    }

    private Future<Integer> deliver(Buffer body, int retry) {
        String url;
        synchronized (this) {
            url = callbackUrl;
        }
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(url).setTimeout(5_000)
                .putHeader("content-type", "application/json").putHeader("X-Hub-Signature-256", sign(APP_SECRET, body));
        return client.request(options).compose(request -> request.send(body))
                .compose(response -> response.body().map(read -> response.statusCode()))
                .timeout(8, java.util.concurrent.TimeUnit.SECONDS)
                .otherwise(failure -> failure instanceof java.util.concurrent.TimeoutException ? -2 : -1)
                .compose(status -> {
                    synchronized (this) {
                        answers.add(status);
                    }
                    if (status == 200 || retry == 3) {
                        return Future.succeededFuture(status);
                    }
                    Promise<Void> later = Promise.promise();
                    vertx.setTimer(100, t -> later.complete());
                    return later.future().compose(v -> deliver(body, retry + 1));
                });
    }

    /** Meta's signature of a body. */
    public static String sign(String appSecret, Buffer body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(appSecret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return "sha256=" + HexFormat.of().formatHex(mac.doFinal(body.getBytes()));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void handle(HttpServerRequest request) {
        request.body().onSuccess(body -> {
            synchronized (this) {
                if (!("Bearer " + TOKEN).equals(request.getHeader("authorization"))) {
                    reply(request, 401, error(190, "Invalid OAuth access token - Cannot parse access token"));
                    return;
                }
                String path = request.path();
                if (request.method() == HttpMethod.GET && path.equals("/v21.0/" + PHONE_NUMBER_ID)) {
                    reply(request, 200, new JsonObject().put("display_phone_number", DISPLAY_NUMBER).put("verified_name", "Acme")
                            .put("id", PHONE_NUMBER_ID));
                    return;
                }
                if (request.method() != HttpMethod.POST || !path.equals("/v21.0/" + PHONE_NUMBER_ID + "/messages")) {
                    reply(request, 400, error(100, "Unsupported request - method type: " + request.method()));
                    return;
                }
                JsonObject params = body.toJsonObject();
                if ("read".equals(params.getString("status"))) {
                    read.add(params.getString("message_id"));
                    reply(request, 200, new JsonObject().put("success", true));
                    return;
                }
                Deque<Integer> failures = sendFailures.get(params.getString("to"));
                Integer failure = failures == null ? null : failures.poll();
                if (failure != null) {
                    reply(request, 400, error(failure, failure == 131047 ? "Re-engagement message" : "scripted failure"));
                    return;
                }
                String to = params.getString("to");
                sent.add(new JsonObject().put("to", to).put("body", params.getJsonObject("text").getString("body")));
                reply(request, 200, new JsonObject().put("messaging_product", "whatsapp").put("contacts", new JsonArray()
                        .add(new JsonObject().put("input", to).put("wa_id", to))).put("messages", new JsonArray()
                        .add(new JsonObject().put("id", "wamid.OUT" + ids.getAndIncrement()))));
            }
        });
    }

    private static JsonObject error(int code, String message) {
        return new JsonObject().put("error", new JsonObject().put("message", message).put("type", "OAuthException").put("code", code)
                .put("fbtrace_id", "AbCdEf"));
    }

    private static void reply(HttpServerRequest request, int status, JsonObject body) {
        request.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
    }
}
