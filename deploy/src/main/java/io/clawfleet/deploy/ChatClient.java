package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;

/**
 * A terminal chat against a gateway's native API, as the CLI channel of seed 000: each line is a
 * message; replies are read by long poll until the answer to it has arrived.
 */
final class ChatClient {

    private static final int WAIT_SECONDS = 25;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String baseUrl;
    private final String apiKey;
    private final String chatId;
    private final String senderId;
    private long lastSeq;

    ChatClient(String baseUrl, String apiKey, String chatId, String senderId) {
        this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        this.apiKey = apiKey;
        this.chatId = chatId;
        this.senderId = senderId;
    }

    /** Runs until end of input or /quit. */
    void run(BufferedReader in, PrintStream out) throws IOException, InterruptedException {
        lastSeq = latestSeq();
        out.println("chat '" + chatId + "' on " + baseUrl + " - type a message, /quit to leave");
        while (true) {
            out.print("you> ");
            out.flush();
            String line = in.readLine();
            if (line == null || line.strip().equals("/quit") || line.strip().equals("/exit")) {
                return;
            }
            if (line.isBlank()) {
                continue;
            }
            String id = send(line);
            awaitAnswer(id, out);
        }
    }

    private String send(String text) throws IOException, InterruptedException {
        JsonObject body = new JsonObject().put("chatId", chatId).put("senderId", senderId)
                .put("messageId", UUID.randomUUID().toString()).put("text", text);
        HttpResponse<String> response = http.send(request("/api/v1/messages")
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 202 && response.statusCode() != 200) {
            throw new IOException("the gateway refused the message: " + response.statusCode() + " " + response.body());
        }
        return new JsonObject(response.body()).getString("id");
    }

    private void awaitAnswer(String messageId, PrintStream out) throws IOException, InterruptedException {
        while (true) {
            HttpResponse<String> response = http.send(request("/api/v1/chats/" + encode(chatId) + "/replies?after=" + lastSeq
                    + "&wait=" + WAIT_SECONDS).timeout(Duration.ofSeconds(WAIT_SECONDS + 10)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IOException("cannot read replies: " + response.statusCode() + " " + response.body());
            }
            JsonArray replies = new JsonObject(response.body()).getJsonArray("replies");
            boolean answered = false;
            for (int i = 0; i < replies.size(); i++) {
                JsonObject reply = replies.getJsonObject(i);
                lastSeq = Math.max(lastSeq, reply.getLong("seq"));
                out.println("bot> " + reply.getString("text"));
                answered |= messageId.equals(reply.getString("inReplyTo"));
            }
            if (answered) {
                return;
            }
        }
    }

    private long latestSeq() throws IOException, InterruptedException {
        long seq = 0;
        while (true) {
            HttpResponse<String> response = http.send(request("/api/v1/chats/" + encode(chatId) + "/replies?limit=500&after=" + seq)
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 401) {
                throw new IOException("the gateway rejected the API key (401); pass --api-key or set CLAWFLEET_API_KEY");
            }
            if (response.statusCode() != 200) {
                throw new IOException("cannot read replies: " + response.statusCode() + " " + response.body());
            }
            JsonArray replies = new JsonObject(response.body()).getJsonArray("replies");
            if (replies.isEmpty()) {
                return seq;
            }
            seq = replies.getJsonObject(replies.size() - 1).getLong("seq");
        }
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(baseUrl + path)).header("authorization", "Bearer " + apiKey)
                .timeout(Duration.ofSeconds(30));
    }

    private static String encode(String text) {
        return java.net.URLEncoder.encode(text, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
    }
}
