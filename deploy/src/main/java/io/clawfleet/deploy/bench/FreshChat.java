package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The size of the first model request of a brand-new chat with the default tools and workspace:
 * one message on an otherwise quiet cluster, and the body the mock model received for it.
 */
final class FreshChat {

    private FreshChat() {
    }

    static void measure(Vertx vertx, String gateway, MockLlmServer model, BenchReport report) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        String chat = "fresh-" + System.nanoTime();
        long requestsBefore = model.requestCount();
        HttpResponse<String> accepted = http.send(HttpRequest.newBuilder(URI.create(gateway + "/api/v1/messages"))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("chatId", chat).put("senderId", "bench")
                        .put("messageId", "m-1").put("text", "hello").encode())).build(), HttpResponse.BodyHandlers.ofString());
        if (accepted.statusCode() != 202) {
            throw new IllegalStateException("fresh chat message refused: " + accepted.statusCode() + " " + accepted.body());
        }
        HttpResponse<String> replies = http.send(HttpRequest.newBuilder(URI.create(gateway + "/api/v1/chats/" + chat
                        + "/replies?after=0&wait=30")).header("authorization", "Bearer " + ClusterHarness.API_KEY)
                .timeout(Duration.ofSeconds(40)).build(), HttpResponse.BodyHandlers.ofString());
        if (new JsonObject(replies.body()).getJsonArray("replies").isEmpty()) {
            throw new IllegalStateException("fresh chat got no reply within 30 s");
        }
        if (model.requestCount() != requestsBefore + 1) {
            report.note("the fresh chat's turn made " + (model.requestCount() - requestsBefore)
                    + " model calls; the size is that of the last one");
        }
        report.add("fresh chat's first model request", model.lastRequestBody().getBytes(StandardCharsets.UTF_8).length,
                "bytes", "<= 6144");
    }
}
