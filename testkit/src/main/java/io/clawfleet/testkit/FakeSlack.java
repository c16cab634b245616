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
 * A Slack stand-in as an app sees it, whose failures a test can script. The Web API: {@code auth.test} and
 * {@code chat.postMessage} with a bearer token, errors as Slack gives them ({@code 200} and {@code "ok": false}, or
 * {@code 429} with {@code Retry-After}). The Events API: events posted to the app's Request URL signed as Slack signs
 * them (v0: HMAC-SHA256 of {@code v0:timestamp:body} under the signing secret, written here apart from the gateway's
 * own code), and posted again, with {@code X-Slack-Retry-Num} and {@code X-Slack-Retry-Reason}, up to three times
 * while not answered with a 2xx.
 */
public final class FakeSlack {

    public static final String TOKEN = "xoxb-1111-2222-fakeSlackToken";
    public static final String SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
    public static final String BOT_USER = "UBOT0001";
    public static final String BOT_NAME = "clawbot";

    private final HttpServer server;
    private final HttpClient client;
    private final Vertx vertx;
    private final List<JsonObject> sent = new ArrayList<>();
    private final Deque<String> postFailures = new ArrayDeque<>();
    private final AtomicLong clock = new AtomicLong(1_700_000_000_000_000L);
    private final AtomicLong eventIds = new AtomicLong(1);
    private final List<Integer> answers = new ArrayList<>();
    private String requestUrl;
    private String signingSecret = SIGNING_SECRET;
    private long retryDelayMs = 100;

