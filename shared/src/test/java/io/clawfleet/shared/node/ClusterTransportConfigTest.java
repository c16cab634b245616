package io.clawfleet.shared.node;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigException;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.testing.TestNodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * How a node picks its event-bus transport: mutual TLS from {@code cluster.tls.dir}, plain TCP only when the operator
 * says {@code --insecure-cluster}, and nothing to pick when it runs alone. (Loading real certificates is covered in the
 * deploy module, which has the CA: ClusterCaTest.)
 */
class ClusterTransportConfigTest {

    private static final Clock CLOCK = Clock.systemUTC();

    @TempDir
    Path dir;

    @Test
    void aClusteredNodeWithoutACertificateRefusesToStartAndSaysBothWaysOut() {
        for (String roles : new String[]{"worker", "sandbox", "gateway,scheduler"}) {
            // given a clustered node with neither cluster.tls.dir nor cluster.insecure
            ClawfleetConfig config = TestNodes.config(roles, Map.of());

            // when its transport is chosen / then it refuses, naming the setting, the flag and the command for its roles
            assertThatThrownBy(() -> NodeRuntime.clusterTls(config, true, CLOCK)).as(roles)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("CLAWFLEET_CLUSTER_TLS_DIR")
                    .hasMessageContaining("--insecure-cluster")
                    .hasMessageContaining("CLAWFLEET_CLUSTER_INSECURE=true")
                    .hasMessageContaining("clawfleet certs init --dir certs --issue " + String.join(",",
                            java.util.Arrays.stream(roles.split(",")).sorted().toList()));
        }
    }

    @Test
    void anInsecureClusteredNodeRunsThePlainBus() {
        // given a clustered node started with --insecure-cluster
        ClawfleetConfig config = TestNodes.config("worker", Map.of("cluster.insecure", "true"));
        assertThat(config.cluster().insecure()).isTrue();

        // when its transport is chosen / then there is no TLS, and no refusal
        assertThatCode(() -> NodeRuntime.clusterTls(config, true, CLOCK)).doesNotThrowAnyException();
        assertThat(NodeRuntime.clusterTls(config, true, CLOCK)).isNull();
    }

    @Test
    void aNodeAloneNeedsNoCertificateAndReadsNone() {
        // given a node that is not clustered, with and without a certificate folder (one that does not exist)
        ClawfleetConfig plain = TestNodes.config("gateway,worker,sandbox,scheduler", Map.of());
        ClawfleetConfig pointed = TestNodes.config("gateway,worker,sandbox,scheduler",
                Map.of("cluster.tls.dir", dir.resolve("missing").toString()));

        // when its transport is chosen / then there is none to choose: no TLS, nothing read
        assertThat(NodeRuntime.clusterTls(plain, false, CLOCK)).isNull();
        assertThat(NodeRuntime.clusterTls(pointed, false, CLOCK)).isNull();
    }

    @Test
    void aClusteredNodeWithAnEmptyCertificateFolderRefusesNamingTheMissingFile() throws Exception {
        // given a clustered node whose cluster.tls.dir holds nothing
        Path empty = Files.createDirectories(dir.resolve("certs"));
        ClawfleetConfig config = TestNodes.config("worker", Map.of("cluster.tls.dir", empty.toString()));

        // when its transport is chosen / then the certificate is not silently skipped: the missing file is named
        assertThatThrownBy(() -> NodeRuntime.clusterTls(config, true, CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(empty.resolve("tls.crt") + " does not exist")
                .hasMessageContaining("clawfleet certs init");
    }

    @Test
    void theTransportSettingsComeFromTheDocumentedEnvironmentNames() {
        // when the environment names a certificate folder and a trust file
        ClawfleetConfig tls = ConfigLoader.load(null, Map.of(
                "CLAWFLEET_CLUSTER_TLS_DIR", "/etc/clawfleet/bus",
                "CLAWFLEET_CLUSTER_TLS_TRUST_FILE", "/etc/clawfleet/trust.crt"), Map.of());
        // then the node reads them, and is not insecure
        assertThat(tls.cluster().tlsDir()).isEqualTo(Path.of("/etc/clawfleet/bus"));
        assertThat(tls.cluster().tlsTrustFile()).isEqualTo(Path.of("/etc/clawfleet/trust.crt"));
        assertThat(tls.cluster().insecure()).isFalse();

        // when the environment says insecure / then it is
        assertThat(ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_INSECURE", "true"), Map.of()).cluster().insecure()).isTrue();

        // and by default there is no certificate folder and the bus is not insecure
        ClawfleetConfig.Cluster defaults = ConfigLoader.load(null, Map.of(), Map.of()).cluster();
        assertThat(defaults.tlsDir()).isNull();
        assertThat(defaults.tlsTrustFile()).isNull();
        assertThat(defaults.insecure()).isFalse();
    }

    @Test
    void insecureTogetherWithACertificateFolderIsAConfigProblem() {
        // when both are set / then the config is refused, saying to choose
        assertThatThrownBy(() -> ConfigLoader.load(null,
                Map.of("CLAWFLEET_CLUSTER_INSECURE", "true", "CLAWFLEET_CLUSTER_TLS_DIR", "/etc/clawfleet/bus"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
                        "cluster.insecure (CLAWFLEET_CLUSTER_INSECURE): cannot be set together with cluster.tls.dir: "
                                + "choose TLS or --insecure-cluster"));
        // and the same from the command line flag and the environment
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_TLS_DIR", "/etc/clawfleet/bus"),
                Map.of("cluster.insecure", "true")))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("cluster.insecure").contains("cluster.tls.dir"));
    }

    @Test
    void aTrustFileWithoutACertificateFolderIsAConfigProblem() {
        // when only the trust file is set / then the config is refused, saying what it needs
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_CLUSTER_TLS_TRUST_FILE", "/etc/clawfleet/trust.crt"),
                Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
                        "cluster.tls.trustFile (CLAWFLEET_CLUSTER_TLS_TRUST_FILE): needs cluster.tls.dir (the node's own "
                                + "certificate and key)"));
    }
}
