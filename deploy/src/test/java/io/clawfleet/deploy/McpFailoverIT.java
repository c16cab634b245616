package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot's MCP session outlives its gateway (issue 16): separate JVMs, two gateways and a worker. A client talks to the
 * bot through gateway 1, which is killed (SIGKILL) while a reply is streaming to it; the client resumes the stream on
 * gateway 2 with Last-Event-ID and the same session, gets the rest of the reply and the result once, and goes on
 * talking in the same session.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class McpFailoverIT {

    private TestCluster fixture;
    private ClusterHarness cluster;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        // A slow model: the reply is still on its way when the gateway dies.
        fixture = new TestCluster(3_000, 3, harness -> { }, "gateway-1:gateway", "gateway-2:gateway", "worker-1:worker");
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpRequest.Builder request(String gateway, String session) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(cluster.node(gateway).url() + "/mcp/v1/bots/main"))
                .timeout(Duration.ofSeconds(90)).header("authorization", "Bearer " + ClusterHarness.API_KEY)
                .header("content-type", "application/json").header("accept", "application/json, text/event-stream");
        return session == null ? builder : builder.header("mcp-session-id", session);
    }

    private HttpResponse<String> post(String gateway, String session, JsonObject message) throws Exception {
        return http.send(request(gateway, session).POST(HttpRequest.BodyPublishers.ofString(message.encode())).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject sendMessage(Object id, String text) {
        return new JsonObject().put("jsonrpc", "2.0").put("id", id).put("method", "tools/call").put("params", new JsonObject()
                .put("name", "send_message").put("_meta", new JsonObject().put("progressToken", "tok-" + id))
                .put("arguments", new JsonObject().put("text", text)));
    }

    /** SSE events as [id, data] pairs, read until the stream ends or breaks. */
    private static List<String[]> events(InputStream in, List<String[]> into) {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String id = null;
            StringBuilder data = null;
            String line;
            while ((line = reader.readLine()) != null) {
                if (line.isEmpty()) {
                    if (data != null) {
                        synchronized (into) {
                            into.add(new String[] {id, data.toString()});
                        }
                    }
                    id = null;
                    data = null;
                } else if (line.startsWith("id:")) {
                    id = line.substring(3).strip();
                } else if (line.startsWith("data:")) {
                    data = new StringBuilder(line.substring(5).strip());
                }
            }
        } catch (Exception broken) {
            // the gateway died: what was read is in the list
        }
        return into;
    }

    @Test
    void aSessionAndItsStreamGoOnOnAnotherGatewayWhenTheirsDies() throws Exception {
        HttpResponse<String> init = post("gateway-1", null, new JsonObject().put("jsonrpc", "2.0").put("id", 0)
                .put("method", "initialize").put("params", new JsonObject().put("protocolVersion", "2025-11-25")
                        .put("capabilities", new JsonObject()).put("clientInfo", new JsonObject().put("name", "it").put("version", "1"))));
        assertThat(init.statusCode()).as(init.body()).isEqualTo(200);
        String session = init.headers().firstValue("mcp-session-id").orElseThrow();

        // a reply streaming through gateway 1 when it is killed
        HttpResponse<InputStream> streaming = http.send(request("gateway-1", session)
                .POST(HttpRequest.BodyPublishers.ofString(sendMessage(1, "remember the milk").encode())).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertThat(streaming.statusCode()).isEqualTo(200);
        List<String[]> seen = new ArrayList<>();
        CompletableFuture<List<String[]>> reading = CompletableFuture.supplyAsync(() -> events(streaming.body(), seen));
        Await.until("the stream's first event", Duration.ofSeconds(30), () -> {
            synchronized (seen) {
                return !seen.isEmpty();
            }
        });
        cluster.kill("gateway-1");
        List<String[]> before = reading.get(30, TimeUnit.SECONDS);
        assertThat(before).as("the result had not come before the kill").noneMatch(e -> e[0] != null && e[0].endsWith(":end"));
        String lastId = null;
        for (String[] event : before) {
            if (event[0] != null) {
                lastId = event[0];
            }
        }
        assertThat(lastId).isNotNull();

        // the client resumes on gateway 2: the rest of the reply, then the result, once
        HttpResponse<InputStream> resumed = http.send(request("gateway-2", session).header("last-event-id", lastId).GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertThat(resumed.statusCode()).isEqualTo(200);
        List<String[]> after = events(resumed.body(), new ArrayList<>());
        String[] last = after.get(after.size() - 1);
        assertThat(last[0]).endsWith(":end");
        JsonObject result = new JsonObject(last[1]);
        assertThat(result.getInteger("id")).isEqualTo(1);
        String reply = result.getJsonObject("result").getJsonArray("content").getJsonObject(0).getString("text");
        assertThat(reply).isNotBlank();
        assertThat(result.getJsonObject("result").getBoolean("isError")).isFalse();
        StringBuilder streamed = new StringBuilder();
        for (String[] event : before) {
            if (!event[1].isEmpty() && new JsonObject(event[1]).getString("method", "").equals("notifications/progress")) {
                streamed.append(new JsonObject(event[1]).getJsonObject("params").getString("message"));
            }
        }
        for (String[] event : after.subList(0, after.size() - 1)) {
            streamed.append(new JsonObject(event[1]).getJsonObject("params").getString("message"));
        }
        assertThat(streamed.toString()).as("the pieces before and after, nothing twice").isEqualTo(reply);

        // the session goes on on gateway 2: the chat has the message once, and the bot answers the next
        HttpResponse<String> history = post("gateway-2", session, new JsonObject().put("jsonrpc", "2.0").put("id", 2)
                .put("method", "tools/call").put("params", new JsonObject().put("name", "read_history")
                        .put("arguments", new JsonObject())));
        String lines = new JsonObject(history.body()).getJsonObject("result").getJsonArray("content").getJsonObject(0).getString("text");
        assertThat(lines.split("user: remember the milk", -1)).as("the message once: " + lines).hasSize(2);
        HttpResponse<String> next = http.send(request("gateway-2", session).setHeader("accept", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(sendMessage(3, "and the bread").encode())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(new JsonObject(next.body()).getJsonObject("result").getBoolean("isError")).as(next.body()).isFalse();
    }
}