    public FakeSlack(Vertx vertx) {
        this.vertx = vertx;
        server = result(vertx.createHttpServer().requestHandler(this::handle).listen(0, "127.0.0.1"));
        // a connection per post: a try must not wait on a connection another one left (a hang there would look like the
        // gateway's); a try that gets no answer in 8 s is given up (-2) and posted again, as the platforms do
        client = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions().setKeepAlive(false));
    }

    /** The Web API's base URL, as an account's {@code apiUrl}. */
    public String url() {
        return "http://127.0.0.1:" + server.actualPort() + "/api";
    }

    /** Where events go (Event Subscriptions' Request URL), and the secret they are signed with. */
    public synchronized void subscribe(String url, String secret) {
        this.requestUrl = url;
        this.signingSecret = secret;
    }

    /** The next chat.postMessage calls fail: {@code "429"} (rate limited, Retry-After 1) or a Slack error such as {@code "channel_not_found"}. */
    public synchronized void failNextPosts(String... failures) {
        postFailures.addAll(List.of(failures));
    }

    /** The statuses the Request URL answered, in order (-1: the connection failed; -2: no answer within 8 s). */
    public synchronized List<Integer> answers() {
        return List.copyOf(answers);
    }

    /** The messages the app posted: {@code channel}, {@code text}, {@code thread_ts} (null at top level), {@code at} (ms). */
    public synchronized List<JsonObject> sent() {
        return sent.stream().map(JsonObject::copy).toList();
    }

    /** Texts the app posted in a conversation (any thread), in order. */
    public synchronized List<String> sentTo(String conversation) {
        return sent.stream().filter(m -> m.getString("channel").equals(conversation)).map(m -> m.getString("text")).toList();
    }

    /** A new message timestamp, as Slack makes them (seconds, a dot, six digits), always later than the last. */
    public String nextTs() {
        long micros = clock.addAndGet(1_000);
        return micros / 1_000_000 + "." + String.format("%06d", micros % 1_000_000);
    }

    /**
     * A {@code message} event, as the app gets it when subscribed to {@code message.im} / {@code message.channels}.
     *
     * @param threadTs the thread it is written in; null at top level
     */
    public JsonObject messageEvent(String conversation, String user, String text, String ts, String threadTs) {
        JsonObject event = new JsonObject().put("type", "message").put("channel", conversation).put("user", user)
                .put("text", text).put("ts", ts).put("event_ts", ts)
                .put("channel_type", conversation.startsWith("D") ? "im" : conversation.startsWith("G") ? "group" : "channel");
        if (threadTs != null) {
            event.put("thread_ts", threadTs);
        }
        return event;
    }

    /** The {@code app_mention} event Slack sends besides the message event when a message names the app. */
    public JsonObject mentionEvent(String conversation, String user, String text, String ts, String threadTs) {
        JsonObject event = messageEvent(conversation, user, text, ts, threadTs).put("type", "app_mention");
        event.remove("channel_type");
        return event;
    }

    /** An {@code event_callback} envelope around an event, with a new {@code event_id}. */
    public JsonObject envelope(JsonObject event) {
        return new JsonObject().put("token", "deprecated-verification-token").put("team_id", "T0001").put("api_app_id", "A0001")
                .put("type", "event_callback").put("event_id", "Ev" + eventIds.getAndIncrement())
                .put("event_time", System.currentTimeMillis() / 1000).put("event", event);
    }

    /**
     * Delivers an envelope as Slack does: signed, now, and again up to three times while it is not answered with a 2xx.
     *
     * @return the status of the last try (-1: no answer)
     */
    public Future<Integer> deliver(JsonObject envelope) {
        return deliver(Buffer.buffer(envelope.encode()), 0);
    }

    private Future<Integer> deliver(Buffer body, int retry) {
        String url;
        String secret;
        long delay;
        synchronized (this) {
            url = requestUrl;
            secret = signingSecret;
            delay = retryDelayMs;
        }
        String timestamp = Long.toString(System.currentTimeMillis() / 1000);
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(url).setTimeout(5_000)
                .putHeader("content-type", "application/json")
                .putHeader("X-Slack-Request-Timestamp", timestamp)
                .putHeader("X-Slack-Signature", sign(secret, timestamp, body));
        if (retry > 0) {
            options.putHeader("X-Slack-Retry-Num", Integer.toString(retry)).putHeader("X-Slack-Retry-Reason", "http_error");
        }
        return client.request(options).compose(request -> request.send(body))
                .compose(response -> response.body().map(read -> response.statusCode()))
                .timeout(8, java.util.concurrent.TimeUnit.SECONDS)
                .otherwise(failure -> failure instanceof java.util.concurrent.TimeoutException ? -2 : -1)
                .compose(status -> {
                    synchronized (this) {
                        answers.add(status);
                    }
                    if (status >= 200 && status < 300 || retry == 3) {
                        return Future.succeededFuture(status);
                    }
                    Promise<Void> later = Promise.promise();
                    vertx.setTimer(delay, t -> later.complete());
                    return later.future().compose(v -> deliver(body, retry + 1));
                });
    }

    /** Slack's v0 request signature. */
    public static String sign(String secret, String timestamp, Buffer body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            byte[] base = ("v0:" + timestamp + ":" + body.toString(StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
            return "v0=" + HexFormat.of().formatHex(mac.doFinal(base));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void handle(HttpServerRequest request) {
        request.body().onSuccess(body -> {
            String method = request.path().substring(request.path().lastIndexOf('/') + 1);
            String auth = request.getHeader("authorization");
            JsonObject params = body.length() == 0 ? new JsonObject() : body.toJsonObject();
            synchronized (this) {
                if (!("Bearer " + TOKEN).equals(auth)) {
                    reply(request, 200, error("invalid_auth"));
                    return;
                }
                switch (method) {
                    case "auth.test" -> reply(request, 200, new JsonObject().put("ok", true).put("url", "https://acme.slack.com/")
                            .put("team", "Acme").put("user", BOT_NAME).put("team_id", "T0001").put("user_id", BOT_USER)
                            .put("bot_id", "B0001"));
                    case "chat.postMessage" -> {
                        String failure = postFailures.poll();
                        if ("429".equals(failure)) {
                            request.response().setStatusCode(429).putHeader("Retry-After", "1")
                                    .putHeader("content-type", "application/json").end(error("ratelimited").encode());
                        } else if (failure != null) {
                            reply(request, 200, error(failure));
                        } else if (!(params.getValue("channel") instanceof String channel) || !(params.getValue("text") instanceof String)) {
                            reply(request, 200, error("invalid_arguments"));
                        } else {
                            String ts = nextTs();
                            sent.add(new JsonObject().put("channel", channel).put("text", params.getString("text"))
                                    .put("thread_ts", params.getString("thread_ts")).put("at", System.currentTimeMillis()));
                            reply(request, 200, new JsonObject().put("ok", true).put("channel", channel).put("ts", ts));
                        }
                    }
                    default -> reply(request, 404, error("unknown_method"));
                }
            }
        });
    }

    private static JsonObject error(String error) {
        return new JsonObject().put("ok", false).put("error", error);
    }

    private static void reply(HttpServerRequest request, int status, JsonObject body) {
        request.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
    }
}
