package io.clawfleet.worker.llm;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Anthropic's native Messages API ({@code POST {baseUrl}/v1/messages}), translated to and from the
 * OpenAI-shaped {@link LlmRequest} and {@link LlmResponse}: system messages become the top-level
 * {@code system}, assistant tool calls {@code tool_use} blocks, tool messages {@code tool_result}
 * blocks of a user message. Retries, timeouts and streaming behave as in
 * {@link OpenAiCompatibleProvider} (529 "overloaded" is retried like any 5xx).
 */
public final class AnthropicProvider implements LlmProvider {

    static final String API_VERSION = "2023-06-01";
    /** Anthropic wants the first message from the user; history cut to a window may start with the assistant. */
    static final String OMITTED = "(earlier messages omitted)";

    private final LlmEndpoint endpoint;
    private final LlmTransport transport;
    private final URI messagesUri;
    private final Map<String, String> headers;
    private final EncodedParts encoded = EncodedParts.SHARED;

    public AnthropicProvider(Vertx vertx, LlmEndpoint endpoint) {
        this(vertx, endpoint, null);
    }

    /** @param egress where the endpoint may lead (a tenant's); null for the operator's */
    public AnthropicProvider(Vertx vertx, LlmEndpoint endpoint, io.clawfleet.shared.security.EgressGuard egress) {
        this.endpoint = Objects.requireNonNull(endpoint);
        URI base = endpoint.baseUri();
        // Accept both https://api.anthropic.com and https://api.anthropic.com/v1 as the base URL.
        this.messagesUri = base.resolve(base.getPath().endsWith("/v1/") ? "messages" : "v1/messages");
        this.transport = new LlmTransport(vertx, base, endpoint.name(), endpoint.apiKey(), endpoint.timeoutMs(),
                endpoint.maxRetries(), endpoint.retryBackoffMs(), egress);
        Map<String, String> h = new LinkedHashMap<>();
        h.put("anthropic-version", API_VERSION);
        if (endpoint.apiKey() != null && !endpoint.apiKey().isBlank()) {
            h.put("x-api-key", endpoint.apiKey());
        }
        this.headers = Map.copyOf(h);
    }

    @Override
    public String name() {
        return endpoint.name();
    }

    @Override
    public Future<LlmResponse> complete(LlmRequest request, StreamSink sink) {
        return transport.callWith(messagesUri, headers, () -> requestBody(request, sink != null), AnthropicProvider::parse, AnthropicStreamAssembler::new, sink);
    }

    /**
     * The request's bytes: those of {@link #requestJson} (a test holds them equal), with the bot's own system block
     * (the first of several) and the tools encoded once and spliced in, as {@link OpenAiCompatibleProvider} does.
     */
    Buffer requestBody(LlmRequest request, boolean stream) {
        List<String> system = new ArrayList<>();
        JsonArray messages = messages(request.messages(), system);
        Buffer body = Buffer.buffer(8192).appendString("{\"model\":")
                .appendString(Json.encode(request.model() == null ? endpoint.model() : request.model()))
                .appendString(",\"max_tokens\":").appendString(Integer.toString(maxTokens()))
                .appendString(",\"messages\":").appendBuffer(messages.toBuffer());
        if (!system.isEmpty()) {
            body.appendString(",\"system\":[");
            if (system.size() > 1) {
                // the cache breakpoint's block: the bot's text, the same call after call
                body.appendBytes(encoded.text("anthropic.system", system.get(0), () -> system(system.subList(0, 2))
                        .getJsonObject(0).toBuffer().getBytes()));
                for (String text : system.subList(1, system.size())) {
                    body.appendByte((byte) ',').appendBuffer(textBlock(text).toBuffer());
                }
            } else {
                body.appendBuffer(textBlock(system.get(0)).toBuffer());
            }
            body.appendByte((byte) ']');
        }
        if (!request.tools().isEmpty()) {
            body.appendString(",\"tools\":").appendBytes(encoded.tools("anthropic.tools", request.tools(),
                    () -> tools(request.tools()).toBuffer().getBytes()));
        }
        if (stream) {
            body.appendString(",\"stream\":true");
        }
        return body.appendByte((byte) '}');
    }

    private int maxTokens() {
        return endpoint.maxTokens() > 0 ? endpoint.maxTokens() : 4096;
    }

    JsonObject requestJson(LlmRequest request, boolean stream) {
        List<String> system = new ArrayList<>();
        JsonObject body = new JsonObject()
                .put("model", request.model() == null ? endpoint.model() : request.model())
                .put("max_tokens", maxTokens())
                .put("messages", messages(request.messages(), system));
        if (!system.isEmpty()) {
            body.put("system", system(system));
        }
        if (!request.tools().isEmpty()) {
            body.put("tools", tools(request.tools()));
        }
        if (stream) {
            body.put("stream", true);
        }
        return body;
    }

    /**
     * The system texts as blocks. Of several, the first (the bot's part, the same for every chat of the bot: see
     * ContextBuilder) carries a cache breakpoint, so that Anthropic serves the tools and that block from its prompt
     * cache (read at a tenth of the input price; written at 1.25 times, once per five minutes of quiet). A lone
     * system text (the compactor's instructions) carries none: nothing after it would be served.
     */
    private static JsonArray system(List<String> texts) {
        JsonArray blocks = new JsonArray();
        for (String text : texts) {
            blocks.add(textBlock(text));
        }
        if (texts.size() > 1) {
            blocks.getJsonObject(0).put("cache_control", new JsonObject().put("type", "ephemeral"));
        }
        return blocks;
    }

