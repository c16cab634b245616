package io.clawfleet.shared.store;

/**
 * A write was refused because its lease is no longer held at its epoch: another node owns the
 * partition now. The owner must let the partition go (like Temporal's ShardOwnershipLostError).
 */
public final class PartitionLostException extends RuntimeException {

    private final Fence fence;

    public PartitionLostException(Fence fence) {
        super("partition " + fence.partition() + " is no longer held by " + fence.nodeId() + " at epoch " + fence.epoch(),
                null, false, false);
        this.fence = fence;
    }

    public Fence fence() {
        return fence;
    }
}
