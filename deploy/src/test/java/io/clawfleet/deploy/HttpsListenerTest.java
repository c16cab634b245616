package io.clawfleet.deploy;

import io.clawfleet.deploy.certs.ClusterCa;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.config.ConfigException;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * HTTPS at the node (issue 21, edge hardening), for set-ups without a TLS proxy in front: {@code http.tls.cert} and
 * {@code http.tls.key}. A client that trusts the certificate's CA talks HTTPS to it; plain HTTP on that port gets no
 * answer; half a configuration is refused at start.
 */
class HttpsListenerTest {

    @TempDir
    Path temp;

    @Test
    void aNodeWithACertificateServesHttpsAndNoPlainHttp() throws Exception {
        // given a server certificate for 127.0.0.1 from a CA the client trusts
        ClusterCa ca = ClusterCa.create(temp.resolve("ca"), "edge", ClusterCa.CA_DAYS);
        Path server = ca.issue("edge", Set.of(Role.GATEWAY), List.of("127.0.0.1", "localhost"), ClusterCa.NODE_DAYS);
        ClawfleetConfig config = TestNodes.config("gateway", Map.of("operatorKey", "https-test-operator-key-0123456789",
                "http.tls.cert", server.resolve(ClusterTls.CERT_FILE).toString(),
                "http.tls.key", server.resolve(ClusterTls.KEY_FILE).toString()));
        NodeRuntime node = TestNodes.start(config, TestDatabases.freshEmpty(), Roles.of(config));
        try {
            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            trust.setCertificateEntry("ca", ca.certificate());
            TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
            factory.init(trust);
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, factory.getTrustManagers(), null);
            HttpClient client = HttpClient.newBuilder().sslContext(tls).connectTimeout(Duration.ofSeconds(5)).build();

            // when a client asks over HTTPS, with the host name checked against the certificate
            HttpResponse<String> live = client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + node.httpPort() + "/livez"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> api = client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + node.httpPort()
                            + "/api/v1/cluster")).header("authorization", "Bearer https-test-operator-key-0123456789")
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            // then it is answered, and the node names its own address as https
            assertThat(live.statusCode()).isEqualTo(200);
            assertThat(api.statusCode()).as(api.body()).isEqualTo(200);
            assertThat(api.body()).contains("\"http\":\"https://");

            // and plain HTTP on the same port gets no answer
            HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/livez"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()))
                    .isInstanceOf(java.io.IOException.class);
        } finally {
            result(node.stop(), Duration.ofSeconds(60));
        }
    }

    @Test
    void aCertificateWithoutItsKeyOrAFileThatCannotBeReadIsRefusedAtStart() {
        assertThatThrownBy(() -> TestNodes.config("gateway", Map.of("http.tls.cert", temp.resolve("missing.crt").toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("http.tls.key").hasMessageContaining("needs both");
        assertThatThrownBy(() -> TestNodes.config("gateway", Map.of("http.tls.cert", temp.resolve("missing.crt").toString(),
                "http.tls.key", temp.resolve("missing.key").toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("missing.crt cannot be read");
    }
}
