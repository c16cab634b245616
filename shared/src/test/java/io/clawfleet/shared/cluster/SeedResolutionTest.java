package io.clawfleet.shared.cluster;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Seeds given as host names are turned into addresses (Hazelcast bound to one interface drops names). */
class SeedResolutionTest {

    @Test
    void namesBecomeTheirAddressesWithTheirPortsAndAddressesStayAsTheyAre() {
        assertThat(ClusterBootstrap.resolved(List.of(" 10.0.0.7:5701", "10.0.0.8", "[fd00::1]:5701")))
                .containsExactly("10.0.0.7:5701", "10.0.0.8", "[fd00::1]:5701");
        assertThat(ClusterBootstrap.resolved(List.of("localhost:5702"))).contains("127.0.0.1:5702")
                .allSatisfy(seed -> assertThat(seed).endsWith(":5702").doesNotContain("localhost"));
    }

    @Test
    void aNameThatDoesNotResolveIsKeptForHazelcastToTryAgain() {
        assertThat(ClusterBootstrap.resolved(List.of("no-such-host.invalid:5701"))).containsExactly("no-such-host.invalid:5701");
    }
}
