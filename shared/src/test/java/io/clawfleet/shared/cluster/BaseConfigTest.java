package io.clawfleet.shared.cluster;

import com.hazelcast.config.Config;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The Hazelcast settings built in code are the ones Vert.x's default-cluster.xml gives. */
class BaseConfigTest {

    @Test
    void theStructuresVertxUsesAreConfiguredAsItsOwnDefaultFileConfiguresThem() {
        Config fromXml = ConfigUtil.loadConfig();
        Config inCode = ClusterBootstrap.baseConfig();
        // every structure the file names, and no other (looking one up in code also records Hazelcast's "default")
        assertThat(named(inCode.getMultiMapConfigs().keySet())).isEqualTo(named(fromXml.getMultiMapConfigs().keySet()));
        assertThat(named(inCode.getMapConfigs().keySet())).isEqualTo(named(fromXml.getMapConfigs().keySet()));
        assertThat(inCode.getMultiMapConfig("default")).isEqualTo(new Config().getMultiMapConfig("default"));
        fromXml.getMultiMapConfigs().forEach((name, config) ->
                assertThat(inCode.getMultiMapConfig(name)).as(name).isEqualTo(config));
        fromXml.getMapConfigs().forEach((name, config) ->
                assertThat(inCode.getMapConfig(name)).as(name).isEqualTo(config));
        assertThat(inCode.getMultiMapConfigs()).isNotEmpty();
        // and the other settings of the file are Hazelcast's defaults (the join is set per node in hazelcastConfig)
        assertThat(inCode.getCPSubsystemConfig()).isEqualTo(fromXml.getCPSubsystemConfig());
        assertThat(inCode.getProperties()).isEqualTo(fromXml.getProperties());
        assertThat(inCode.getSetConfigs()).isEqualTo(fromXml.getSetConfigs());
        assertThat(inCode.getListConfigs()).isEqualTo(fromXml.getListConfigs());
    }

    private static java.util.Set<String> named(java.util.Set<String> names) {
        return names.stream().filter(n -> !n.equals("default")).collect(java.util.stream.Collectors.toSet());
    }
}
