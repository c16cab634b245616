package io.clawfleet.worker.ownership;

import io.vertx.core.Future;

/** What {@link PartitionOwnership} tells the turn side about the partitions it holds. */
public interface PartitionListener {

    /** This node now owns the partition at this epoch: start serving it (subscribe, scan the inbox). */
    void acquired(int partition, long epoch);

    /**
     * Handoff is starting: stop taking new turns for the partition. The future completes when the
     * turns in flight have finished; the caller bounds the wait.
     */
    Future<Void> drain(int partition);

    /** The partition is gone (lost or handed off): drop everything about it now. */
    void lost(int partition);
}