    /** The conversation as Anthropic messages; system texts are collected into {@code system}. */
    private static JsonArray messages(List<ChatMessage> conversation, List<String> system) {
        JsonArray messages = new JsonArray();
        for (ChatMessage message : conversation) {
            String text = message.content();
            boolean hasText = text != null && !text.isBlank();
            switch (message.role()) {
                case "system" -> {
                    if (hasText) {
                        system.add(text);
                    }
                }
                case "assistant" -> {
                    List<JsonObject> blocks = new ArrayList<>();
                    if (hasText) {
                        blocks.add(textBlock(text));
                    }
                    for (ToolCallRequest call : message.toolCalls()) {
                        blocks.add(new JsonObject().put("type", "tool_use").put("id", call.id()).put("name", call.name())
                                .put("input", input(call.arguments())));
                    }
                    append(messages, "assistant", blocks);
                }
                case "tool" -> append(messages, "user", List.of(new JsonObject().put("type", "tool_result")
                        .put("tool_use_id", message.toolCallId()).put("content", text == null ? "" : text)));
                default -> append(messages, "user", hasText ? List.of(textBlock(text)) : List.of());
            }
        }
        if (!messages.isEmpty() && "assistant".equals(messages.getJsonObject(0).getString("role"))) {
            messages.add(0, new JsonObject().put("role", "user").put("content", new JsonArray().add(textBlock(OMITTED))));
        }
        return messages;
    }

    private static JsonArray tools(List<ToolDefinition> definitions) {
        JsonArray tools = new JsonArray();
        for (ToolDefinition tool : definitions) {
            JsonObject json = new JsonObject().put("name", tool.name())
                    .put("input_schema", tool.parameters() == null ? new JsonObject().put("type", "object") : tool.parameters());
            if (tool.description() != null) {
                json.put("description", tool.description());
            }
            tools.add(json);
        }
        return tools;
    }

    /**
     * Adds blocks as a message of {@code role}, merged into the previous message when it has the same
     * role: the API wants roles to alternate, and all results of one round of tool calls in one user
     * message, ahead of any text.
     */
    private static void append(JsonArray messages, String role, List<JsonObject> blocks) {
        if (blocks.isEmpty()) {
            return;
        }
        JsonObject last = messages.isEmpty() ? null : messages.getJsonObject(messages.size() - 1);
        if (last == null || !role.equals(last.getString("role"))) {
            messages.add(new JsonObject().put("role", role).put("content", new JsonArray(new ArrayList<>(blocks))));
            return;
        }
        JsonArray content = last.getJsonArray("content");
        for (JsonObject block : blocks) {
            if ("tool_result".equals(block.getString("type"))) {
                int at = 0;
                while (at < content.size() && "tool_result".equals(content.getJsonObject(at).getString("type"))) {
                    at++;
                }
                content.getList().add(at, block);
            } else {
                content.add(block);
            }
        }
    }

    /** Tool arguments as the object the API requires; text that is not one (from another model) is kept visible. */
    private static JsonObject input(String arguments) {
        if (arguments == null || arguments.isBlank()) {
            return new JsonObject();
        }
        try {
            return new JsonObject(arguments);
        } catch (RuntimeException e) {
            return new JsonObject().put("raw_arguments", arguments);
        }
    }

    private static JsonObject textBlock(String text) {
        return new JsonObject().put("type", "text").put("text", text);
    }

    static LlmResponse parse(Buffer payload) {
        JsonObject json;
        try {
            json = payload.toJsonObject();
        } catch (RuntimeException e) {
            throw new LlmException("model endpoint answered with invalid JSON: " + LlmTransport.snippet(payload.toString()),
                    200, true, -1, e);
        }
        JsonArray content = json.getJsonArray("content");
        if (content == null) {
            throw new LlmException("model endpoint answered without content: " + LlmTransport.snippet(json.encode()),
                    200, false, -1, null);
        }
        StringBuilder text = new StringBuilder();
        boolean hasText = false;
        List<ToolCallRequest> calls = new ArrayList<>();
        for (int i = 0; i < content.size(); i++) {
            JsonObject block = content.getJsonObject(i);
            switch (block.getString("type", "")) {
                case "text" -> {
                    text.append(block.getString("text", ""));
                    hasText = true;
                }
                case "tool_use" -> calls.add(new ToolCallRequest(block.getString("id"), block.getString("name"),
                        block.getJsonObject("input", new JsonObject()).encode()));
                default -> {
                    // thinking and other block kinds are not part of the answer
                }
            }
        }
        JsonObject usage = json.getJsonObject("usage", new JsonObject());
        return new LlmResponse(hasText || calls.isEmpty() ? text.toString() : null, calls,
                finishReason(json.getString("stop_reason")), json.getString("model"),
                inputTokens(usage), usage.getInteger("output_tokens", 0)).withCachedTokens(usage.getInteger("cache_read_input_tokens", 0));
    }

    /**
     * The prompt's tokens as the rest of the worker counts them, cache reads included: Anthropic's
     * {@code input_tokens} leaves out what it read from ({@code cache_read_input_tokens}) or wrote to
     * ({@code cache_creation_input_tokens}) its prompt cache.
     */
    static int inputTokens(JsonObject usage) {
        return usage.getInteger("input_tokens", 0) + usage.getInteger("cache_read_input_tokens", 0)
                + usage.getInteger("cache_creation_input_tokens", 0);
    }

    /** Anthropic's stop reasons in the OpenAI vocabulary the rest of the worker speaks. */
    static String finishReason(String stopReason) {
        if (stopReason == null) {
            return "stop";
        }
        return switch (stopReason) {
            case "end_turn", "stop_sequence" -> "stop";
            case "tool_use" -> "tool_calls";
            case "max_tokens" -> "length";
            case "refusal" -> "content_filter";
            default -> stopReason;
        };
    }

    @Override
    public Future<Void> close() {
        return transport.close();
    }
}
