package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * another (waiting for the 202, not for the reply), retrying with the same messageId when the
 * gateway is unavailable. Then it checks what every user relies on: each accepted message answered
 * exactly once, in order.
 */
final class ChatLoad {

    /** What a check found; all lists empty means correct. */
    record Verdict(int chats, int messages, List<String> lost, List<String> duplicated, List<String> outOfOrder) {
        boolean clean() {
            return lost.isEmpty() && duplicated.isEmpty() && outOfOrder.isEmpty();
        }
    }

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Supplier<String> gatewayUrl;
    private final String apiKey;
    private final String prefix;
    private final ConcurrentHashMap<String, List<String>> accepted = new ConcurrentHashMap<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final ExecutorService senders = Executors.newVirtualThreadPerTaskExecutor();
    private final List<Future<?>> running = new CopyOnWriteArrayList<>();

    ChatLoad(Supplier<String> gatewayUrl, String apiKey, String prefix) {
        this.gatewayUrl = gatewayUrl;
        this.apiKey = apiKey;
        this.prefix = prefix;
    }

    /** Starts {@code chats} senders, each sending up to {@code messages} messages, one every {@code pauseMs}. */
    void start(int chats, int messages, long pauseMs) {
        for (int c = 0; c < chats; c++) {
            String chat = prefix + "-" + c;
            accepted.put(chat, new CopyOnWriteArrayList<>());
            running.add(senders.submit(() -> {
                for (int m = 0; m < messages && !stop.get(); m++) {
                    send(chat, m);
                    sleep(pauseMs);
                }
            }));
        }
    }

    /** Waits for every sender to finish its messages. */
    void awaitSent(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Future<?> sender : running) {
            sender.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
    }

    int sent() {
        return accepted.values().stream().mapToInt(List::size).sum();
    }

    private void send(String chat, int m) {
        JsonObject body = new JsonObject().put("chatId", chat).put("senderId", "user").put("messageId", "m-" + m)
                .put("text", chat + " message " + m);
        // Retry with the same messageId until accepted: the client's side of exactly-once.
        for (int attempt = 0; attempt < 600 && !Thread.currentThread().isInterrupted(); attempt++) {
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gatewayUrl.get() + "/api/v1/messages"))
                        .header("authorization", "Bearer " + apiKey).header("content-type", "application/json")
                        .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 202 || response.statusCode() == 200) {
                    accepted.get(chat).add(new JsonObject(response.body()).getString("id"));
                    return;
                }
            } catch (Exception e) {
                // The gateway is down or restarting: retry below.
            }
            sleep(100);
        }
        throw new IllegalStateException("message " + m + " of " + chat + " was never accepted");
    }

    /** Reads every chat's replies until all are answered or the timeout passes, then judges them. */
    Verdict verify(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<String> lost = new ArrayList<>();
        List<String> duplicated = new ArrayList<>();
        List<String> outOfOrder = new ArrayList<>();
        int total = 0;
        for (var entry : accepted.entrySet()) {
            String chat = entry.getKey();
            List<String> ids = entry.getValue();
            total += ids.size();
            JsonArray replies = replies(chat, ids.size(), deadline);
            List<String> answered = new ArrayList<>();
            for (int i = 0; i < replies.size(); i++) {
                JsonObject reply = replies.getJsonObject(i);
                String inReplyTo = reply.getString("inReplyTo");
                if (answered.contains(inReplyTo)) {
                    duplicated.add(chat + ":" + inReplyTo);
                }
                answered.add(inReplyTo);
                if (reply.getLong("seq") != i + 1) {
                    outOfOrder.add(chat + ": reply " + (i + 1) + " has seq " + reply.getLong("seq"));
                }
            }
            for (String id : ids) {
                if (!answered.contains(id)) {
                    lost.add(chat + ":" + id);
                }
            }
            List<String> inOrder = answered.stream().distinct().toList();
            if (!inOrder.equals(ids.subList(0, Math.min(ids.size(), inOrder.size())))) {
                outOfOrder.add(chat + ": answered " + inOrder + " for sent " + ids);
            }
        }
        return new Verdict(accepted.size(), total, lost, duplicated, outOfOrder);
    }

    private JsonArray replies(String chat, int expected, long deadline) throws Exception {
        JsonArray all = new JsonArray();
        while (System.nanoTime() < deadline) {
            long after = all.isEmpty() ? 0 : all.getJsonObject(all.size() - 1).getLong("seq");
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gatewayUrl.get()
                                + "/api/v1/chats/" + chat + "/replies?after=" + after + "&limit=500&wait=" + (all.size() >= expected ? 0 : 5)))
                        .header("authorization", "Bearer " + apiKey).timeout(Duration.ofSeconds(15)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200) {
                    JsonArray page = new JsonObject(response.body()).getJsonArray("replies");
                    page.forEach(all::add);
                    if (page.isEmpty() && all.size() >= expected) {
                        return all;
                    }
                }
            } catch (Exception e) {
                sleep(200);
            }
        }
        return all;
    }

    void close() {
        stop.set(true);
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
