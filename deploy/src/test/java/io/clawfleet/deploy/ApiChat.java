package io.clawfleet.deploy;

import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;

/** A tenant's side of a running node's HTTP API, for end-to-end tests: its requests, and a message sent and its reply. */
final class ApiChat {

    private final String base;
    private final String key;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** @param base the node's HTTP address, {@code http://127.0.0.1:<port>} */
    ApiChat(String base, String key) {
        this.base = base;
        this.key = key;
    }

    HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + key)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A GET answered with bytes (an export). */
    HttpResponse<byte[]> bytes(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + key)
                .timeout(Duration.ofSeconds(60)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Sends one message to a chat and returns the bot's reply to it (the mock model relays tool results). */
    String ask(String chat, String text) throws Exception {
        String id = new JsonObject(call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u")
                .put("messageId", UUID.randomUUID().toString()).put("text", text)).body()).getString("id");
        String[] reply = {null};
        Await.until("a reply to " + text, Duration.ofSeconds(90), () -> {
            JsonArray replies;
            try {
                replies = new JsonObject(call("GET", "/api/v1/chats/" + chat + "/replies?wait=5", null).body()).getJsonArray("replies");
            } catch (Exception e) {
                return false;
            }
            replies.stream().map(JsonObject.class::cast).filter(r -> id.equals(r.getString("inReplyTo")))
                    .findFirst().ifPresent(r -> reply[0] = r.getString("text"));
            return reply[0] != null;
        });
        return reply[0];
    }
}
