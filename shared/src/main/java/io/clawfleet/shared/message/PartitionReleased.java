package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * Published by an owner that handed a partition off (rebalance or shutdown): the lease is free,
 * the desired owner may claim it now instead of at its next tick.
 */
public record PartitionReleased(String type, int partition, long epoch, String fromNode) implements Versioned {

    public static final String TYPE = "partition-released-v1";

    @JsonCreator
    public PartitionReleased {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(fromNode, "fromNode");
    }

    public PartitionReleased(int partition, long epoch, String fromNode) {
        this(TYPE, partition, epoch, fromNode);
    }
}
