package io.clawfleet.deploy.chaos;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Poison messages among the chaos faults (issue 20): messages whose turn kills the worker that runs it. The chaos
 * run's mock model tells them by a tag in their text; when one asks the model, the run kills the owner of its
 * partition with kill -9 and starts it again later, as a crash in the turn would. Each pill must end as an error reply
 * (the worker dead-letters it after {@code worker.maxTurnStarts} owners started it), having crashed workers at most
 * that many times, and no other message may be dead-lettered with it.
 */
final class PoisonPills {

    /** One pill: its chat, the id the gateway gave it, its partition, the crashes it caused and how it ended. */
    static final class Pill {
        final String chat;
        final String text;
        final AtomicInteger crashes = new AtomicInteger();
        /** Model requests of its turns so far: a crash waiting to be injected gives way to a later request's. */
        final AtomicInteger requests = new AtomicInteger();
        volatile String id;
        volatile int partition = -1;
        volatile long sentNanos;
        volatile String reply;
        volatile long replyAfterMs = -1;
        /** Model requests of the pill not answered yet, by number: each waits for its crash. */
        final java.util.Map<Integer, io.vertx.core.Promise<Void>> waiting = new java.util.concurrent.ConcurrentHashMap<>();

        /**
         * Lets request {@code request} be answered: its turn is not the pill's current one (a newer owner asked since),
         * so it must end as a real stale turn does, at its fenced commit, rather than hang until the turn times out and
         * hold its worker's restarted turns behind it, which a crash never does.
         */
        void release(int request) {
            io.vertx.core.Promise<Void> promise = waiting.remove(request);
            if (promise != null) {
                promise.tryComplete();
            }
        }

        Pill(String chat, String text) {
            this.chat = chat;
            this.text = text;
        }

        boolean deadLettered() {
            // The worker's words when it gives up on a message its owners kept dying in (AgentLoop.poisoned); a turn that
            // timed out instead says so and does not count.
            return reply != null && reply.contains("by workers that stopped before finishing it");
        }

        JsonObject toJson() {
            return new JsonObject().put("chat", chat).put("partition", partition).put("crashes", crashes.get())
                    .put("deadLettered", deadLettered()).put("replyAfterMs", replyAfterMs);
        }
    }

    private final String tag = "CHAOS-PILL-" + UUID.randomUUID();
    private final List<Pill> pills = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String apiKey;
    private volatile boolean closed;

    PoisonPills(int count, String apiKey) {
        this.apiKey = apiKey;
        for (int i = 0; i < count; i++) {
            pills.add(new Pill("chaos-pill-" + i, tag + "-" + i));
        }
    }

    List<Pill> all() {
        return pills;
    }

    /** The pill a model request is about (its text is in the request), if any. */
    Optional<Pill> in(JsonObject modelRequest) {
        String body = modelRequest.encode();
        if (!body.contains(tag)) {
            return Optional.empty();
        }
        return pills.stream().filter(p -> body.contains(p.text)).findFirst();
    }

    /** Sends pill {@code index} through a gateway; true when the gateway accepted it. */
    boolean send(int index, String gatewayUrl) {
        Pill pill = pills.get(index);
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gatewayUrl + "/api/v1/messages"))
                    .header("authorization", "Bearer " + apiKey).header("content-type", "application/json")
                    .timeout(Duration.ofSeconds(30))
                    .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("chatId", pill.chat).put("senderId", "u")
                            .put("messageId", pill.chat + "-m").put("text", pill.text).encode()))
                    .build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() / 100 != 2) {
                return false;
            }
            JsonObject accepted = new JsonObject(response.body());
            pill.id = accepted.getString("id");
            pill.partition = accepted.getInteger("partition", -1);
            pill.sentNanos = System.nanoTime();
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /**
     * Reads the pill's reply while the run goes on, as its chat's client would (a long poll at a time, through the
     * gateway the supplier names): a cluster that prunes delivered replies during the run may prune it before the
     * end. Call once the pill is sent; the reader stops when the reply is read or {@link #close} is called.
     */
    void readAsItGoes(Pill pill, java.util.function.Supplier<String> gatewayUrl) {
        Thread.ofVirtual().name("chaos-pill-reader-" + pill.chat).start(() -> {
            while (pill.reply == null && !closed) {
                try {
                    readReply(pill, gatewayUrl.get());
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    sleepQuietly(500);
                }
            }
        });
    }

    /** Waits (up to {@code timeout} for all) for each sent pill's reply. */
    void awaitReplies(String gatewayUrl, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Pill pill : pills) {
            while (pill.id != null && pill.reply == null && System.nanoTime() < deadline) {
                try {
                    readReply(pill, gatewayUrl);
                } catch (InterruptedException e) {
                    throw e;
                } catch (Exception e) {
                    Thread.sleep(500);
                }
            }
        }
    }

    /** Stops the readers {@link #readAsItGoes} started. */
    void close() {
        closed = true;
    }

    /** One long poll (5 s) of the pill's chat; keeps the reply that answers the pill. */
    private void readReply(Pill pill, String gatewayUrl) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(
                        URI.create(gatewayUrl + "/api/v1/chats/" + pill.chat + "/replies?wait=5"))
                .header("authorization", "Bearer " + apiKey).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        JsonArray replies = new JsonObject(response.body()).getJsonArray("replies", new JsonArray());
        for (Object r : replies) {
            JsonObject reply = (JsonObject) r;
            if (pill.id.equals(reply.getString("inReplyTo")) && pill.reply == null) {
                pill.replyAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pill.sentNanos);
                pill.reply = reply.getString("text");
            }
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
