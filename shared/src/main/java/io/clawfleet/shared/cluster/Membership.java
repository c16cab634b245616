package io.clawfleet.shared.cluster;

import java.util.List;
import java.util.function.Consumer;

/**
 * The current set of live members. A hint for speed (who should own what); leases and epochs in
 * PostgreSQL are the truth about ownership.
 */
public interface Membership {

    Member self();

    /** Members in the current view, this node included. */
    List<Member> members();

    /**
     * Registers a listener for joins and departures. It runs on the Vert.x context that was
     * current when it was registered (so a verticle's state needs no locks).
     */
    void onChange(Consumer<MembershipChange> listener);

    /**
     * Whether this node is still part of the cluster. A clustered node whose member has shut down
     * (after a split it could not merge back, say) cannot reach the event bus: its wake-ups, replies
     * and tool calls go nowhere, and it must not look ready.
     */
    default boolean connected() {
        return true;
    }

    /**
     * Calls {@code listener} once if this node's member shuts down without the node asking (Hazelcast terminates a
     * member that cannot merge back after a split, for one): such a node can only be made whole by a restart.
     */
    default void onLost(Runnable listener) {
    }

    /** The node is about to leave on purpose: the member's shutdown that follows is not a loss. */
    default void leaving() {
    }

    /** A member joined or left. */
    record MembershipChange(Member member, boolean joined) {
    }
}
