package io.clawfleet.worker.llm;

import java.util.List;

/**
 * What the model answered.
 *
 * @param content      the text, or null when it only asked for tools
 * @param finishReason {@code stop}, {@code tool_calls}, {@code length}, ...
 * @param model        the model that answered, as the endpoint named it
 * @param inputTokens  the prompt's tokens, those read from the provider's cache included
 * @param cachedTokens of the input tokens, those the provider read from its prompt cache
 * @param provider     the configured provider that answered (set by {@link ModelRouter}); null when
 *                     a provider was called directly
 * @param costMicros   what the call cost in micro-dollars at the provider's configured price; null when it has none
 */
public record LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                          int inputTokens, int outputTokens, int cachedTokens, String provider, Long costMicros) {

    public LlmResponse {
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    public LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                       int inputTokens, int outputTokens) {
        this(content, toolCalls, finishReason, model, inputTokens, outputTokens, 0, null, null);
    }

    public LlmResponse(String content, List<ToolCallRequest> toolCalls, String finishReason, String model,
                       int inputTokens, int outputTokens, String provider) {
        this(content, toolCalls, finishReason, model, inputTokens, outputTokens, 0, provider, null);
    }

    /** This response, as answered by the named provider. */
    public LlmResponse withProvider(String name) {
        return new LlmResponse(content, toolCalls, finishReason, model, inputTokens, outputTokens, cachedTokens, name, costMicros);
    }

    /** This response with the tokens read from the provider's cache (part of {@link #inputTokens}). */
    public LlmResponse withCachedTokens(int cached) {
        return new LlmResponse(content, toolCalls, finishReason, model, inputTokens, outputTokens, cached, provider, costMicros);
    }

    /** This response with what it cost. */
    public LlmResponse withCost(Long micros) {
        return new LlmResponse(content, toolCalls, finishReason, model, inputTokens, outputTokens, cachedTokens, provider, micros);
    }
}
