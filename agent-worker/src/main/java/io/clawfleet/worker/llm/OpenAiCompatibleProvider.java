package io.clawfleet.worker.llm;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Any OpenAI-compatible Chat Completions endpoint (OpenAI, OpenRouter, DeepSeek, Groq, vLLM, Ollama,
 * LM Studio, ...) over the Vert.x HTTP client. Each attempt has a timeout; 429, 5xx and connection
 * failures are retried with exponential backoff and full jitter, honouring Retry-After. With a sink
 * the answer is streamed ({@code stream: true}) and retried only until its first delta.
 */
public final class OpenAiCompatibleProvider implements LlmProvider {

    private final LlmEndpoint endpoint;
    private final LlmTransport transport;
    private final URI completions;
    private final Map<String, String> headers;
    private final EncodedParts encoded = EncodedParts.SHARED;

    public OpenAiCompatibleProvider(Vertx vertx, LlmEndpoint endpoint) {
        this(vertx, endpoint, null);
    }

    /** @param egress where the endpoint may lead (a tenant's); null for the operator's */
    public OpenAiCompatibleProvider(Vertx vertx, LlmEndpoint endpoint, io.clawfleet.shared.security.EgressGuard egress) {
        this.endpoint = Objects.requireNonNull(endpoint);
        URI base = endpoint.baseUri();
        this.completions = base.resolve("chat/completions");
        this.transport = new LlmTransport(vertx, base, endpoint.name(), endpoint.apiKey(), endpoint.timeoutMs(),
                endpoint.maxRetries(), endpoint.retryBackoffMs(), egress);
        String key = endpoint.apiKey();
        this.headers = key == null || key.isBlank() ? Map.of() : Map.of("authorization", "Bearer " + key);
    }

    public OpenAiCompatibleProvider(Vertx vertx, String baseUrl, String apiKey, String model, long timeoutMs,
                                    int maxRetries, long backoffMs) {
        this(vertx, new LlmEndpoint("openai-compatible(" + URI.create(baseUrl).getHost() + ")", baseUrl, apiKey, model,
                timeoutMs, maxRetries, backoffMs, 0));
    }

    @Override
    public String name() {
        return endpoint.name();
    }

    @Override
    public Future<LlmResponse> complete(LlmRequest request, StreamSink sink) {
        return transport.callWith(completions, headers, () -> requestBody(request, sink != null), OpenAiCompatibleProvider::parse, OpenAiStreamAssembler::new, sink);
    }

