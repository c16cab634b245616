package io.clawfleet.testkit.mockllm;

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

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * A deterministic model for tests, demos and benchmarks, speaking both the OpenAI Chat Completions
 * API ({@code POST .../chat/completions}) and the Anthropic Messages API ({@code POST /v1/messages}).
 * It never pretends to think: every answer is a pure function of the request.
 *
 * <ul>
 *   <li>The reply to a user message is {@code echo: <message>}.</li>
 *   <li>A user message containing {@code call:<tool> <json-object>} (one or more) gets those tool
 *       calls back when the request offers tools; after the tool results, the reply is
 *       {@code tool <name> said: <result>}, one line per result.</li>
 *   <li>{@code fail:<status>} in a user message answers with that HTTP status (to test retries).</li>
 *   <li>{@code text-tools} in a user message plays a model without native tool calling: the calls
 *       come as {@code <tool_call>} tags in the text ({@code text-tools:fenced}: fenced JSON blocks),
 *       results are expected back as {@code <tool_result name="...">} text in a user message, and
 *       a request with {@code role: tool} messages or {@code tool_calls} is refused with 400.</li>
 *   <li>{@code stream: true} answers with SSE in the API's own format: text one word per event,
 *       tool-call arguments in small pieces.</li>
 * </ul>
 */
public final class MockLlmServer {

    private final Vertx vertx;
    private volatile long latencyMs;
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicLong peakInFlight = new AtomicLong();
    private final AtomicLong requestBytes = new AtomicLong();
    private final AtomicLong largestRequest = new AtomicLong();
    private final AtomicLong callIds = new AtomicLong();
    private final AtomicLong promptTokens = new AtomicLong();
    private final AtomicLong cachedTokens = new AtomicLong();
    private volatile PromptCache promptCache;
    private final AtomicReference<String> lastRequest = new AtomicReference<>();
    private static final int RECENT = 32;
    private final java.util.ArrayDeque<String> recent = new java.util.ArrayDeque<>(RECENT);
    private final AtomicReference<String> lastCredential = new AtomicReference<>();
    private final AnthropicMock anthropic = new AnthropicMock(callIds::incrementAndGet);
    private volatile int outageStatus;
    private volatile Function<JsonObject, Future<Void>> beforeAnswer = body -> Future.succeededFuture();
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

    /** Chat requests (either API) served so far. */
    public long requestCount() {
        return requests.get();
    }

    /** Bytes of all chat request bodies received so far (benchmarks report the mean prompt size of a window). */
    public long requestBytes() {
        return requestBytes.get();
    }

    /** The largest chat request body received since the last {@link #resetLargestRequest}, in bytes. */
    public long largestRequest() {
        return largestRequest.get();
    }

    public void resetLargestRequest() {
        largestRequest.set(0);
    }

    /**
     * Answers OpenAI requests as a provider with automatic prompt caching does ({@link PromptCache}): the prompt's
     * tokens count the tools too, and {@code usage.prompt_tokens_details.cached_tokens} says how many of them the
     * longest prefix seen before covers. Off by default, so that tests see the same usage for the same request
     * (caching on the Anthropic API is always on: it needs a breakpoint the request names, which tests control).
     */
    public MockLlmServer withPromptCache() {
        this.promptCache = new PromptCache();
        return this;
    }

    /** Prompt tokens of the OpenAI requests answered so far (tools included with {@link #withPromptCache}). */
    public long promptTokens() {
        return promptTokens.get();
    }

    /** Of {@link #promptTokens}, those served from the emulated prompt cache. */
    public long cachedTokens() {
        return cachedTokens.get();
    }

    /** Most chat requests it has been answering at once (benchmarks count conversations in flight). */
    public long peakInFlight() {
        return peakInFlight.get();
    }

    /** Starts counting {@link #peakInFlight} afresh from the calls open now. */
    public void resetPeakInFlight() {
        peakInFlight.set(inFlight.get());
    }

    /** The delay of every call answered from now on (a warm-up at full speed, then a slow model). */
    public void latencyMs(long latencyMs) {
        if (latencyMs < 0) {
            throw new IllegalArgumentException("latencyMs must be >= 0: " + latencyMs);
        }
        this.latencyMs = latencyMs;
    }

    /**
     * Simulates an outage: while set to an HTTP status, every chat request is answered with it;
     * 0 ends the outage.
     */
    public void outage(int status) {
        this.outageStatus = status;
    }

    /**
     * For tests that must act while a model call is in flight (look at a turn's ledger, write a file
     * a consolidation read): every chat request is answered only once the future {@code hook}
     * returns for its body completes (failed or not).
     */
    public void beforeAnswer(Function<JsonObject, Future<Void>> hook) {
        this.beforeAnswer = Objects.requireNonNull(hook);
    }

