package io.clawfleet.worker.ownership;

import io.clawfleet.shared.partition.Rendezvous;
import io.clawfleet.shared.store.Lease;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Decides, from one node's view, which partitions to claim and which to hand off. Pure: the same
 * view gives the same decision, so it is tested without a cluster.
 *
 * <p>Placement is rendezvous hashing over the live workers, leaving out nodes that look dead:
 * those known to have left, and those whose every lease has expired. A partition is claimed when
 * this node is its desired owner and its lease is free, expired, held by a departed node or by an
 * earlier incarnation of this node; or by anyone when it has stayed expired past a grace period.
 * A partition held by a live node that is not its desired owner waits for that node's handoff.
 */
public final class Placement {

    /**
     * @param claim   partitions to claim now
     * @param handOff partitions this node holds but another live worker should own
     */
    public record Decision(Set<Integer> claim, Set<Integer> handOff) {
    }

    private Placement() {
    }

    /**
     * @param self          this node's id
     * @param liveWorkers   node ids of live members carrying the worker role (self included)
     * @param leases        every lease as stored now
     * @param held          partitions this node holds
     * @param departed      nodes that left the cluster recently: their leases may be taken at once
     * @param leaving       nodes shutting down: no new partitions go to them, but their leases are
     *                      respected while they drain (they release them)
     * @param longExpired   partitions whose lease has stayed expired past the grace period
     */
    public static Decision decide(String self, Set<String> liveWorkers, List<Lease> leases, Set<Integer> held,
                                  Set<String> departed, Set<String> leaving, Set<Integer> longExpired) {
        return decide(self, liveWorkers, leases, held, departed, leaving, longExpired, false);
    }

    /**
     * @param afterOutage this node's database just came back: every lease expired in the outage, so an expired lease
     *                    says nothing about its owner, and no node is suspected for one (else the first node back
     *                    would take every partition, and hand most off again)
     */
    public static Decision decide(String self, Set<String> liveWorkers, List<Lease> leases, Set<Integer> held,
                                  Set<String> departed, Set<String> leaving, Set<Integer> longExpired, boolean afterOutage) {
        Set<String> candidates = new TreeSet<>(liveWorkers);
        candidates.removeAll(departed);
        candidates.removeAll(leaving);
        if (!afterOutage) {
            candidates.removeAll(suspects(self, leases));
        }
        candidates.add(self);

        Set<Integer> claim = new HashSet<>();
        Set<Integer> handOff = new HashSet<>();
        for (Lease lease : leases) {
            int p = lease.partition();
            String desired = Rendezvous.ownerOf(p, candidates).orElse(self);
            if (held.contains(p)) {
                if (!desired.equals(self)) {
                    handOff.add(p);
                }
                continue;
            }
            boolean free = lease.owner() == null || lease.expired()
                    || lease.owner().equals(self) || departed.contains(lease.owner());
            if ((desired.equals(self) && free) || longExpired.contains(p)) {
                claim.add(p);
            }
        }
        return new Decision(claim, handOff);
    }

    /**
     * Other nodes that have let a lease expire: a healthy owner renews all its leases well within
     * the TTL, so an expired one means the owner is dead, frozen or cut off.
     */
    static Set<String> suspects(String self, List<Lease> leases) {
        Set<String> suspects = new HashSet<>();
        for (Lease lease : leases) {
            if (lease.owner() != null && !lease.owner().equals(self) && lease.expired()) {
                suspects.add(lease.owner());
            }
        }
        return suspects;
    }

    /** Desired placement for display: partition to node. */
    public static Map<Integer, String> desired(int partitions, Set<String> liveWorkers) {
        return Rendezvous.placement(partitions, liveWorkers);
    }
}
