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

    /** A member joined or left. */
    record MembershipChange(Member member, boolean joined) {
    }
}
