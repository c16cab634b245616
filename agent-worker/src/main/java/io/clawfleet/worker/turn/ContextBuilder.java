package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.HistoryEntry;
import io.vertx.core.Future;
import io.clawfleet.worker.llm.ChatMessage;

import java.util.ArrayList;
import java.util.List;

/**
 * Assembles a model request: the system prompt, the conversation summary, the recent history and
 * the new message (seed 000 §5). Lean on purpose: every byte is paid for on every turn.
 */
public final class ContextBuilder {

    static final String SYSTEM_PROMPT = "You are a helpful assistant. Answer clearly and briefly.";

    private final int historyMessages;

    public ContextBuilder(int historyMessages) {
        this.historyMessages = historyMessages;
    }

    /** The prompt for a turn: system message and recent history (the new message is added by the loop). */
    public Future<List<ChatMessage>> build(InboundMessage message, ConversationStore.ChatState chat,
                                           List<HistoryEntry> history, String summary) {
        List<ChatMessage> out = build(message, history, summary);
        out.remove(out.size() - 1);
        return Future.succeededFuture(out);
    }

    public List<ChatMessage> build(InboundMessage message, List<HistoryEntry> history, String summary) {
        List<ChatMessage> out = new ArrayList<>(historyMessages + 3);
        String system = summary == null || summary.isBlank()
                ? SYSTEM_PROMPT
                : SYSTEM_PROMPT + "\n\n## Conversation summary\n" + summary;
        out.add(ChatMessage.system(system));
        int from = Math.max(0, history.size() - historyMessages);
        for (HistoryEntry entry : history.subList(from, history.size())) {
            if ("user".equals(entry.role()) || "assistant".equals(entry.role())) {
                out.add(new ChatMessage(entry.role(), entry.content(), null, null, null));
            }
        }
        out.add(ChatMessage.user(message.text()));
        return out;
    }
}
