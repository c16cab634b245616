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

    /**
     * Tokens one model call used.
     *
     * @param cachedTokens of the input tokens, those the provider read from its prompt cache
     * @param costMicros   what the call cost in micro-dollars at its provider's configured price; null when unpriced
     */
    public record Usage(String provider, String model, int inputTokens, int outputTokens, int cachedTokens, Long costMicros) {

        public Usage(String provider, String model, int inputTokens, int outputTokens) {
            this(provider, model, inputTokens, outputTokens, 0, null);
        }
    }

    /**
     * A tool call waiting for an admin's approval.
     *
     * @param approvalId  the call's public id, which an approval names
     * @param argsHash    hash of exactly what would run (tool, call id, arguments): an approval must name it
     * @param requestedBy the sender whose message led to the call
     * @param expiresAt   no approval is taken after this
     * @param state       what the turn needs to carry on: its messages so far and the calls left
     * @param decision    approve, deny or always once an admin decided; null while it waits
     * @param decidedBy   who decided (an admin chat's sender, an API key), or null
     */
    public record PendingApproval(String tool, String callId, JsonObject arguments, JsonObject state, String approvalId,
                                  String argsHash, String requestedBy, java.time.Instant expiresAt, String decision,
                                  String decidedBy) {

        /** A call starting to wait: no decision yet. */
        public PendingApproval(String tool, String callId, JsonObject arguments, JsonObject state, String approvalId,
                               String argsHash, String requestedBy, java.time.Instant expiresAt) {
            this(tool, callId, arguments, state, approvalId, argsHash, requestedBy, expiresAt, null, null);
        }
    }
}
