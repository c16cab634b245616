package io.clawfleet.gateway;

import io.vertx.core.json.JsonObject;

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
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** A plain Streamable HTTP client of one bot's MCP endpoint, for tests: raw requests, SSE read event by event. */
final class McpTestClient {

    /** One SSE event: its id (may be null) and its data (may be empty). */
    record Event(String id, String data) {
        JsonObject json() {
            return new JsonObject(data);
        }
    }

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String url;
    private final String key;
    private final AtomicInteger ids = new AtomicInteger();
    String sessionId;

    McpTestClient(String base, String botId, String key) {
        this.url = base + "/mcp/v1/bots/" + botId;
        this.key = key;
    }

    String url() {
        return url;
    }

    /** initialize + notifications/initialized; returns the initialize result. */
    JsonObject initialize(String version) throws Exception {
        HttpResponse<String> response = post(new JsonObject().put("jsonrpc", "2.0").put("id", 0).put("method", "initialize")
                .put("params", new JsonObject().put("protocolVersion", version).put("capabilities", new JsonObject())
                        .put("clientInfo", new JsonObject().put("name", "test").put("version", "1"))), Map.of());
        if (response.statusCode() != 200) {
            throw new AssertionError("initialize: " + response.statusCode() + " " + response.body());
        }
        sessionId = response.headers().firstValue("mcp-session-id").orElseThrow();
        HttpResponse<String> initialized = post(new JsonObject().put("jsonrpc", "2.0").put("method", "notifications/initialized"),
                Map.of());
        if (initialized.statusCode() != 202) {
            throw new AssertionError("initialized: " + initialized.statusCode() + " " + initialized.body());
        }
        return new JsonObject(response.body()).getJsonObject("result");
    }

    /** A request answered as JSON; returns the whole JSON-RPC response. */
    JsonObject request(String method, JsonObject params) throws Exception {
        HttpResponse<String> response = post(new JsonObject().put("jsonrpc", "2.0").put("id", ids.incrementAndGet())
                .put("method", method).put("params", params), Map.of());
        if (response.statusCode() != 200) {
            throw new AssertionError(method + ": " + response.statusCode() + " " + response.body());
        }
        return new JsonObject(response.body());
    }

    /** The result of a request; fails on a JSON-RPC error. */
    JsonObject result(String method, JsonObject params) throws Exception {
        JsonObject response = request(method, params);
        if (response.containsKey("error")) {
            throw new AssertionError(method + ": " + response.encode());
        }
        return response.getJsonObject("result");
    }

    JsonObject callTool(String name, JsonObject args) throws Exception {
        return result("tools/call", new JsonObject().put("name", name).put("arguments", args));
    }

    static String text(JsonObject toolResult) {
        return toolResult.getJsonArray("content").getJsonObject(0).getString("text");
    }

    HttpResponse<String> post(JsonObject message, Map<String, String> headers) throws Exception {
        return send("POST", message.encode(), "application/json, text/event-stream".equals(headers.get("accept"))
                ? headers : withDefaults(headers, "application/json"), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> postRaw(String body, Map<String, String> headers) throws Exception {
        return send("POST", body, withDefaults(headers, "application/json, text/event-stream"), HttpResponse.BodyHandlers.ofString());
    }

    /** A POST answered with SSE: every event until the stream ends. */
    List<Event> postStream(JsonObject message) throws Exception {
        HttpResponse<InputStream> response = send("POST", message.encode(),
                withDefaults(Map.of(), "application/json, text/event-stream"), HttpResponse.BodyHandlers.ofInputStream());
        if (response.statusCode() != 200 || !response.headers().firstValue("content-type").orElse("").startsWith("text/event-stream")) {
            throw new AssertionError("expected an SSE stream, got " + response.statusCode() + " "
                    + new String(response.body().readAllBytes(), StandardCharsets.UTF_8));
        }
        return events(response.body(), Integer.MAX_VALUE);
    }

    /** GET: a stream with {@code lastEventId} (may be null); reads {@code max} events or until it ends. */
    HttpResponse<InputStream> openGet(String lastEventId) throws Exception {
        Map<String, String> headers = new java.util.HashMap<>(Map.of("accept", "text/event-stream"));
        if (lastEventId != null) {
            headers.put("last-event-id", lastEventId);
        }
        return send("GET", null, withDefaults(headers, "text/event-stream"), HttpResponse.BodyHandlers.ofInputStream());
    }

    HttpResponse<String> delete() throws Exception {
        return send("DELETE", null, withDefaults(Map.of(), "application/json"), HttpResponse.BodyHandlers.ofString());
    }

    int nextId() {
        return ids.incrementAndGet();
    }

    private Map<String, String> withDefaults(Map<String, String> headers, String accept) {
        Map<String, String> all = new java.util.HashMap<>();
        all.put("accept", accept);
        all.put("content-type", "application/json");
        if (key != null) {
            all.put("authorization", "Bearer " + key);
        }
        if (sessionId != null) {
            all.put("mcp-session-id", sessionId);
        }
        all.putAll(headers);
        all.values().removeIf(v -> v == null || v.isEmpty());
        return all;
    }

    private <T> HttpResponse<T> send(String method, String body, Map<String, String> headers, HttpResponse.BodyHandler<T> handler)
            throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        headers.forEach(request::header);
        return http.send(request.build(), handler);
    }

    /** Reads SSE events from a stream, at most {@code max}. */
    static List<Event> events(InputStream in, int max) throws Exception {
        List<Event> events = new ArrayList<>();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String id = null;
            StringBuilder data = null;
            String line;
            while (events.size() < max && (line = reader.readLine()) != null) {
                if (line.isEmpty()) {
                    if (data != null) {
                        events.add(new Event(id, data.toString()));
                    }
                    id = null;
                    data = null;
                } else if (line.startsWith("id:")) {
                    id = line.substring(3).strip();
                } else if (line.startsWith("data:")) {
                    String piece = line.substring(5).strip();
                    data = data == null ? new StringBuilder(piece) : data.append('\n').append(piece);
                }
            }
        }
        return events;
    }
}
