package io.clawfleet.shared.cluster;

import com.hazelcast.core.LifecycleEvent;
import com.hazelcast.core.LifecycleListener;

/**
 * Remembers the first thing that happened to this node's Hazelcast member's cluster that the node did not do itself:
 * a merge into another cluster (which resets the member's state under operations in flight) or a failed one.
 * Registered with the member's configuration, so it sees the member from its first moment, Vert.x's own start
 * included. A start that fails after one of these is a {@link MemberLostException}: a restart mends it.
 *
 * <p>Shutdowns are not recorded here: a failed start shuts the member down itself (Vert.x closes on a failed start),
 * and that must not read as the cluster's doing. A member the cluster terminates is a {@link Membership#onLost}.
 */
public final class MemberUpsets implements LifecycleListener {

    private volatile String first;

    @Override
    public void stateChanged(LifecycleEvent event) {
        String what = switch (event.getState()) {
            case MERGING -> "merged into another cluster";
            case MERGE_FAILED -> "refused by the cluster it was merging into";
            default -> null;
        };
        if (what != null && first == null) {
            first = what;
        }
    }

    /** What happened first, or null when nothing did. */
    public String first() {
        return first;
    }
}
