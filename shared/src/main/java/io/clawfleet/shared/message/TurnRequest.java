package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * One turn to run: answer {@code message} as the owner of {@code partition} under {@code epoch}.
 * The epoch travels with the turn so its commit is fenced against a newer owner.
 *
 * @param contextMode    {@code group} (chat history included) or {@code isolated} (minimal context)
 * @param mayHaveStarted a turn for this message may have run before (here, or under an earlier owner of
 *                       the partition), so its execution ledger may hold steps to replay; false only when
 *                       the worker knows it cannot (null, as from an older sender, means true)
 * @param retriedHere    this worker started a turn for this message before and it failed (the database was
 *                       unreachable, say): a retry, not a takeover, so it does not count towards
 *                       {@code worker.maxTurnStarts} (null means false)
 */
public record TurnRequest(String type, int partition, long epoch, InboundMessage message, String contextMode,
                          Boolean mayHaveStarted, Boolean retriedHere) implements Versioned {

    public static final String TYPE = "turn-request-v1";
    public static final String CONTEXT_GROUP = "group";
    public static final String CONTEXT_ISOLATED = "isolated";

    @JsonCreator
    public TurnRequest {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(message, "message");
        contextMode = contextMode == null ? CONTEXT_GROUP : contextMode;
        mayHaveStarted = mayHaveStarted == null || mayHaveStarted;
        retriedHere = retriedHere != null && retriedHere;
        if (!CONTEXT_GROUP.equals(contextMode) && !CONTEXT_ISOLATED.equals(contextMode)) {
            throw new IllegalArgumentException("contextMode must be group or isolated, got " + contextMode);
        }
    }

    public TurnRequest(int partition, long epoch, InboundMessage message, String contextMode) {
        this(TYPE, partition, epoch, message, contextMode, true, false);
    }

    public TurnRequest(int partition, long epoch, InboundMessage message, String contextMode, boolean mayHaveStarted) {
        this(TYPE, partition, epoch, message, contextMode, mayHaveStarted, false);
    }

    public TurnRequest(int partition, long epoch, InboundMessage message, String contextMode, boolean mayHaveStarted,
                       boolean retriedHere) {
        this(TYPE, partition, epoch, message, contextMode, mayHaveStarted, retriedHere);
    }
}
