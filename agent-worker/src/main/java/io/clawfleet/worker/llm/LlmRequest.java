package io.clawfleet.worker.llm;

import java.util.List;

/** A chat completion request; {@code model} null means the provider's configured model. */
public record LlmRequest(String model, List<ChatMessage> messages, List<ToolDefinition> tools) {

    public LlmRequest {
        messages = List.copyOf(messages);
        tools = tools == null ? List.of() : List.copyOf(tools);
    }
}
