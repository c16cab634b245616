package io.clawfleet.worker.llm;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Builds one {@link LlmResponse} from the chunks of a streamed Chat Completion: text deltas go to the
 * sink as they come, tool calls are put together by index from their id, name and argument pieces,
 * usage comes from the last chunk ({@code stream_options.include_usage}).
 */
final class OpenAiStreamAssembler implements LlmTransport.StreamAssembler {

    /** A tool call being assembled. */
    private static final class PartialCall {
        String id;
        String name;
        final StringBuilder arguments = new StringBuilder();
    }

    private final StreamSink sink;
    private final StringBuilder content = new StringBuilder();
    private final Map<Integer, PartialCall> calls = new TreeMap<>();
    private String finishReason;
    private String model;
    private int inputTokens;
    private int outputTokens;
    private int cachedTokens;
    private boolean done;

    OpenAiStreamAssembler(StreamSink sink) {
        this.sink = Objects.requireNonNull(sink);
    }

    @Override
    public void accept(SseDecoder.Event event) {
        String data = event.data().trim();
        if (data.equals("[DONE]")) {
            done = true;
            return;
        }
        if (data.isEmpty()) {
            return;
        }
        JsonObject chunk = json(data);
        if (chunk.getValue("error") instanceof JsonObject error) {
            throw new LlmException("model stream failed: " + LlmTransport.snippet(error.encode()), 200, true, -1, null);
        }
        model = chunk.getString("model", model);
        if (chunk.getValue("usage") instanceof JsonObject usage) {
            inputTokens = usage.getInteger("prompt_tokens", inputTokens);
            outputTokens = usage.getInteger("completion_tokens", outputTokens);
            cachedTokens = OpenAiCompatibleProvider.cachedTokens(usage);
        }
        JsonArray choices = chunk.getJsonArray("choices");
        if (choices == null || choices.isEmpty()) {
            return;
        }
        JsonObject choice = choices.getJsonObject(0);
        if (choice.getValue("finish_reason") instanceof String reason) {
            finishReason = reason;
        }
        JsonObject delta = choice.getJsonObject("delta", new JsonObject());
        if (delta.getValue("content") instanceof String text && !text.isEmpty()) {
            content.append(text);
            sink.delta(text);
        }
        if (delta.getValue("tool_calls") instanceof JsonArray pieces) {
            toolCallPieces(pieces);
        }
    }

    /** Pieces of tool calls, each saying by index which call it continues. */
    private void toolCallPieces(JsonArray pieces) {
        for (int i = 0; i < pieces.size(); i++) {
            JsonObject piece = pieces.getJsonObject(i);
            PartialCall call = calls.computeIfAbsent(piece.getInteger("index", i), k -> new PartialCall());
            if (piece.getValue("id") instanceof String id && !id.isEmpty()) {
                call.id = id;
            }
            JsonObject function = piece.getJsonObject("function", new JsonObject());
            if (function.getValue("name") instanceof String name && !name.isEmpty()) {
                call.name = name;
            }
            if (function.getValue("arguments") instanceof String arguments) {
                call.arguments.append(arguments);
            }
        }
    }

    private static JsonObject json(String data) {
        try {
            return new JsonObject(data);
        } catch (DecodeException e) {
            throw new LlmException("model stream sent invalid JSON: " + LlmTransport.snippet(data), 200, true, -1, e);
        }
    }

    /** The whole answer; fails when the stream stopped before saying it was finished. */
    @Override
    public LlmResponse finish() {
        if (!done && finishReason == null) {
            throw new LlmException("model stream ended before the answer was finished", 0, true, -1, null);
        }
        List<ToolCallRequest> toolCalls = new ArrayList<>();
        for (Map.Entry<Integer, PartialCall> entry : calls.entrySet()) {
            PartialCall call = entry.getValue();
            if (call.name == null) {
                throw new LlmException("model stream sent a tool call without a name (index " + entry.getKey() + ")", 200, true, -1, null);
            }
            String arguments = call.arguments.isEmpty() ? "{}" : call.arguments.toString();
            toolCalls.add(new ToolCallRequest(call.id == null ? "call_" + entry.getKey() : call.id, call.name, arguments));
        }
        String text = content.isEmpty() && !toolCalls.isEmpty() ? null : content.toString();
        return new LlmResponse(text, toolCalls, finishReason == null ? "stop" : finishReason, model, inputTokens, outputTokens)
                .withCachedTokens(cachedTokens);
    }
}
