package io.clawfleet.deploy.chaos;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Drives chats through the native API like real clients: each chat sends its messages one after
 * another (waiting for the acknowledgement, not the reply) and retries a refused or failed send
 * with the same messageId, on whichever gateway the supplier names next. Then it checks what every
 * user relies on: each accepted message answered exactly once, in order, by the right reply.
 *
 * <p>Replies are read at the end by default. A load {@link #readingAsItGoes} reads them while it sends, as a chat
 * client does, so that a cluster may prune delivered replies during the run (its retention) without the check
 * missing them.
 */
public final class ChatLoad implements AutoCloseable {

    /** What a check found; all three lists empty means correct. */
    public record Verdict(int chats, int messages, List<String> lost, List<String> duplicated,
                          List<String> outOfOrder, long p50LatencyMs, long p99LatencyMs, long maxLatencyMs) {
        public boolean clean() {
            return lost.isEmpty() && duplicated.isEmpty() && outOfOrder.isEmpty();
        }
    }

    private record Sent(String id, String text, Instant acceptedAt) {
    }

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Supplier<String> gateways;
    private final String apiKey;
    private final String prefix;
    private final Map<String, List<Sent>> accepted = new ConcurrentHashMap<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final ExecutorService senders = Executors.newVirtualThreadPerTaskExecutor();
    private final List<Future<?>> running = new CopyOnWriteArrayList<>();
    /** Each chat's replies read so far, in order; a chat's reader (or {@link #verify}) alone appends to it. */
    private final Map<String, JsonArray> received = new ConcurrentHashMap<>();
    private final AtomicBoolean stopReading = new AtomicBoolean();
    private final List<Future<?>> readers = new CopyOnWriteArrayList<>();
    private volatile boolean readsAsItGoes;
    private volatile boolean takesRefusals;
    /** What message {@code m} of a chat says, and whether a reply's text answers a message's text. */
    private volatile java.util.function.BiFunction<String, Integer, String> texts = (chat, m) -> chat + " message " + m;
    private volatile java.util.function.BiPredicate<String, String> answers = (text, reply) -> reply.equals("echo: " + text);
    /** The reply each answered message got, by the message's text; filled by {@link #verify}. */
    private final Map<String, String> replyTexts = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicInteger refused = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger refusedWithoutRetryAfter = new java.util.concurrent.atomic.AtomicInteger();

    /** @param gateways the base URL of a gateway to use for the next request */
    public ChatLoad(Supplier<String> gateways, String apiKey, String prefix) {
        this.gateways = gateways;
        this.apiKey = apiKey;
        this.prefix = prefix;
    }

    /** Starts {@code chats} senders, each sending up to {@code messages} messages, one every {@code pauseMs}. */
    public void start(int chats, int messages, long pauseMs) {
        for (int c = 0; c < chats; c++) {
            String chat = prefix + "-" + c;
            accepted.put(chat, new CopyOnWriteArrayList<>());
            received.put(chat, new JsonArray());
            if (readsAsItGoes) {
                readers.add(senders.submit(() -> {
                    while (!stopReading.get() && !Thread.currentThread().isInterrupted()) {
                        readPage(chat, 5);
                    }
                }));
            }
            running.add(senders.submit(() -> {
                for (int m = 0; m < messages && !stop.get(); m++) {
                    send(chat, m);
                    sleep(pauseMs);
                }
            }));
        }
    }

    /** Asks the senders to stop after the message each is sending. */
    public void stopSending() {
        stop.set(true);
    }

    /** Waits for every sender to finish. */
    public void awaitSent(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Future<?> sender : running) {
            sender.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
    }

    public int sent() {
        return accepted.values().stream().mapToInt(List::size).sum();
    }

    /**
     * Makes this load a flood's: a message refused with 429 or 503 (the edge saying "beyond capacity, nothing
     * stored") is counted and given up, as a client that drops what it may not send, instead of retried. Such a
     * message must then never be answered; {@link #verify} finds it if it is (a reply that answers no accepted
     * message). Call before {@link #start}.
     */
    public ChatLoad takingRefusals() {
        takesRefusals = true;
        return this;
    }

    /**
     * Makes this load read each chat's replies while it sends (a long poll per chat, from the last reply read), as
     * a chat client does, instead of all at the end: replies the cluster prunes during the run were read before.
     * Call before {@link #start}.
     */
    public ChatLoad readingAsItGoes() {
        readsAsItGoes = true;
        return this;
    }

    /**
     * Makes this load send other texts than "chat message m", and judge a reply right when {@code answers} says so
     * of the message's text and the reply's (by default the mock model's echo). Call before {@link #start}.
     */
    public ChatLoad saying(java.util.function.BiFunction<String, Integer, String> texts,
                           java.util.function.BiPredicate<String, String> answers) {
        this.texts = texts;
        this.answers = answers;
        return this;
    }

    /** The reply each answered message got, by the message's text (after {@link #verify}). */
    public Map<String, String> replyTexts() {
        return Map.copyOf(replyTexts);
    }

    /** Messages the gateways refused with 429 or 503 (only counted by a load {@link #takingRefusals}). */
    public int refused() {
        return refused.get();
    }

    /** Of {@link #refused}, those whose answer did not say when to retry ({@code Retry-After}). */
    public int refusedWithoutRetryAfter() {
        return refusedWithoutRetryAfter.get();
    }

    private void send(String chat, int m) {
        String text = texts.apply(chat, m);
        JsonObject body = new JsonObject().put("chatId", chat).put("senderId", "user").put("messageId", "m-" + m)
                .put("text", text);
        // Retry with the same messageId until accepted: the client's side of exactly-once.
        for (int attempt = 0; attempt < 1_200; attempt++) {
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateways.get() + "/api/v1/messages"))
                        .header("authorization", "Bearer " + apiKey).header("content-type", "application/json")
                        .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 202 || response.statusCode() == 200) {
                    String id = new JsonObject(response.body()).getString("id");
                    List<Sent> sent = accepted.get(chat);
                    // A retry after a lost acknowledgement returns the same id: record it once.
                    if (sent.isEmpty() || !sent.get(sent.size() - 1).id().equals(id)) {
                        sent.add(new Sent(id, text, Instant.now()));
                    }
                    return;
                }
                if (takesRefusals && (response.statusCode() == 429 || response.statusCode() == 503)) {
                    // Nothing was stored. Even on a retry after an acknowledgement lost with a killed gateway: the intake
                    // statement finds a stored key before it applies the backlog cap (the admission limits checked
                    // before it, rates and the in-flight cap, are off or out of reach in the chaos run).
                    refused.incrementAndGet();
                    if (response.headers().firstValue("retry-after").isEmpty()) {
                        refusedWithoutRetryAfter.incrementAndGet();
                    }
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                // The gateway is down or restarting: retry below, maybe on another.
            }
            sleep(100);
        }
        throw new IllegalStateException("message " + m + " of " + chat + " was never accepted");
    }

    /** Reads every chat's replies until all are answered or the timeout passes, then judges them. */
    public Verdict verify(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        stopReading.set(true);
        for (Future<?> reader : readers) {
            // A reader ends with its long poll (5 s), or its request's timeout when a gateway hangs.
            reader.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        List<String> lost = new ArrayList<>();
        List<String> duplicated = new ArrayList<>();
        List<String> outOfOrder = new ArrayList<>();
        List<Long> latencies = new ArrayList<>();
        int total = 0;
        for (var entry : accepted.entrySet()) {
            String chat = entry.getKey();
            List<Sent> sent = entry.getValue();
            total += sent.size();
            JsonArray replies = replies(chat, sent.size(), deadline);
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < replies.size(); i++) {
                JsonObject reply = replies.getJsonObject(i);
                String inReplyTo = reply.getString("inReplyTo");
                if (!seen.add(inReplyTo)) {
                    duplicated.add(chat + ":" + inReplyTo);
                    continue;
                }
                if (reply.getLong("seq") != i + 1) {
                    outOfOrder.add(chat + ": reply " + (i + 1) + " has seq " + reply.getLong("seq"));
                }
                int position = seen.size() - 1;
                if (position >= sent.size() || !sent.get(position).id().equals(inReplyTo)) {
                    outOfOrder.add(chat + ": reply " + (i + 1) + " answers " + inReplyTo);
                } else if (!answers.test(sent.get(position).text(), reply.getString("text"))) {
                    outOfOrder.add(chat + ": reply to " + inReplyTo + " is '" + reply.getString("text") + "'");
                } else {
                    replyTexts.put(sent.get(position).text(), reply.getString("text"));
                    latencies.add(Duration.between(sent.get(position).acceptedAt(), Instant.parse(reply.getString("at"))).toMillis());
                }
            }
            for (Sent message : sent) {
                if (!seen.contains(message.id())) {
                    lost.add(chat + ":" + message.id());
                }
            }
        }
        Collections.sort(latencies);
        return new Verdict(accepted.size(), total, lost, duplicated, outOfOrder, percentile(latencies, 0.50),
                percentile(latencies, 0.99), latencies.isEmpty() ? 0 : latencies.get(latencies.size() - 1));
    }

    private static long percentile(List<Long> sorted, double q) {
        return sorted.isEmpty() ? 0 : sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(q * sorted.size()) - 1));
    }

    /** Reads the chat's replies on from those read before until there are {@code expected} or the deadline passes. */
    private JsonArray replies(String chat, int expected, long deadline) {
        JsonArray all = received.get(chat);
        while (System.nanoTime() < deadline && !Thread.currentThread().isInterrupted()) {
            if (readPage(chat, all.size() >= expected ? 0 : 5) == 0 && all.size() >= expected) {
                return all;
            }
        }
        return all;
    }

    /**
     * Reads one page of the chat's replies after the last one read (waiting up to {@code waitSeconds} for one) and
     * appends it; returns how many came, -1 when the request failed (after a short pause: the gateway may be down).
     */
    private int readPage(String chat, int waitSeconds) {
        JsonArray all = received.get(chat);
        long after = all.isEmpty() ? 0 : all.getJsonObject(all.size() - 1).getLong("seq");
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateways.get()
                            + "/api/v1/chats/" + chat + "/replies?after=" + after + "&limit=500&wait=" + waitSeconds))
                    .header("authorization", "Bearer " + apiKey).timeout(Duration.ofSeconds(15)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 200) {
                JsonArray page = new JsonObject(response.body()).getJsonArray("replies");
                page.forEach(all::add);
                return page.size();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        } catch (Exception e) {
            // The gateway is down or restarting: pause below, then the next request may go to another.
        }
        sleep(200);
        return -1;
    }

    @Override
    public void close() {
        stop.set(true);
        stopReading.set(true);
        senders.shutdownNow();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
