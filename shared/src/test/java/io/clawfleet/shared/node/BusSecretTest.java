package io.clawfleet.shared.node;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.config.ConfigException;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.testing.TestNodes;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BusSecretTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";

    @Test
    void aClusteredNodeThatSignsRefusesToStartWithoutTheSecret() {
        for (String roles : new String[]{"worker", "sandbox", "gateway", "gateway,worker,sandbox,scheduler"}) {
            assertThatThrownBy(() -> NodeRuntime.signer(TestNodes.config(roles, Map.of()), true))
                    .as(roles).isInstanceOf(IllegalStateException.class).hasMessageContaining("CLAWFLEET_CLUSTER_SECRET");
        }
    }

    @Test
    void aNodeAloneOrOnlyASchedulerNeedsNoSecret() {
        assertThat(NodeRuntime.signer(TestNodes.config("gateway,worker,sandbox,scheduler", Map.of()), false)).isNotNull();
        assertThat(NodeRuntime.signer(TestNodes.config("scheduler", Map.of()), true)).isNotNull();
    }

    @Test
    void nodesWithTheSameSecretAcceptEachOthersSignatures() {
        BusSigner worker = NodeRuntime.signer(TestNodes.config("worker", Map.of("cluster.secret", SECRET)), true);
        BusSigner sandbox = NodeRuntime.signer(TestNodes.config("sandbox", Map.of("cluster.secret", SECRET)), true);
        var chunk = new io.clawfleet.shared.message.StreamChunk(1, 0, "hi");
        assertThat(sandbox.verify(BusSigner.CHUNK, "gw", chunk, "", worker.sign(BusSigner.CHUNK, "gw", chunk, "")))
                .isEqualTo(BusSigner.Verdict.VALID);
    }

    @Test
    void aShortSecretIsAConfigProblemThatDoesNotEchoIt() {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_SECRET", "tooShortSecretValue"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("CLAWFLEET_CLUSTER_SECRET").hasMessageContaining("at least 32")
                .hasMessageNotContaining("tooShortSecretValue");
    }

    @Test
    void theSecretIsNeverPrintedWithTheConfig() {
        var config = TestNodes.config("worker", Map.of("cluster.secret", SECRET));
        assertThat(config.cluster().secret()).isEqualTo(SECRET);
        assertThat(config.toString()).doesNotContain(SECRET);
    }
}
