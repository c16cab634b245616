package io.clawfleet.worker.llm;

import java.util.List;

/**
 * What the model answered.
 *
 * @param content      the text, or null when it only asked for tools
 * @param finishReason {@code stop}, {@code tool_calls}, {@code length}, ...
 */
public record LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                          int inputTokens, int outputTokens) {

    public LlmResponse {
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }
}
