package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.store.HistoryEntry;

import java.util.List;

/** How a turn ended, as the dispatcher needs to know it. */
public sealed interface TurnOutcome {

    /**
     * Committed: the reply is durable; {@code appended} is the history the turn added.
     *
     * @param reloadState the turn may have changed the chat's state (tools, approvals): read it again
     */
    record Committed(OutboundReply reply, List<HistoryEntry> appended, boolean reloadState) implements TurnOutcome {

        public Committed(OutboundReply reply, List<HistoryEntry> appended) {
            this(reply, appended, false);
        }
    }

    /** The message had been answered already, by an earlier owner. */
    record AlreadyDone() implements TurnOutcome {
    }

    /** The commit was fenced off: this node no longer owns the partition. */
    record Fenced() implements TurnOutcome {
    }

    /** The turn could not be committed (database trouble); the message stays pending. */
    record Failed(Throwable cause) implements TurnOutcome {
    }
}
