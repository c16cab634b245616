package io.clawfleet.shared.cluster;

/**
 * The cluster upset this node's member while the node was starting. Nodes started together may first form clusters of
 * their own; Hazelcast merges them seconds later, resetting the merging member's state under whatever the start was
 * doing, and terminates a member whose merge fails. Nothing makes such a start whole in this process; a restart joins
 * afresh, so {@code clawfleet node} exits with the status its supervisor restarts on, as for a member lost after the
 * start.
 */
public final class MemberLostException extends RuntimeException {

    /**
     * @param what what happened to the member ({@link MemberUpsets#first()}, or "shut down by the cluster")
     * @param during the failure of the start it caused, if one was seen
     */
    public MemberLostException(String nodeId, String what, Throwable during) {
        super("the cluster member of node " + nodeId + " was " + what + " while the node started"
                + (during == null ? "" : " (" + during + ")"), during);
    }
}
