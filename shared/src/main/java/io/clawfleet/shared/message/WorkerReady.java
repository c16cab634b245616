package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * Published by a worker on every lease tick while it can own partitions (and once with
 * {@code ready} false when it stops). Placement counts only workers heard recently, so a handoff
 * starts only when the new owner is able to claim.
 */
public record WorkerReady(String type, String nodeId, boolean ready) implements Versioned {

    public static final String TYPE = "worker-ready-v1";

    @JsonCreator
    public WorkerReady {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(nodeId, "nodeId");
    }

    public WorkerReady(String nodeId, boolean ready) {
        this(TYPE, nodeId, ready);
    }
}
