package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * A chat with a cluster of separate JVMs through its gateway's API, and what the sandbox failover tests ask of it:
 * which sandbox node is running a call now (its {@code /readyz}), and how many sandbox nodes the cluster sees.
 */
final class SandboxClusterChat {

    private final ClusterHarness cluster;
    private final ClusterHarness.Node gateway;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    SandboxClusterChat(ClusterHarness cluster, ClusterHarness.Node gateway) {
        this.cluster = cluster;
        this.gateway = gateway;
    }

    HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(gateway.url() + path))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Sends a message to the chat; its id. */
    String send(String chat, String text) throws Exception {
        return new JsonObject(call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "u")
                .put("messageId", UUID.randomUUID().toString()).put("text", text)).body()).getString("id");
    }

    /** The reply to message {@code id}, waited for up to 90 s. */
    String reply(String chat, String id) {
        String[] reply = {null};
        Await.until("the reply to " + id, Duration.ofSeconds(90), () -> {
            try {
                JsonArray replies = new JsonObject(call("GET", "/api/v1/chats/" + chat + "/replies?wait=5", null).body())
                        .getJsonArray("replies");
                replies.stream().map(JsonObject.class::cast).filter(r -> id.equals(r.getString("inReplyTo")))
                        .findFirst().ifPresent(r -> reply[0] = r.getString("text"));
            } catch (Exception e) {
                return false;
            }
            return reply[0] != null;
        });
        return reply[0];
    }

    String ask(String chat, String text) throws Exception {
        return reply(chat, send(chat, text));
    }

    /** The first of {@code candidates} seen running a call, waited for up to 20 s. */
    ClusterHarness.Node awaitRunningNode(List<String> candidates) {
        ClusterHarness.Node[] found = {null};
        Await.until("a sandbox node running the call", Duration.ofSeconds(20), () -> {
            for (String id : candidates) {
                Optional<Integer> running = runningOn(cluster.node(id));
                if (running.isPresent() && running.get() > 0) {
                    found[0] = cluster.node(id);
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    /** Runs in progress on a sandbox node, from its /readyz. */
    private Optional<Integer> runningOn(ClusterHarness.Node node) {
        try {
            String body = http.send(HttpRequest.newBuilder(URI.create(node.url() + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            return Optional.ofNullable(findSandbox(new JsonObject(body))).map(s -> s.getInteger("running"));
        } catch (Exception e) {
            return Optional.empty();
        }
    }

    /** The "sandbox" detail wherever /readyz nests it. */
    private static JsonObject findSandbox(JsonObject json) {
        for (String key : json.fieldNames()) {
            if (json.getValue(key) instanceof JsonObject nested) {
                if (key.equals("sandbox") && nested.containsKey("running")) {
                    return nested;
                }
                JsonObject deeper = findSandbox(nested);
                if (deeper != null) {
                    return deeper;
                }
            }
        }
        return null;
    }

    /** Sandbox nodes in the gateway's view of the cluster; -1 when it cannot be read. */
    int sandboxMembers() {
        try {
            JsonArray members = cluster.cluster(gateway).getJsonArray("members");
            return (int) members.stream().map(JsonObject.class::cast)
                    .filter(m -> m.getJsonArray("roles").contains("sandbox")).count();
        } catch (Exception e) {
            return -1;
        }
    }
}
