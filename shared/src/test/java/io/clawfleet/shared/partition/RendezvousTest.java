package io.clawfleet.shared.partition;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RendezvousTest {

    @Test
    void everyNodeGetsAboutItsShare() {
        // given 4 workers and 128 partitions / when placed / then each has 32 +- 14
        Map<Integer, String> placement = Rendezvous.placement(128, List.of("w1", "w2", "w3", "w4"));
        assertThat(placement).hasSize(128);
        for (String node : List.of("w1", "w2", "w3", "w4")) {
            long owned = placement.values().stream().filter(node::equals).count();
            assertThat(owned).isBetween(18L, 46L);
        }
    }

    @Test
    void addingANodeMovesOnlyPartitionsToIt() {
        // given a placement over 3 nodes / when a 4th joins / then every partition that moves, moves to the new node
        Map<Integer, String> before = Rendezvous.placement(128, List.of("w1", "w2", "w3"));
        Map<Integer, String> after = Rendezvous.placement(128, List.of("w1", "w2", "w3", "w4"));
        int moved = 0;
        for (int p = 0; p < 128; p++) {
            if (!before.get(p).equals(after.get(p))) {
                moved++;
                assertThat(after.get(p)).isEqualTo("w4");
            }
        }
        assertThat(moved).isBetween(20, 45);
    }

    @Test
    void removingANodeMovesOnlyItsPartitions() {
        Map<Integer, String> before = Rendezvous.placement(128, List.of("w1", "w2", "w3"));
        Map<Integer, String> after = Rendezvous.placement(128, List.of("w1", "w3"));
        for (int p = 0; p < 128; p++) {
            if (!before.get(p).equals("w2")) {
                assertThat(after.get(p)).isEqualTo(before.get(p));
            }
        }
    }

    @Test
    void placementDoesNotDependOnMemberOrder() {
        List<String> nodes = new ArrayList<>(List.of("a", "b", "c", "d", "e"));
        Map<Integer, String> first = Rendezvous.placement(64, nodes);
        Collections.reverse(nodes);
        assertThat(Rendezvous.placement(64, nodes)).isEqualTo(first);
    }

    @Test
    void noNodesMeansNoOwner() {
        assertThat(Rendezvous.ownerOf(3, List.of())).isEmpty();
    }
}
