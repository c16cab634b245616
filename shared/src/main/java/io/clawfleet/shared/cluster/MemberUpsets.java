package io.clawfleet.shared.cluster;

import com.hazelcast.core.LifecycleEvent;
import com.hazelcast.core.LifecycleListener;

/**
 * Remembers the first thing that happened to this node's Hazelcast member that the node did not do itself: a merge
 * into another cluster (which resets the member's state under operations in flight), a failed merge, a shutdown.
 * Registered with the member's configuration, so it sees the member from its first moment, Vert.x's own start
 * included. A start that fails after one of these is a {@link MemberLostException}: a restart mends it.
 */
public final class MemberUpsets implements LifecycleListener {

    private volatile String first;

    @Override
    public void stateChanged(LifecycleEvent event) {
        String what = switch (event.getState()) {
            case MERGING -> "merged into another cluster";
            case MERGE_FAILED -> "refused by the cluster it was merging into";
            case SHUTTING_DOWN, SHUTDOWN -> "shut down by the cluster";
            default -> null;
        };
        if (what != null && first == null) {
            first = what;
        }
    }

    /** What happened first, or null when nothing did. Read it before the node shuts its member down itself. */
    public String first() {
        return first;
    }
}
