package io.clawfleet.shared.mockllm;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A deterministic OpenAI-compatible model for tests, demos and benchmarks. It never pretends to
 * think: every answer is a pure function of the request.
 *
 * <ul>
 *   <li>The reply to a user message is {@code echo: <message>}.</li>
 *   <li>A user message containing {@code call:<tool> <json-object>} gets that tool call back
 *       (scripted tool calls); after the tool result, the reply is {@code tool <name> said: <result>}.</li>
 *   <li>{@code fail:<status>} in a user message answers with that HTTP status (to test retries).</li>
 *   <li>{@code stream: true} answers with SSE chunks, one per word.</li>
 * </ul>
 */
public final class MockLlmServer {

    private static final Pattern CALL = Pattern.compile("call:([A-Za-z0-9_\\-]+)\\s+(\\{.*})", Pattern.DOTALL);
    private static final Pattern FAIL = Pattern.compile("fail:(\\d{3})");

    private final Vertx vertx;
    private final long latencyMs;
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong callIds = new AtomicLong();
    private final AtomicReference<String> lastRequest = new AtomicReference<>();
    private volatile int outageStatus;
    private HttpServer server;

    public MockLlmServer(Vertx vertx, long latencyMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.latencyMs = latencyMs;
    }

    public Future<Integer> start(String host, int port) {
        return vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port).setTcpNoDelay(true))
                .requestHandler(this::handle)
                .listen()
                .map(s -> {
                    server = s;
                    return s.actualPort();
                });
    }

    public Future<Void> stop() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    public int port() {
        return server.actualPort();
    }

    /** Chat completion requests served so far. */
    public long requestCount() {
        return requests.get();
    }

    /**
     * Simulates an outage: while set to an HTTP status, every chat request is answered with it;
     * 0 ends the outage.
     */
    public void outage(int status) {
        this.outageStatus = status;
    }

    /** The body of the last chat completion request, as received. */
    public String lastRequestBody() {
        return lastRequest.get();
    }

    private void handle(HttpServerRequest request) {
        String path = request.path();
        if (request.method().name().equals("GET") && path.endsWith("/models")) {
            json(request.response(), 200, new JsonObject().put("object", "list").put("data",
                    new JsonArray().add(new JsonObject().put("id", "mock").put("object", "model").put("owned_by", "clawfleet"))));
            return;
        }
        if (!request.method().name().equals("POST") || !path.endsWith("/chat/completions")) {
            json(request.response(), 404, error("no route " + request.method() + " " + path));
            return;
        }
        request.body().onSuccess(body -> {
            requests.incrementAndGet();
            lastRequest.set(body.toString());
            if (outageStatus != 0) {
                json(request.response(), outageStatus, error("simulated outage"));
                return;
            }
            JsonObject json;
            try {
                json = body.toJsonObject();
            } catch (DecodeException e) {
                json(request.response(), 400, error("body is not JSON: " + e.getMessage()));
                return;
            }
            if (latencyMs > 0) {
                vertx.setTimer(latencyMs, id -> answer(request, json));
            } else {
                answer(request, json);
            }
        });
    }

    private void answer(HttpServerRequest request, JsonObject body) {
        JsonArray messages = body.getJsonArray("messages", new JsonArray());
        if (messages.isEmpty()) {
            json(request.response(), 400, error("messages must not be empty"));
            return;
        }
        JsonObject last = messages.getJsonObject(messages.size() - 1);
        String model = body.getString("model", "mock");
        JsonObject message;
        String finish = "stop";
        String content = textOf(last);
        if ("tool".equals(last.getString("role"))) {
            message = new JsonObject().put("role", "assistant")
                    .put("content", "tool " + last.getString("name", "?") + " said: " + content);
        } else {
            Matcher fail = FAIL.matcher(content);
            if (fail.find()) {
                json(request.response(), Integer.parseInt(fail.group(1)), error("scripted failure"));
                return;
            }
            Matcher call = CALL.matcher(content);
            if (call.find() && body.containsKey("tools")) {
                finish = "tool_calls";
                message = new JsonObject().put("role", "assistant").putNull("content").put("tool_calls", new JsonArray()
                        .add(new JsonObject().put("id", "call_" + callIds.incrementAndGet()).put("type", "function")
                                .put("function", new JsonObject().put("name", call.group(1)).put("arguments", call.group(2)))));
            } else {
                message = new JsonObject().put("role", "assistant").put("content", "echo: " + content);
            }
        }
        int promptChars = messages.encode().length();
        JsonObject usage = new JsonObject().put("prompt_tokens", promptChars / 4)
                .put("completion_tokens", Math.max(1, String.valueOf(message.getValue("content")).length() / 4));
        usage.put("total_tokens", usage.getInteger("prompt_tokens") + usage.getInteger("completion_tokens"));
        if (body.getBoolean("stream", false)) {
            stream(request.response(), model, message, finish, usage);
            return;
        }
        json(request.response(), 200, new JsonObject()
                .put("id", "chatcmpl-mock-" + requests.get())
                .put("object", "chat.completion")
                .put("created", System.currentTimeMillis() / 1000)
                .put("model", model)
                .put("choices", new JsonArray().add(new JsonObject().put("index", 0).put("message", message)
                        .put("finish_reason", finish)))
                .put("usage", usage));
    }

    private void stream(HttpServerResponse response, String model, JsonObject message, String finish, JsonObject usage) {
        response.setChunked(true).putHeader("content-type", "text/event-stream").putHeader("cache-control", "no-cache");
        String id = "chatcmpl-mock-" + requests.get();
        if (message.containsKey("tool_calls") && message.getValue("tool_calls") != null) {
            JsonArray calls = message.getJsonArray("tool_calls").copy();
            for (int i = 0; i < calls.size(); i++) {
                calls.getJsonObject(i).put("index", i);
            }
            response.write(chunk(id, model, new JsonObject().put("role", "assistant").put("tool_calls", calls), null, null));
        } else {
            String text = message.getString("content", "");
            String[] words = text.split("(?<= )");
            response.write(chunk(id, model, new JsonObject().put("role", "assistant").put("content", ""), null, null));
            for (String word : words) {
                response.write(chunk(id, model, new JsonObject().put("content", word), null, null));
            }
        }
        response.write(chunk(id, model, new JsonObject(), finish, usage));
        response.end("data: [DONE]\n\n");
    }

    private static String chunk(String id, String model, JsonObject delta, String finish, JsonObject usage) {
        JsonObject choice = new JsonObject().put("index", 0).put("delta", delta);
        if (finish != null) {
            choice.put("finish_reason", finish);
        } else {
            choice.putNull("finish_reason");
        }
        JsonObject event = new JsonObject().put("id", id).put("object", "chat.completion.chunk")
                .put("created", System.currentTimeMillis() / 1000).put("model", model)
                .put("choices", new JsonArray().add(choice));
        if (usage != null) {
            event.put("usage", usage);
        }
        return "data: " + event.encode() + "\n\n";
    }

    private static String textOf(JsonObject message) {
        Object content = message.getValue("content");
        if (content instanceof String text) {
            return text;
        }
        if (content instanceof JsonArray parts) {
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < parts.size(); i++) {
                JsonObject part = parts.getJsonObject(i);
                if ("text".equals(part.getString("type"))) {
                    out.append(part.getString("text"));
                }
            }
            return out.toString();
        }
        return "";
    }

    private static JsonObject error(String message) {
        return new JsonObject().put("error", new JsonObject().put("message", message).put("type", "mock_error"));
    }

    private static void json(HttpServerResponse response, int status, JsonObject body) {
        response.setStatusCode(status).putHeader("content-type", "application/json").end(Buffer.buffer(body.encode()));
    }
}
