package io.clawfleet.shared.store;

/** The lease a write is made under: it commits only while {@code nodeId} holds {@code partition} at {@code epoch}. */
public record Fence(int partition, String nodeId, long epoch) {
}
