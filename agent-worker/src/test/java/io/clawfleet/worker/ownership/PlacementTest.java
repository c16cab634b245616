package io.clawfleet.worker.ownership;

import io.clawfleet.shared.partition.Rendezvous;
import io.clawfleet.shared.store.Lease;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class PlacementTest {

    private static List<Lease> leases(int n, String owner, boolean expired) {
        List<Lease> out = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            out.add(new Lease(p, owner, 1, expired));
        }
        return out;
    }

    @Test
    void aLoneWorkerClaimsEveryFreePartition() {
        var decision = Placement.decide("w1", Set.of("w1"), leases(16, null, true), Set.of(), Set.of(), Set.of(), Set.of());
        assertThat(decision.claim()).hasSize(16);
        assertThat(decision.handOff()).isEmpty();
    }

    @Test
    void aJoiningWorkerWaitsForHandoffInsteadOfStealing() {
        // given w1 holds all live leases and w2 just joined
        List<Lease> all = leases(16, "w1", false);
        var joiner = Placement.decide("w2", Set.of("w1", "w2"), all, Set.of(), Set.of(), Set.of(), Set.of());
        assertThat(joiner.claim()).isEmpty();
        // and w1 hands off exactly the partitions w2 should own
        var owner = Placement.decide("w1", Set.of("w1", "w2"), all, allPartitions(16), Set.of(), Set.of(), Set.of());
        for (int p = 0; p < 16; p++) {
            boolean forW2 = Rendezvous.ownerOf(p, Set.of("w1", "w2")).orElseThrow().equals("w2");
            assertThat(owner.handOff().contains(p)).isEqualTo(forW2);
        }
    }

    @Test
    void partitionsOfADepartedWorkerAreTakenAtOnceEvenIfTheirLeasesLive() {
        List<Lease> all = leases(16, "dead", false);
        var decision = Placement.decide("w1", Set.of("w1"), all, Set.of(), Set.of("dead"), Set.of(), Set.of());
        assertThat(decision.claim()).hasSize(16);
    }

    @Test
    void aWorkerWhoseLeasesAllExpiredIsPresumedDeadAndItsShareSpreads() {
        // given w2 still looks like a member but let every lease expire (kill -9 not yet detected)
        List<Lease> all = new ArrayList<>();
        for (int p = 0; p < 32; p++) {
            all.add(new Lease(p, p % 2 == 0 ? "w1" : "w2", 1, p % 2 != 0));
        }
        Set<Integer> held = new java.util.HashSet<>();
        for (int p = 0; p < 32; p += 2) {
            held.add(p);
        }
        var decision = Placement.decide("w1", Set.of("w1", "w2"), all, held, Set.of(), Set.of(), Set.of());
        for (int p = 1; p < 32; p += 2) {
            assertThat(decision.claim()).contains(p);
        }
        assertThat(decision.handOff()).isEmpty();
    }

    @Test
    void afterADatabaseOutageTheFirstWorkerBackClaimsOnlyItsShare() {
        // given every lease expired in the outage, w1's and w2's alike, and w1 holds nothing any more
        List<Lease> all = new ArrayList<>();
        for (int p = 0; p < 32; p++) {
            all.add(new Lease(p, p % 2 == 0 ? "w1" : "w2", 1, true));
        }
        // when w1 is back first: read as usual, w2's expired leases make it a suspect and w1 takes everything
        var usual = Placement.decide("w1", Set.of("w1", "w2"), all, Set.of(), Set.of(), Set.of(), Set.of());
        assertThat(usual.claim()).hasSize(32);
        // then, knowing it is just back, it claims its share over both and leaves w2's for w2
        var afterOutage = Placement.decide("w1", Set.of("w1", "w2"), all, Set.of(), Set.of(), Set.of(), Set.of(), true);
        var desired = Placement.desired(32, Set.of("w1", "w2"));
        assertThat(afterOutage.claim()).isNotEmpty().hasSizeLessThan(32)
                .allSatisfy(p -> assertThat(desired.get(p)).isEqualTo("w1"));
        assertThat(afterOutage.handOff()).isEmpty();
    }

    @Test
    void anEarlierIncarnationOfThisNodeIsReclaimedAtOnce() {
        var decision = Placement.decide("w1", Set.of("w1"), leases(4, "w1", false), Set.of(), Set.of(), Set.of(), Set.of());
        assertThat(decision.claim()).hasSize(4);
    }

    @Test
    void aLeaseExpiredPastGraceIsTakenByAnyone() {
        // given a live member w2 who should own partition 0 but never claims it
        List<Lease> all = List.of(new Lease(0, "w3", 5, true), new Lease(1, "w1", 5, false));
        String desired = Rendezvous.ownerOf(0, Set.of("w1", "w2")).orElseThrow();
        String other = desired.equals("w1") ? "w2" : "w1";
        var decision = Placement.decide(other, Set.of("w1", "w2"), all, Set.of(), Set.of(), Set.of(), Set.of(0));
        assertThat(decision.claim()).contains(0);
    }

    @Test
    void aLeavingWorkerGetsNoNewPartitionsButKeepsThoseItIsDraining() {
        // given w1 is shutting down and still holds partitions it is draining
        List<Lease> all = new ArrayList<>();
        for (int p = 0; p < 16; p++) {
            all.add(new Lease(p, p < 8 ? "w1" : null, 1, p >= 8));
        }
        var decision = Placement.decide("w2", Set.of("w1", "w2"), all, Set.of(), Set.of(), Set.of("w1"), Set.of());
        // then w2 takes every free partition, and none w1 still holds
        assertThat(decision.claim()).containsExactlyInAnyOrder(8, 9, 10, 11, 12, 13, 14, 15);
    }

    @Test
    void suspectsAreOthersThatLetALeaseExpire() {
        List<Lease> all = List.of(new Lease(0, "a", 1, true), new Lease(1, "a", 1, false),
                new Lease(2, "b", 1, true), new Lease(3, "me", 1, true), new Lease(4, "c", 1, false),
                new Lease(5, null, 1, true));
        assertThat(Placement.suspects("me", all)).containsExactlyInAnyOrder("a", "b");
    }

    @Test
    void aKilledWorkersShareGoesToTheHealthyOneWhenThePreferredOneIsFrozen() {
        // given w2 was killed (leases expired) and w1 froze a moment ago (one lease already expired)
        List<Lease> all = new ArrayList<>();
        for (int p = 0; p < 30; p++) {
            String owner = p % 3 == 0 ? "w1" : p % 3 == 1 ? "w2" : "w3";
            all.add(new Lease(p, owner, 1, owner.equals("w2") || p == 0));
        }
        Set<Integer> held = new java.util.HashSet<>();
        for (int p = 2; p < 30; p += 3) {
            held.add(p);
        }
        // when w3 decides / then it takes every partition of w2 at once, none left waiting for w1
        var decision = Placement.decide("w3", Set.of("w1", "w2", "w3"), all, held, Set.of(), Set.of(), Set.of());
        for (int p = 1; p < 30; p += 3) {
            assertThat(decision.claim()).contains(p);
        }
    }

    private static Set<Integer> allPartitions(int n) {
        Set<Integer> out = new java.util.HashSet<>();
        for (int p = 0; p < n; p++) {
            out.add(p);
        }
        return out;
    }
}
