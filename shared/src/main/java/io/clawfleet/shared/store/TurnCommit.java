package io.clawfleet.shared.store;

import io.clawfleet.shared.message.InboundMessage;
import io.vertx.core.json.JsonObject;

import java.util.List;

/**
 * Everything a turn records, committed at once under its fence.
 *
 * @param deadLetterError  the turn failed for good: record a dead letter with this error
 * @param usage            tokens spent per model call
 * @param pending          a tool call now waiting for the chat's approval, or null
 * @param clearPending     the chat's waiting call was answered (or dropped)
 * @param alwaysAllow      a tool the chat answered /always for, or null
 */
public record TurnCommit(Fence fence, InboundMessage message, List<HistoryEntry> history, String replyText,
                         String deadLetterError, List<Usage> usage, PendingApproval pending, boolean clearPending,
                         String alwaysAllow) {

    public TurnCommit {
        history = List.copyOf(history);
        usage = List.copyOf(usage);
    }

    /** Tokens one model call used. */
    public record Usage(String provider, String model, int inputTokens, int outputTokens) {
    }

    /**
     * A tool call the chat must approve.
     *
     * @param state what the turn needs to carry on: its messages so far and the calls left
     */
    public record PendingApproval(String tool, String callId, JsonObject arguments, JsonObject state) {
    }
}
