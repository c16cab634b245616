package io.clawfleet.deploy.bench;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Drives chats through a gateway as clients do, from one event loop (so its state needs no locks):
 * through the native API (POST /api/v1/messages, then long polls of the chat's replies) or the
 * OpenAI-compatible one (POST /v1/chat/completions, the reply in the response). Closed loop: every
 * chat sends its next message when the last one is answered. Open loop: messages go out at a fixed
 * rate whatever the answers do, with at most {@code maxOutstanding} unanswered (more are counted
 * as not sent, so an overloaded system shows up as a shortfall, not as a hidden queue).
 * Every reply is checked against the mock model's answer ({@code echo: <text>}).
 */
public final class LoadDriver {

    public enum Api { NATIVE, OPENAI }

    /** What one phase did. */
    record Phase(long answered, long elapsedNanos, Latencies latencies, Map<String, Long> errors, long notSent) {

        double messagesPerSecond() {
            return elapsedNanos == 0 ? 0 : answered * 1e9 / elapsedNanos;
        }

        long errorCount() {
            return errors.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    /** One chat's client state. */
    private static final class Chat {
        final String id;
        /** The key the chat's tenant uses: with {@code bench --tenants N}, chats belong to many tenants. */
        final String apiKey;
        long lastSeq;
        int next;
        boolean polling;
        /** inbox id -> send time (nanos) of accepted, unanswered messages. */
        final Map<String, Long> pending = new HashMap<>();
        /** Replies seen before their send was acknowledged: inbox id -> arrival time. */
        final Map<String, Long> early = new HashMap<>();
        /** OpenAI API with a client history: the conversation so far, as such a client sends it every time. */
        final JsonArray said = new JsonArray();

        Chat(String id, String apiKey) {
            this.id = id;
            this.apiKey = apiKey;
        }
    }

    private final Context context;
    private final HttpClientAgent http;
    private final String baseUrl;
    private final Api api;
    /** OpenAI API: the most messages of its conversation a client sends with each new one (0: only the new one). */
    private int clientHistory;
    private final List<Chat> chats = new ArrayList<>();

    private Latencies latencies;
    private Map<String, Long> errors;
    private long answered;
    private long outstanding;
    private long notSent;
    private boolean stopping;
    /** Open loop: sends follow the clock, not the answers. */
    private boolean pacing;
    private Promise<Void> drained;

    LoadDriver(Vertx vertx, String baseUrl, String apiKey, Api api, String runId, int chats) {
        this(vertx, baseUrl, List.of(apiKey), api, runId, chats);
    }

    /** @param apiKeys chat {@code i} sends with key {@code i % size}: each key's tenant gets its share of the chats */
    LoadDriver(Vertx vertx, String baseUrl, List<String> apiKeys, Api api, String runId, int chats) {
        this.context = vertx.getOrCreateContext();
        this.http = vertx.createHttpClient(new HttpClientOptions().setTcpNoDelay(true).setKeepAlive(true)
                .setConnectTimeout(5_000), new PoolOptions().setHttp1MaxSize(2 * chats + 64).setMaxWaitQueueSize(100_000));
        this.baseUrl = baseUrl;
        this.api = api;
        for (int i = 0; i < chats; i++) {
            this.chats.add(new Chat(runId + "-" + i, apiKeys.get(i % apiKeys.size())));
        }
    }

    /** Every chat sends, one message at a time, for {@code duration}; then the answers are awaited. */
    Phase closedLoop(Duration duration) throws Exception {
        return run(duration, 0, 0);
    }

    /** {@code rate} messages per second over all chats, round robin, for {@code duration}. */
    Phase openLoop(Duration duration, double rate, int maxOutstanding) throws Exception {
        return run(duration, rate, maxOutstanding);
    }

    private Phase run(Duration duration, double rate, int maxOutstanding) throws Exception {
        Promise<Phase> done = Promise.promise();
        context.runOnContext(v -> {
            latencies = new Latencies();
            errors = new TreeMap<>();
            answered = 0;
            outstanding = 0;
            notSent = 0;
            stopping = false;
            pacing = rate > 0;
            drained = Promise.promise();
            long start = System.nanoTime();
            if (rate <= 0) {
                chats.forEach(this::sendNext);
            } else {
                pace(start, rate, (long) (duration.toNanos() / 1e9 * rate), maxOutstanding, new long[1]);
            }
            context.owner().setTimer(duration.toMillis(), t -> {
                stopping = true;
                checkDrained();
            });
            drained.future().onComplete(d -> done.complete(new Phase(answered, System.nanoTime() - start, latencies,
                    Map.copyOf(errors), notSent)));
        });
        // Answers still outstanding at the end get a generous but bounded time.
        return done.future().toCompletionStage().toCompletableFuture()
                .get(duration.toMillis() + 120_000, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    /**
     * Open loop: every 2 ms, send what the rate says is due by now, and never more than the phase's {@code total}: a
     * stall of the load generator's JVM (a pause on a busy machine) delays its stop timer too, and catching up after it
     * must not send past the phase's end.
     */
    private void pace(long start, double rate, long total, int maxOutstanding, long[] sent) {
        if (stopping) {
            return;
        }
        long due = Math.min(total, (long) ((System.nanoTime() - start) / 1e9 * rate));
        for (; sent[0] < due; sent[0]++) {
            if (outstanding >= maxOutstanding) {
                notSent++;
                continue;
            }
            send(chats.get((int) (sent[0] % chats.size())));
        }
        context.owner().setTimer(2, t -> pace(start, rate, total, maxOutstanding, sent));
    }

    /** Closed loop: the chat's next message, unless the phase is over. */
    private void sendNext(Chat chat) {
        if (stopping) {
            checkDrained();
            return;
        }
        send(chat);
    }

    /**
     * Makes each chat an OpenAI client that keeps its conversation and sends it whole, up to {@code messages} earlier
     * messages (the oldest dropped first), as the official SDKs' chat loops do; the server keeps its own history and
     * reads only the last message.
     */
    LoadDriver clientHistory(int messages) {
        this.clientHistory = messages;
        return this;
    }

    private void send(Chat chat) {
        String text = chat.id + " says " + chat.next++;
        long sentAt = System.nanoTime();
        outstanding++;
        if (api == Api.OPENAI) {
            JsonObject asked = new JsonObject().put("role", "user").put("content", text);
            JsonObject body = new JsonObject().put("model", "default").put("user", chat.id)
                    .put("messages", chat.said.copy().add(asked));
            request(chat, HttpMethod.POST, "/v1/chat/completions", body).onComplete(r -> {
                if (r.succeeded() && r.result().statusCode() == 200) {
                    String reply = new JsonObject(r.result().body()).getJsonArray("choices").getJsonObject(0)
                            .getJsonObject("message").getString("content");
                    if (clientHistory > 0) {
                        chat.said.add(asked).add(new JsonObject().put("role", "assistant").put("content", reply));
                        while (chat.said.size() > clientHistory) {
                            chat.said.remove(0);
                        }
                    }
                    answer(chat, sentAt, System.nanoTime(), ("echo: " + text).equals(reply));
                } else {
                    fail(chat, r.succeeded() ? "http " + r.result().statusCode() : r.cause().getClass().getSimpleName());
                }
            });
            return;
        }
        JsonObject body = new JsonObject().put("chatId", chat.id).put("senderId", "bench")
                .put("messageId", "m-" + chat.next).put("text", text);
        request(chat, HttpMethod.POST, "/api/v1/messages", body).onComplete(r -> {
            if (r.failed() || (r.result().statusCode() != 202 && r.result().statusCode() != 200)) {
                fail(chat, r.succeeded() ? "http " + r.result().statusCode() : r.cause().getClass().getSimpleName());
                return;
            }
            String id = new JsonObject(r.result().body()).getString("id");
            Long arrived = chat.early.remove(id);
            if (arrived != null) {
                answer(chat, sentAt, arrived, true);
            } else {
                chat.pending.put(id, sentAt);
                poll(chat);
            }
        });
    }

    /** Long-polls the chat's replies while it has unanswered messages. */
    private void poll(Chat chat) {
        if (chat.polling) {
            return;
        }
        chat.polling = true;
        request(chat, HttpMethod.GET, "/api/v1/chats/" + chat.id + "/replies?after=" + chat.lastSeq + "&wait=10&limit=500", null)
                .onComplete(r -> {
                    chat.polling = false;
                    long now = System.nanoTime();
                    if (r.failed() || r.result().statusCode() != 200) {
                        count(r.succeeded() ? "poll http " + r.result().statusCode() : "poll " + r.cause().getClass().getSimpleName());
                        context.owner().setTimer(100, t -> poll(chat));
                        return;
                    }
                    JsonArray replies = new JsonObject(r.result().body()).getJsonArray("replies");
                    for (int i = 0; i < replies.size(); i++) {
                        JsonObject reply = replies.getJsonObject(i);
                        chat.lastSeq = Math.max(chat.lastSeq, reply.getLong("seq"));
                        Long sentAt = chat.pending.remove(reply.getString("inReplyTo"));
                        if (sentAt == null) {
                            chat.early.put(reply.getString("inReplyTo"), now);
                        } else {
                            answer(chat, sentAt, now, reply.getString("text").startsWith("echo: " + chat.id + " says "));
                        }
                    }
                    if (!chat.pending.isEmpty()) {
                        poll(chat);
                    }
                });
    }

    private void answer(Chat chat, long sentAt, long answeredAt, boolean correct) {
        outstanding--;
        if (correct) {
            answered++;
            latencies.add((answeredAt - sentAt) / 1_000);
        } else {
            count("wrong reply");
        }
        afterAnswer(chat);
    }

    private void fail(Chat chat, String kind) {
        outstanding--;
        count(kind);
        // Back off a little so a refusing server is not hammered by a closed loop.
        context.owner().setTimer(50, t -> afterAnswer(chat));
    }

    private void afterAnswer(Chat chat) {
        if (!stopping && chat.pending.isEmpty() && !pacing) {
            sendNext(chat);
        } else {
            checkDrained();
        }
    }

    private void count(String kind) {
        errors.merge(kind, 1L, Long::sum);
    }

    private void checkDrained() {
        if (stopping && outstanding == 0) {
            drained.tryComplete();
        }
    }

    private record Response(int statusCode, String body) {
    }

    private Future<Response> request(Chat chat, HttpMethod method, String path, JsonObject body) {
        RequestOptions options = new RequestOptions().setMethod(method).setAbsoluteURI(baseUrl + path)
                .putHeader("authorization", "Bearer " + chat.apiKey).setTimeout(30_000);
        if (body != null) {
            options.putHeader("content-type", "application/json");
        }
        return http.request(options)
                .compose(request -> body == null ? request.send() : request.send(Buffer.buffer(body.encode())))
                .compose(response -> response.body().map(b -> new Response(response.statusCode(), b.toString())));
    }

    void close() {
        http.close();
    }
}
