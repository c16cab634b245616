package io.clawfleet.shared.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code cluster.kubernetesServiceDns}: Hazelcast's Kubernetes DNS discovery (the members are the addresses a headless
 * service's name resolves to). Two nodes finding each other this way, by a name, run in WorkloadsAsProcessesIT.
 */
class KubernetesDnsDiscoveryTest {

    @Test
    void theServiceNameIsLookedUpAtTheMemberPortInsteadOfASeedList() {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_HOST", "10.1.0.7",
                "CLAWFLEET_CLUSTER_PORT", "5701", "CLAWFLEET_CLUSTER_KUBERNETES_SERVICE_DNS", "clawfleet-cluster"), Map.of());
        Config hazelcast = ClusterBootstrap.hazelcastConfig(config.cluster(), new Member("n1", Set.of("worker"), "http://10.1.0.7:8080"));
        JoinConfig join = hazelcast.getNetworkConfig().getJoin();
        assertThat(join.getTcpIpConfig().isEnabled()).isFalse();
        assertThat(join.getMulticastConfig().isEnabled()).isFalse();
        assertThat(join.getKubernetesConfig().isEnabled()).isTrue();
        assertThat(join.getKubernetesConfig().getProperties())
                .containsEntry("service-dns", "clawfleet-cluster").containsEntry("service-port", "5701")
                .doesNotContainKey("service-name");
        assertThat(hazelcast.getNetworkConfig().getPublicAddress()).isEqualTo("10.1.0.7");
    }

    @Test
    void itIsOneWayToFindTheMembersNotOneOfSeveral() {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_KUBERNETES_SERVICE_DNS", "clawfleet-cluster",
                "CLAWFLEET_CLUSTER_MEMBERS", "10.1.0.8:5701"), Map.of()))
                .hasMessageContaining("cluster.kubernetesServiceDns").hasMessageContaining("cluster.members");
    }
}
