package io.clawfleet.shared.store;

/**
 * A partition lease as stored.
 *
 * @param owner   owning node id, or null when free
 * @param expired whether the lease has run out by the database's clock
 */
public record Lease(int partition, String owner, long epoch, boolean expired) {
}