    /**
     * The request's bytes: those of {@link #requestJson} (a test holds them equal), with what a bot sends on every
     * call (its own system text, first, and its tools) encoded once and spliced in. That part is more than half of
     * a request, and encoding the request was 5-6 % of a busy node's samples (docs/PERFORMANCE.md).
     */
    public Buffer requestBody(LlmRequest request, boolean stream) {
        Buffer body = Buffer.buffer(8192).appendString("{\"model\":")
                .appendString(Json.encode(request.model() == null ? endpoint.model() : request.model()))
                .appendString(",\"messages\":[");
        List<ChatMessage> messages = request.messages();
        for (int i = 0; i < messages.size(); i++) {
            if (i > 0) {
                body.appendByte((byte) ',');
            }
            ChatMessage message = messages.get(i);
            // Only the first: the bot's text is the same string call after call; the chat's own system text is not.
            if (i == 0 && constant(message)) {
                body.appendBytes(encoded.text("openai.message", message.content(), () -> messageJson(message).toBuffer().getBytes()));
            } else {
                body.appendBuffer(messageJson(message).toBuffer());
            }
        }
        body.appendByte((byte) ']');
        if (stream) {
            body.appendString(",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
        }
        if (!request.tools().isEmpty()) {
            body.appendString(",\"tools\":").appendBytes(encoded.tools("openai.tools", request.tools(),
                    () -> toolsJson(request.tools()).toBuffer().getBytes()));
        }
        return body.appendByte((byte) '}');
    }

    private static boolean constant(ChatMessage message) {
        return "system".equals(message.role()) && message.content() != null && message.toolCalls().isEmpty()
                && message.toolCallId() == null;
    }

    /** The request as a JSON object, as {@link #requestBody} encodes it. */
    public JsonObject requestJson(LlmRequest request, boolean stream) {
        JsonArray messages = new JsonArray();
        for (ChatMessage message : request.messages()) {
            messages.add(messageJson(message));
        }
        JsonObject body = new JsonObject()
                .put("model", request.model() == null ? endpoint.model() : request.model())
                .put("messages", messages);
        if (stream) {
            body.put("stream", true).put("stream_options", new JsonObject().put("include_usage", true));
        }
        if (!request.tools().isEmpty()) {
            body.put("tools", toolsJson(request.tools()));
        }
        return body;
    }

    private static JsonArray toolsJson(List<ToolDefinition> definitions) {
        JsonArray tools = new JsonArray();
        for (ToolDefinition tool : definitions) {
            tools.add(new JsonObject().put("type", "function").put("function", new JsonObject()
                    .put("name", tool.name()).put("description", tool.description()).put("parameters", tool.parameters())));
        }
        return tools;
    }

    private static JsonObject messageJson(ChatMessage message) {
        JsonObject json = new JsonObject().put("role", message.role());
        if (message.content() != null || message.toolCalls().isEmpty()) {
            json.put("content", message.content() == null ? "" : message.content());
        } else {
            json.putNull("content");
        }
        if (!message.toolCalls().isEmpty()) {
            JsonArray calls = new JsonArray();
            for (ToolCallRequest call : message.toolCalls()) {
                calls.add(new JsonObject().put("id", call.id()).put("type", "function")
                        .put("function", new JsonObject().put("name", call.name()).put("arguments", call.arguments())));
            }
            json.put("tool_calls", calls);
        }
        if (message.toolCallId() != null) {
            json.put("tool_call_id", message.toolCallId());
        }
        if (message.name() != null && "tool".equals(message.role())) {
            json.put("name", message.name());
        }
        return json;
    }

    static LlmResponse parse(Buffer payload) {
        JsonObject json;
        try {
            json = payload.toJsonObject();
        } catch (RuntimeException e) {
            throw new LlmException("model endpoint answered with invalid JSON: " + LlmTransport.snippet(payload.toString()), 200, true, -1, e);
        }
        JsonArray choices = json.getJsonArray("choices");
        if (choices == null || choices.isEmpty()) {
            throw new LlmException("model endpoint answered without choices: " + LlmTransport.snippet(json.encode()), 200, false, -1, null);
        }
        JsonObject choice = choices.getJsonObject(0);
        JsonObject message = choice.getJsonObject("message", new JsonObject());
        List<ToolCallRequest> calls = new ArrayList<>();
        JsonArray toolCalls = message.getJsonArray("tool_calls");
        if (toolCalls != null) {
            for (int i = 0; i < toolCalls.size(); i++) {
                JsonObject call = toolCalls.getJsonObject(i);
                JsonObject function = call.getJsonObject("function", new JsonObject());
                calls.add(new ToolCallRequest(call.getString("id", "call_" + i), function.getString("name"),
                        function.getString("arguments", "{}")));
            }
        }
        JsonObject usage = json.getJsonObject("usage", new JsonObject());
        return new LlmResponse(message.getString("content"), calls, choice.getString("finish_reason", "stop"),
                json.getString("model"), usage.getInteger("prompt_tokens", 0), usage.getInteger("completion_tokens", 0))
                .withCachedTokens(cachedTokens(usage));
    }

    @Override
    public Future<Void> close() {
        return transport.close();
    }

    /** Of the prompt's tokens, those the endpoint read from its cache ({@code prompt_tokens_details.cached_tokens}). */
    static int cachedTokens(JsonObject usage) {
        return usage.getValue("prompt_tokens_details") instanceof JsonObject details ? details.getInteger("cached_tokens", 0) : 0;
    }
}
