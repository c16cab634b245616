package io.clawfleet.shared.store;

import java.time.Instant;

/**
 * A partition lease as stored.
 *
 * @param owner      owning node id, or null when free
 * @param expired    whether the lease has run out by the database's clock
 * @param acquiredAt when the lease was last claimed (its epoch raised); null when not since V43
 */
public record Lease(int partition, String owner, long epoch, boolean expired, Instant acquiredAt) {

    public Lease(int partition, String owner, long epoch, boolean expired) {
        this(partition, owner, epoch, expired, null);
    }
}
