package io.clawfleet.worker.llm;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Builds one {@link LlmResponse} from the events of a streamed Anthropic message: {@code message_start}
 * (model, input tokens), {@code content_block_start/delta/stop} per block (text deltas go to the sink as
 * they come; tool input arrives as pieces of JSON), {@code message_delta} (stop reason, output tokens),
 * {@code message_stop}. An {@code error} event fails the call.
 */
final class AnthropicStreamAssembler implements LlmTransport.StreamAssembler {

    /** A content block being assembled. */
    private static final class Block {
        final boolean toolUse;
        final String id;
        final String name;
        final String initialInput;
        final StringBuilder text = new StringBuilder();

        Block(boolean toolUse, String id, String name, String initialInput) {
            this.toolUse = toolUse;
            this.id = id;
            this.name = name;
            this.initialInput = initialInput;
        }
    }

    private final StreamSink sink;
    private final Map<Integer, Block> blocks = new TreeMap<>();
    private String stopReason;
    private String model;
    private int inputTokens;
    private int outputTokens;
    private int cachedTokens;
    private boolean started;
    private boolean stopped;

    AnthropicStreamAssembler(StreamSink sink) {
        this.sink = Objects.requireNonNull(sink);
    }

    @Override
    public void accept(SseDecoder.Event event) {
        JsonObject data;
        try {
            data = new JsonObject(event.data());
        } catch (DecodeException e) {
            throw new LlmException("model stream sent invalid JSON: " + LlmTransport.snippet(event.data()), 200, true, -1, e);
        }
        switch (data.getString("type", event.name())) {
            case "message_start" -> {
                started = true;
                JsonObject message = data.getJsonObject("message", new JsonObject());
                model = message.getString("model");
                usage(message.getJsonObject("usage"));
            }
            case "content_block_start" -> start(data.getInteger("index", blocks.size()), data.getJsonObject("content_block", new JsonObject()));
            case "content_block_delta" -> delta(data.getInteger("index", 0), data.getJsonObject("delta", new JsonObject()));
            case "message_delta" -> {
                if (data.getJsonObject("delta", new JsonObject()).getValue("stop_reason") instanceof String reason) {
                    stopReason = reason;
                }
                usage(data.getJsonObject("usage"));
            }
            case "message_stop" -> stopped = true;
            case "error" -> throw streamError(data.getJsonObject("error", new JsonObject()));
            default -> {
                // ping, content_block_stop and event kinds added later carry nothing we need
            }
        }
    }

    private void start(int index, JsonObject block) {
        if ("tool_use".equals(block.getString("type"))) {
            JsonObject input = block.getJsonObject("input");
            blocks.put(index, new Block(true, block.getString("id"), block.getString("name"),
                    input == null || input.isEmpty() ? "{}" : input.encode()));
        } else if ("text".equals(block.getString("type"))) {
            Block text = new Block(false, null, null, null);
            blocks.put(index, text);
            appendText(text, block.getString("text", ""));
        }
        // thinking blocks are not part of the answer: no entry, so their deltas are dropped
    }

    private void delta(int index, JsonObject delta) {
        Block block = blocks.get(index);
        if (block == null) {
            return;
        }
        switch (delta.getString("type", "")) {
            case "text_delta" -> appendText(block, delta.getString("text", ""));
            case "input_json_delta" -> block.text.append(delta.getString("partial_json", ""));
            default -> {
                // signature and thinking deltas
            }
        }
    }

    private void appendText(Block block, String text) {
        if (!text.isEmpty()) {
            block.text.append(text);
            sink.delta(text);
        }
    }

    private void usage(JsonObject usage) {
        if (usage != null) {
            if (usage.containsKey("input_tokens")) {
                inputTokens = AnthropicProvider.inputTokens(usage);
                cachedTokens = usage.getInteger("cache_read_input_tokens", 0);
            }
            outputTokens = usage.getInteger("output_tokens", outputTokens);
        }
    }

    private static LlmException streamError(JsonObject error) {
        String type = error.getString("type", "api_error");
        int status = switch (type) {
            case "overloaded_error" -> 529;
            case "rate_limit_error" -> 429;
            case "api_error" -> 500;
            default -> 400;
        };
        return new LlmException("model stream failed: " + type + ": " + LlmTransport.snippet(error.getString("message", "")),
                status, status != 400, -1, null);
    }

    /** The whole answer; fails when the stream stopped before {@code message_stop}. */
    @Override
    public LlmResponse finish() {
        if (!started || !stopped) {
            throw new LlmException("model stream ended before the answer was finished", 0, true, -1, null);
        }
        StringBuilder text = new StringBuilder();
        boolean hasText = false;
        List<ToolCallRequest> calls = new ArrayList<>();
        for (Block block : blocks.values()) {
            if (block.toolUse) {
                String input = block.text.isEmpty() ? block.initialInput : block.text.toString();
                calls.add(new ToolCallRequest(block.id, block.name, input));
            } else {
                text.append(block.text);
                hasText = true;
            }
        }
        return new LlmResponse(hasText || calls.isEmpty() ? text.toString() : null, calls,
                AnthropicProvider.finishReason(stopReason), model, inputTokens, outputTokens)
                .withCachedTokens(cachedTokens);
    }
}
