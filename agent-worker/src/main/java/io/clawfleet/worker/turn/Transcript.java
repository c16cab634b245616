package io.clawfleet.worker.turn;

import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.ChatMessage;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.tools.ArgumentRedactor;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;

/** JSON form of a turn's messages and tool calls, for the ledger and for a turn paused for approval. */
final class Transcript {

    private Transcript() {
    }

    static JsonArray calls(List<ToolCallRequest> calls) {
        JsonArray out = new JsonArray();
        calls.forEach(call -> out.add(new JsonObject().put("id", call.id()).put("name", call.name()).put("arguments", call.arguments())));
        return out;
    }

    static List<ToolCallRequest> calls(JsonArray json) {
        List<ToolCallRequest> out = new ArrayList<>();
        if (json != null) {
            for (int i = 0; i < json.size(); i++) {
                JsonObject call = json.getJsonObject(i);
                out.add(new ToolCallRequest(call.getString("id"), call.getString("name"), call.getString("arguments")));
            }
        }
        return out;
    }

    /**
     * Adds a tool's result to the messages for the model: a {@code role: tool} message answering the
     * call, or, when the model wrote its calls as text, a {@code <tool_result>} block in one user
     * message carrying the round's results, which a model without native tools can read.
     */
    static void addResult(List<ChatMessage> messages, ToolCallRequest call, String content, boolean textForm) {
        if (!textForm) {
            messages.add(new ChatMessage("tool", content, null, call.id(), call.name()));
            return;
        }
        String block = "<tool_result name=\"" + call.name() + "\">\n" + content + "\n</tool_result>";
        ChatMessage last = messages.get(messages.size() - 1);
        if ("user".equals(last.role())) {
            messages.set(messages.size() - 1, ChatMessage.user(last.content() + "\n" + block));
        } else {
            messages.add(ChatMessage.user(block));
        }
    }

    /** The messages as they may be kept: every text scrubbed, every call's arguments redacted. */
    static List<ChatMessage> redacted(List<ChatMessage> messages, SecretScrubber scrubber, ArgumentRedactor redactor) {
        return messages.stream().map(m -> new ChatMessage(m.role(), scrubber.scrub(m.content()), redactor.redact(m.toolCalls()),
                m.toolCallId(), m.name())).toList();
    }

    static JsonArray messages(List<ChatMessage> messages) {
        JsonArray out = new JsonArray();
        for (ChatMessage message : messages) {
            JsonObject json = new JsonObject().put("role", message.role());
            if (message.content() != null) {
                json.put("content", message.content());
            }
            if (!message.toolCalls().isEmpty()) {
                json.put("toolCalls", calls(message.toolCalls()));
            }
            if (message.toolCallId() != null) {
                json.put("toolCallId", message.toolCallId());
            }
            if (message.name() != null) {
                json.put("name", message.name());
            }
            out.add(json);
        }
        return out;
    }

    static List<ChatMessage> messages(JsonArray json) {
        List<ChatMessage> out = new ArrayList<>();
        for (int i = 0; i < json.size(); i++) {
            JsonObject m = json.getJsonObject(i);
            out.add(new ChatMessage(m.getString("role"), m.getString("content"), calls(m.getJsonArray("toolCalls")),
                    m.getString("toolCallId"), m.getString("name")));
        }
        return out;
    }
}
