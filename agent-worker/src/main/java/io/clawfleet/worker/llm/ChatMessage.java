package io.clawfleet.worker.llm;

import java.util.List;

/**
 * One message of a model request, in the OpenAI chat shape.
 *
 * @param toolCalls  calls the assistant asked for (assistant messages only)
 * @param toolCallId the call a tool message answers
 * @param name       the tool's name on a tool message
 */
public record ChatMessage(String role, String content, List<ToolCallRequest> toolCalls, String toolCallId, String name) {

    public ChatMessage {
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    public static ChatMessage system(String content) {
        return new ChatMessage("system", content, null, null, null);
    }

    public static ChatMessage user(String content) {
        return new ChatMessage("user", content, null, null, null);
    }

    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content, null, null, null);
    }
}
