package io.clawfleet.worker.llm;

import java.util.List;

/**
 * What the model answered.
 *
 * @param content      the text, or null when it only asked for tools
 * @param finishReason {@code stop}, {@code tool_calls}, {@code length}, ...
 * @param model        the model that answered, as the endpoint named it
 * @param provider     the configured provider that answered (set by {@link ModelRouter}); null when
 *                     a provider was called directly
 */
public record LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                          int inputTokens, int outputTokens, String provider) {

    public LlmResponse {
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    public LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                       int inputTokens, int outputTokens) {
        this(content, toolCalls, finishReason, model, inputTokens, outputTokens, null);
    }

    /** This response, as answered by the named provider. */
    public LlmResponse withProvider(String name) {
        return new LlmResponse(content, toolCalls, finishReason, model, inputTokens, outputTokens, name);
    }
}
