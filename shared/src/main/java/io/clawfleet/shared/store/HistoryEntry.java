package io.clawfleet.shared.store;

/**
 * One message of conversation history, as stored and as put in a model request.
 *
 * @param role         user, assistant, system or tool
 * @param toolCalls    the assistant's tool calls as JSON text (OpenAI shape), or null
 * @param toolCallId   for a tool result, the call it answers
 */
public record HistoryEntry(String role, String senderId, String content, String toolCalls, String toolCallId) {

    public static HistoryEntry user(String senderId, String content) {
        return new HistoryEntry("user", senderId, content, null, null);
    }

    public static HistoryEntry assistant(String content) {
        return new HistoryEntry("assistant", null, content, null, null);
    }
}