    /**
     * The credential the last chat request carried: its {@code Authorization} header (OpenAI) or {@code x-api-key}
     * (Anthropic), as received; null when it had none.
     */
    public String lastCredential() {
        return lastCredential.get();
    }

    /** The body of the last chat request (either API), as received. */
    public String lastRequestBody() {
        return lastRequest.get();
    }

    /**
     * The body of the last of the {@value #RECENT} latest chat requests that {@code test} accepts, or null: a test that
     * asks about one turn's request picks it out from the compactions and other chats' turns that may come after it.
     */
    public String lastRequestBody(java.util.function.Predicate<String> test) {
        synchronized (recent) {
            for (java.util.Iterator<String> bodies = recent.descendingIterator(); bodies.hasNext(); ) {
                String body = bodies.next();
                if (test.test(body)) {
                    return body;
                }
            }
        }
        return null;
    }

    private void handle(HttpServerRequest request) {
        String path = request.path();
        if (request.method().name().equals("GET") && path.endsWith("/models")) {
            json(request.response(), 200, new JsonObject().put("object", "list").put("data",
                    new JsonArray().add(new JsonObject().put("id", "mock").put("object", "model").put("owned_by", "clawfleet"))));
            return;
        }
        boolean messagesApi = path.endsWith("/v1/messages");
        if (!request.method().name().equals("POST") || !(messagesApi || path.endsWith("/chat/completions"))) {
            json(request.response(), 404, error("no route " + request.method() + " " + path));
            return;
        }
        request.body().onSuccess(body -> {
            long number = requests.incrementAndGet();
            requestBytes.addAndGet(body.length());
            largestRequest.accumulateAndGet(body.length(), Math::max);
            peakInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            request.response().endHandler(v -> inFlight.decrementAndGet());
            String text = body.toString();
            lastRequest.set(text);
            synchronized (recent) {
                if (recent.size() == RECENT) {
                    recent.removeFirst();
                }
                recent.addLast(text);
            }
            String credential = request.getHeader("authorization");
            lastCredential.set(credential != null ? credential : request.getHeader("x-api-key"));
            if (outageStatus != 0) {
                if (messagesApi) {
                    AnthropicMock.error(request.response(), outageStatus, "api_error", "simulated outage");
                } else {
                    json(request.response(), outageStatus, error("simulated outage"));
                }
                return;
            }
            JsonObject json;
            try {
                json = body.toJsonObject();
            } catch (DecodeException e) {
                json(request.response(), 400, error("body is not JSON: " + e.getMessage()));
                return;
            }
            Runnable answer = messagesApi ? () -> anthropic.answer(request, json, number) : () -> answer(request, json);
            Runnable gated = () -> beforeAnswer.apply(json).onComplete(done -> answer.run());
            if (latencyMs > 0) {
                vertx.setTimer(latencyMs, id -> gated.run());
            } else {
                gated.run();
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
        // The user's message is the last user message that is not tool results sent back as text.
        int lastUser = messages.size() - 1;
        while (lastUser > 0 && !("user".equals(messages.getJsonObject(lastUser).getString("role"))
                && !MockScript.isToolResults(textOf(messages.getJsonObject(lastUser))))) {
            lastUser--;
        }
        int rounds = 0;
        boolean nativeToolMessages = false;
        for (int i = 0; i < messages.size(); i++) {
            JsonObject m = messages.getJsonObject(i);
            boolean nativeCalls = "assistant".equals(m.getString("role")) && m.getValue("tool_calls") instanceof JsonArray;
            nativeToolMessages |= nativeCalls || "tool".equals(m.getString("role"));
            if (i > lastUser && (nativeCalls || "user".equals(m.getString("role")))) {
                rounds++;
            }
        }
        String userText = textOf(messages.getJsonObject(lastUser));
        boolean textTools = userText.contains(MockScript.TEXT_TOOLS);
        if (textTools && nativeToolMessages) {
            json(request.response(), 400, error("this model does not support tool messages (role tool, tool_calls)"));
            return;
        }
        List<String> toolNames = new ArrayList<>();
        body.getJsonArray("tools", new JsonArray()).forEach(tool -> toolNames.add(
                ((JsonObject) tool).getJsonObject("function", new JsonObject()).getString("name")));
        String results = "tool".equals(last.getString("role")) ? toolResults(messages)
                : "user".equals(last.getString("role")) && MockScript.isToolResults(textOf(last))
                ? MockScript.toolResultsOf(textOf(last)) : "";
        switch (MockScript.decide(userText, body.containsKey("tools"), toolNames, rounds, results)) {
            case MockScript.Fail fail -> {
                json(request.response(), fail.status(), error("scripted failure"));
                return;
            }
            case MockScript.Calls calls when textTools -> message = new JsonObject().put("role", "assistant")
                    .put("content", MockScript.asText(calls.calls(), userText.contains(MockScript.TEXT_TOOLS_FENCED)));
            case MockScript.Calls calls -> {
                finish = "tool_calls";
                JsonArray toolCalls = new JsonArray();
                for (MockScript.Call call : calls.calls()) {
                    toolCalls.add(new JsonObject().put("id", "call_" + callIds.incrementAndGet()).put("type", "function")
                            .put("function", new JsonObject().put("name", call.name()).put("arguments", call.arguments())));
                }
                message = new JsonObject().put("role", "assistant").putNull("content").put("tool_calls", toolCalls);
            }
            case MockScript.Text reply -> message = new JsonObject().put("role", "assistant").put("content", reply.text());
        }
        PromptCache cache = promptCache;
        String prompt = cache == null ? messages.encode() : body.getJsonArray("tools", new JsonArray()).encode() + messages.encode();
        int cached = cache == null ? 0 : cache.cachedChars(prompt) / 4;
        JsonObject usage = new JsonObject().put("prompt_tokens", prompt.length() / 4)
                .put("completion_tokens", Math.max(1, String.valueOf(message.getValue("content")).length() / 4));
        usage.put("total_tokens", usage.getInteger("prompt_tokens") + usage.getInteger("completion_tokens"));
        if (cache != null) {
            usage.put("prompt_tokens_details", new JsonObject().put("cached_tokens", cached));
        }
        promptTokens.addAndGet(prompt.length() / 4);
        cachedTokens.addAndGet(cached);
        if (body.getBoolean("stream", false)) {
            boolean includeUsage = body.getJsonObject("stream_options", new JsonObject()).getBoolean("include_usage", false);
            stream(request.response(), model, message, finish, includeUsage ? usage : null);
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

    /** Usage, when asked for with {@code stream_options.include_usage}, comes last in a chunk without choices. */
    private void stream(HttpServerResponse response, String model, JsonObject message, String finish, JsonObject usage) {
        response.setChunked(true).putHeader("content-type", "text/event-stream").putHeader("cache-control", "no-cache");
        String id = "chatcmpl-mock-" + requests.get();
        if (message.getValue("tool_calls") instanceof JsonArray calls) {
            // As real servers do: id and name first, then the arguments in small pieces.
            for (int i = 0; i < calls.size(); i++) {
                JsonObject call = calls.getJsonObject(i);
                JsonObject function = call.getJsonObject("function");
                response.write(chunk(id, model, new JsonObject().put("role", "assistant").put("tool_calls", new JsonArray()
                        .add(new JsonObject().put("index", i).put("id", call.getString("id")).put("type", "function")
                                .put("function", new JsonObject().put("name", function.getString("name")).put("arguments", "")))),
                        null, null));
                for (String piece : MockScript.pieces(function.getString("arguments"), 7)) {
                    response.write(chunk(id, model, new JsonObject().put("tool_calls", new JsonArray().add(new JsonObject()
                            .put("index", i).put("function", new JsonObject().put("arguments", piece)))), null, null));
                }
            }
        } else {
            String text = message.getString("content", "");
            String[] words = text.split("(?<= )");
            response.write(chunk(id, model, new JsonObject().put("role", "assistant").put("content", ""), null, null));
            for (String word : words) {
                response.write(chunk(id, model, new JsonObject().put("content", word), null, null));
            }
        }
        response.write(chunk(id, model, new JsonObject(), finish, null));
        if (usage != null) {
            response.write("data: " + new JsonObject().put("id", id).put("object", "chat.completion.chunk")
                    .put("created", System.currentTimeMillis() / 1000).put("model", model)
                    .put("choices", new JsonArray()).put("usage", usage).encode() + "\n\n");
        }
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

    /** One line per tool message at the end of the conversation (the results of one round of calls). */
    private static String toolResults(JsonArray messages) {
        java.util.ArrayDeque<String> lines = new java.util.ArrayDeque<>();
        for (int i = messages.size() - 1; i >= 0 && "tool".equals(messages.getJsonObject(i).getString("role")); i--) {
            JsonObject tool = messages.getJsonObject(i);
            lines.addFirst("tool " + tool.getString("name", "?") + " said: " + textOf(tool));
        }
        return String.join("\n", lines);
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
