package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * Published by an owner that handed a partition off (rebalance or shutdown): the lease is free,
 * the desired owner may claim it now instead of at its next tick.
 *
 * @param leaving the sender is shutting down: leave it out of placement now, before it leaves the cluster
 */
public record PartitionReleased(String type, int partition, long epoch, String fromNode, boolean leaving)
        implements Versioned {

    public static final String TYPE = "partition-released-v1";

    @JsonCreator
    public PartitionReleased {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(fromNode, "fromNode");
    }

    public PartitionReleased(int partition, long epoch, String fromNode, boolean leaving) {
        this(TYPE, partition, epoch, fromNode, leaving);
    }
}
