package io.clawfleet.deploy.certs;

import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.PemTrustOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The cluster CA: its files, the node certificates it issues, what {@link ClusterTls} makes of them, and rotation. */
class ClusterCaTest {

    private static final Clock CLOCK = Clock.systemUTC();
    private static final String OWNER_ONLY = "rw-------";

    @TempDir
    Path temp;

    private Path caDir;

    @BeforeEach
    void folders() {
        caDir = temp.resolve("ca");
    }

    @Test
    void initMakesTheRootTheWorkerIntermediateTheSandboxCaAndTheTrustFilesWithOwnerOnlyKeys() throws Exception {
        // when a CA is made
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);

        // then every file is there, and the keys are readable by the owner alone
        for (String file : List.of(ClusterCa.CA_CERT, ClusterCa.CA_KEY, ClusterCa.WORKER_CA_CERT, ClusterCa.WORKER_CA_KEY,
                ClusterCa.SANDBOX_CA_CERT, ClusterCa.SANDBOX_CA_KEY, ClusterCa.TRUST, ClusterCa.SANDBOX_TRUST, ClusterCa.WORKER_TRUST)) {
            assertThat(caDir.resolve(file)).as(file).isRegularFile();
        }
        for (String key : List.of(ClusterCa.CA_KEY, ClusterCa.WORKER_CA_KEY, ClusterCa.SANDBOX_CA_KEY)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(caDir.resolve(key)))).as(key).isEqualTo(OWNER_ONLY);
        }
        // and the root is a self-signed CA, the intermediate is signed by it and marked as the workers' issuer
        X509Certificate root = only(caDir.resolve(ClusterCa.CA_CERT));
        X509Certificate worker = only(caDir.resolve(ClusterCa.WORKER_CA_CERT));
        assertThat(root).isEqualTo(ca.certificate());
        root.verify(root.getPublicKey());
        worker.verify(root.getPublicKey());
        assertThat(root.getBasicConstraints()).isGreaterThanOrEqualTo(1);
        assertThat(worker.getBasicConstraints()).isZero();
        assertThat(ClusterTls.issuesWorkers(worker)).isTrue();
        assertThat(ClusterTls.issuesWorkers(root)).isFalse();
        // and the sandbox CA is a root of its own (not under the cluster's), marked as the sandbox nodes' issuer
        X509Certificate sandbox = only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT));
        sandbox.verify(sandbox.getPublicKey());
        assertThat(sandbox.getIssuerX500Principal()).isEqualTo(sandbox.getSubjectX500Principal());
        assertThat(ClusterTls.issuesSandboxes(sandbox)).isTrue();
        assertThat(ClusterTls.issuesSandboxes(root)).isFalse();
        assertThat(ClusterTls.issuesSandboxes(worker)).isFalse();
        // and gateways and schedulers trust the root alone, workers the root and the sandbox CA, a sandbox node the
        // workers' intermediate alone
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.TRUST))).containsExactly(root);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.WORKER_TRUST))).containsExactly(root, sandbox);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.SANDBOX_TRUST))).containsExactly(worker);
    }

    @Test
    void aClusterNameWithCommasAndEqualsSignsStaysTextInTheCommonName() throws Exception {
        // when the cluster's name looks like more attributes of a distinguished name
        ClusterCa.create(caDir, "prod,O=evil,OU=admins", ClusterCa.CA_DAYS);
        X509Certificate root = ClusterTls.certificates(caDir.resolve(ClusterCa.CA_CERT)).getFirst();
        // then the subject holds one CN with the whole name in it, and the one O of every Clawfleet CA
        var subject = new org.bouncycastle.asn1.x500.X500Name(root.getSubjectX500Principal().getName());
        assertThat(subject.getRDNs(org.bouncycastle.asn1.x500.style.BCStyle.CN)).hasSize(1);
        assertThat(subject.getRDNs(org.bouncycastle.asn1.x500.style.BCStyle.CN)[0].getFirst().getValue().toString())
                .startsWith("clawfleet cluster CA prod,O=evil,OU=admins ");
        assertThat(subject.getRDNs(org.bouncycastle.asn1.x500.style.BCStyle.O)).hasSize(1);
        assertThat(subject.getRDNs(org.bouncycastle.asn1.x500.style.BCStyle.OU)).isEmpty();
    }

    @Test
    void creatingASecondCaInTheSameFolderRefusesNamesRotateAndKeepsTheFirst() throws Exception {
        // given a CA
        ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        String root = Files.readString(caDir.resolve(ClusterCa.CA_CERT));
        String key = Files.readString(caDir.resolve(ClusterCa.CA_KEY));

        // when another is made in the same folder / then it is refused, pointing at rotation
        assertThatThrownBy(() -> ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already holds a CA")
                .hasMessageContaining("clawfleet certs rotate --dir " + caDir);
        // and the first CA is untouched
        assertThat(Files.readString(caDir.resolve(ClusterCa.CA_CERT))).isEqualTo(root);
        assertThat(Files.readString(caDir.resolve(ClusterCa.CA_KEY))).isEqualTo(key);
    }

    @Test
    void aWorkersCertificateChainsThroughTheWorkerIntermediateToTheRootAndPassesPkix() throws Exception {
        // given a CA
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);

        // when a worker's certificate is issued
        Path node = ca.issue("worker-1", Set.of(Role.WORKER), List.of("worker-1.example", "10.0.0.7"), ClusterCa.NODE_DAYS);

        // then its folder holds the leaf, the worker intermediate and the root, in that order, and an owner-only key
        assertThat(node).isEqualTo(caDir.resolve("worker-1"));
        List<X509Certificate> chain = ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE));
        X509Certificate root = only(caDir.resolve(ClusterCa.CA_CERT));
        X509Certificate intermediate = only(caDir.resolve(ClusterCa.WORKER_CA_CERT));
        assertThat(chain).hasSize(3);
        assertThat(chain.get(1)).isEqualTo(intermediate);
        assertThat(chain.get(2)).isEqualTo(root);
        chain.get(0).verify(intermediate.getPublicKey());
        assertThat(chain.get(0).getBasicConstraints()).isEqualTo(-1);
        assertThat(chain.get(0).getExtendedKeyUsage()).contains("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(node.resolve(ClusterTls.KEY_FILE))))
                .isEqualTo(OWNER_ONLY);
        // and the roles come back from the certificate
        assertThat(ClusterTls.rolesOf(chain.get(0))).containsExactly(Role.WORKER);
        // and the JDK's PKIX accepts it, as client and as server, against the cluster's trust file
        X509TrustManager cluster = pkix(ClusterTls.certificates(caDir.resolve(ClusterCa.TRUST)));
        X509Certificate[] presented = chain.toArray(X509Certificate[]::new);
        assertThatCode(() -> cluster.checkClientTrusted(presented, "UNKNOWN")).doesNotThrowAnyException();
        assertThatCode(() -> cluster.checkServerTrusted(presented, "UNKNOWN")).doesNotThrowAnyException();
        // and against what a sandbox node trusts, the worker intermediate alone
        X509TrustManager sandbox = pkix(ClusterTls.certificates(caDir.resolve(ClusterCa.SANDBOX_TRUST)));
        assertThatCode(() -> sandbox.checkClientTrusted(presented, "UNKNOWN")).doesNotThrowAnyException();
    }

    @Test
    void gatewaysAndSchedulersAreIssuedByTheRootSoASandboxNodesTrustRejectsThem() throws Exception {
        // given a CA
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        X509Certificate root = only(caDir.resolve(ClusterCa.CA_CERT));
        X509TrustManager cluster = pkix(List.of(root));
        X509TrustManager sandbox = pkix(ClusterTls.certificates(caDir.resolve(ClusterCa.SANDBOX_TRUST)));

        for (Role role : List.of(Role.GATEWAY, Role.SCHEDULER)) {
            // when a certificate for a role other than worker is issued
            List<X509Certificate> chain = ClusterTls.certificates(
                    ca.issue(role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS).resolve(ClusterTls.CERT_FILE));

            // then it is signed by the root directly, the cluster accepts it, and a sandbox node's trust does not
            assertThat(chain).as(role.id()).hasSize(2);
            assertThat(chain.get(1)).as(role.id()).isEqualTo(root);
            assertThat(ClusterTls.rolesOf(chain.getFirst())).as(role.id()).containsExactly(role);
            X509Certificate[] presented = chain.toArray(X509Certificate[]::new);
            assertThatCode(() -> cluster.checkClientTrusted(presented, "UNKNOWN")).as(role.id()).doesNotThrowAnyException();
            assertThatThrownBy(() -> sandbox.checkClientTrusted(presented, "UNKNOWN")).as(role.id())
                    .isInstanceOf(CertificateException.class);
        }
    }

    @Test
    void aSandboxNodesCertificateComesFromTheSandboxCaWhichOnlyWorkersTrust() throws Exception {
        // given a CA
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        X509Certificate sandboxCa = only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT));

        // when a sandbox node's certificate is issued
        X509Certificate[] chain = ClusterTls.certificates(ca.issue("sandbox", Set.of(Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS)
                .resolve(ClusterTls.CERT_FILE)).toArray(X509Certificate[]::new);

        // then it is signed by the sandbox CA, which is all its chain holds besides the leaf
        assertThat(chain).hasSize(2);
        assertThat(chain[1]).isEqualTo(sandboxCa);
        chain[0].verify(sandboxCa.getPublicKey());
        // and what workers trust accepts it, what gateways and schedulers trust (the cluster root) and what sandbox
        // nodes trust do not
        assertThatCode(() -> pkix(ClusterTls.certificates(caDir.resolve(ClusterCa.WORKER_TRUST))).checkClientTrusted(chain, "UNKNOWN"))
                .doesNotThrowAnyException();
        for (String refusing : List.of(ClusterCa.TRUST, ClusterCa.SANDBOX_TRUST)) {
            X509TrustManager trust = pkix(ClusterTls.certificates(caDir.resolve(refusing)));
            assertThatThrownBy(() -> trust.checkClientTrusted(chain, "UNKNOWN")).as(refusing).isInstanceOf(CertificateException.class);
        }
    }

    @Test
    void aGatewayThatTrustsTheSandboxCaDoesNotStart() {
        // given a gateway's and scheduler's certificate, and the trust file of a worker (which holds the sandbox CA)
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        Path gateway = ca.issue("gateway", Set.of(Role.GATEWAY, Role.SCHEDULER), List.of(), ClusterCa.NODE_DAYS);

        for (Role role : List.of(Role.GATEWAY, Role.SCHEDULER)) {
            // when a gateway or a scheduler starts with it / then it is refused, saying why and what to give it
            assertThatThrownBy(() -> ClusterTls.load(gateway, caDir.resolve(ClusterCa.WORKER_TRUST), Set.of(role), CLOCK))
                    .as(role.id())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("only a node with the worker role may trust the sandbox nodes' CA")
                    .hasMessageContaining("clawfleet sandbox CA test");
        }
        // and with its own folder's ca.crt it starts
        assertThatCode(() -> ClusterTls.load(gateway, null, Set.of(Role.GATEWAY), CLOCK)).doesNotThrowAnyException();
    }

    @Test
    void aFolderFromBeforeTheSandboxCaGetsOneWhenOpenedAndItsTrustFilesWithIt() throws Exception {
        // given a CA folder as an earlier version left it: no sandbox CA, no workers' trust file
        ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS).issue("worker", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        for (String file : List.of(ClusterCa.SANDBOX_CA_CERT, ClusterCa.SANDBOX_CA_KEY, ClusterCa.WORKER_TRUST)) {
            Files.delete(caDir.resolve(file));
        }
        X509Certificate root = only(caDir.resolve(ClusterCa.CA_CERT));

        // when it is opened
        ClusterCa ca = ClusterCa.open(caDir);

        // then it says it made the sandbox CA, whose key is the owner's alone
        assertThat(ca.madeSandboxCa()).isTrue();
        X509Certificate sandboxCa = only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT));
        assertThat(ClusterTls.issuesSandboxes(sandboxCa)).isTrue();
        assertThat(sandboxCa.getSubjectX500Principal().getName()).contains("clawfleet sandbox CA test ");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(caDir.resolve(ClusterCa.SANDBOX_CA_KEY))))
                .isEqualTo(OWNER_ONLY);
        // and the worker's folder now trusts it too
        assertThat(ClusterTls.certificates(caDir.resolve("worker").resolve(ClusterTls.CA_FILE))).containsExactly(root, sandboxCa);
        // and a sandbox node issued now comes from it; opened again, nothing is made
        ca.issue("sandbox", Set.of(Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS);
        assertThat(ClusterTls.certificates(caDir.resolve("sandbox").resolve(ClusterTls.CERT_FILE)).get(1)).isEqualTo(sandboxCa);
        assertThat(ClusterCa.open(caDir).madeSandboxCa()).isFalse();
    }

    @Test
    void aSandboxOnlyFolderTrustsTheWorkerIntermediateAndEveryOtherFolderTheRoot() {
        // given a CA
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        X509Certificate root = ca.certificate();

        // when certificates are issued for a sandbox node, a gateway, and a node that is a worker and a sandbox node
        Path sandbox = ca.issue("sandbox", Set.of(Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS);
        Path gateway = ca.issue("gateway", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);
        Path both = ca.issue("both", Set.of(Role.WORKER, Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS);

        // then the sandbox node's ca.crt holds the worker intermediate alone
        List<X509Certificate> sandboxTrust = ClusterTls.certificates(sandbox.resolve(ClusterTls.CA_FILE));
        assertThat(sandboxTrust).hasSize(1);
        assertThat(ClusterTls.issuesWorkers(sandboxTrust.getFirst())).isTrue();
        assertThat(sandboxTrust.getFirst()).isNotEqualTo(root);
        // and the others' hold the root (a node that is more than a sandbox node talks to every role), a worker's the
        // sandbox CA as well
        assertThat(ClusterTls.certificates(gateway.resolve(ClusterTls.CA_FILE))).containsExactly(root);
        assertThat(ClusterTls.certificates(both.resolve(ClusterTls.CA_FILE)))
                .containsExactly(root, only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT)));
    }

    @Test
    void everyRolesFolderLoadsWithItsRoles() {
        // given a CA and a folder per role, and one node with two roles
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        for (Role role : Role.values()) {
            ca.issue(role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS);
        }
        ca.issue("n1", Set.of(Role.WORKER, Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);

        // when each is loaded as a node of its roles / then it loads, carrying exactly them
        for (Role role : Role.values()) {
            ClusterTls tls = ClusterTls.load(caDir.resolve(role.id()), null, Set.of(role), CLOCK);
            assertThat(tls.roles()).as(role.id()).containsExactly(role);
            assertThat(tls.trusted()).as(role.id()).hasSize(role == Role.WORKER ? 2 : 1);
        }
        assertThat(ClusterTls.load(caDir.resolve("n1"), null, Set.of(Role.WORKER, Role.GATEWAY), CLOCK).roles())
                .containsExactlyInAnyOrder(Role.WORKER, Role.GATEWAY);
        // and a certificate may carry more roles than the node runs (with the trust of the roles it runs)
        assertThat(ClusterTls.load(caDir.resolve("n1"), caDir.resolve(ClusterCa.TRUST), Set.of(Role.GATEWAY), CLOCK).roles())
                .containsExactlyInAnyOrder(Role.WORKER, Role.GATEWAY);
    }

    @Test
    void loadRefusesACertificateWhoseRolesDoNotCoverTheNodesAndSaysWhatToIssue() {
        // given a gateway's certificate
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        Path gateway = ca.issue("gateway", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);

        // when a node that is a gateway and a worker starts with it / then it is refused, naming both sets of roles
        assertThatThrownBy(() -> ClusterTls.load(gateway, null, Set.of(Role.GATEWAY, Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(gateway.resolve(ClusterTls.CERT_FILE).toString())
                .hasMessageContaining("carries roles [gateway] but this node has roles [gateway, worker]")
                .hasMessageContaining("clawfleet certs issue --dir <ca-dir> --name <node> --roles gateway,worker");
    }

    @Test
    void loadRefusesACertificateThatIsNotValidNow() {
        // given a worker's certificate that expired yesterday, and one that starts tomorrow
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        Instant now = Instant.now();
        Path expired = ca.issue("expired", Set.of(Role.WORKER), List.of(), now.minus(Duration.ofDays(30)), now.minus(Duration.ofDays(1)));
        Path early = ca.issue("early", Set.of(Role.WORKER), List.of(), now.plus(Duration.ofDays(1)), now.plus(Duration.ofDays(30)));

        // when they are loaded / then both are refused, saying when they are valid
        assertThatThrownBy(() -> ClusterTls.load(expired, null, Set.of(Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(expired.resolve(ClusterTls.CERT_FILE).toString())
                .hasMessageContaining("is not valid now")
                .hasMessageContaining("issue a new one");
        assertThatThrownBy(() -> ClusterTls.load(early, null, Set.of(Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is not valid now");
        // and a good certificate is refused too on a clock past its end: the node's clock decides
        Path good = ca.issue("good", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        assertThatCode(() -> ClusterTls.load(good, null, Set.of(Role.WORKER), CLOCK)).doesNotThrowAnyException();
        Clock later = Clock.offset(CLOCK, ClusterCa.NODE_DAYS.plusDays(1));
        assertThatThrownBy(() -> ClusterTls.load(good, null, Set.of(Role.WORKER), later))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is not valid now");
    }

    @Test
    void loadRefusesASandboxNodeThatTrustsTheRoot() {
        // given a sandbox node's certificate
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        Path sandbox = ca.issue("sandbox", Set.of(Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS);
        Path trust = caDir.resolve(ClusterCa.TRUST);

        // when it is loaded trusting the cluster's root (which issues gateways' certificates too)
        // then it is refused, saying what a sandbox node must trust and which file holds what
        assertThatThrownBy(() -> ClusterTls.load(sandbox, trust, Set.of(Role.SANDBOX), CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("a sandbox node must trust only the CA that issues workers' certificates")
                .hasMessageContaining(ClusterTls.WORKER_ISSUER_URI)
                .hasMessageContaining(trust.toString())
                .hasMessageContaining(ca.certificate().getSubjectX500Principal().getName());
        // and a sandbox folder whose ca.crt was replaced by the root is refused the same way
        copy(trust, sandbox.resolve(ClusterTls.CA_FILE));
        assertThatThrownBy(() -> ClusterTls.load(sandbox, null, Set.of(Role.SANDBOX), CLOCK))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(ClusterTls.WORKER_ISSUER_URI);
    }

    @Test
    void loadRefusesAKeyThatIsNotTheCertificates() {
        // given a worker's certificate next to the gateway's key
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        Path worker = ca.issue("worker", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        Path gateway = ca.issue("gateway", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);
        Path mixed = temp.resolve("mixed");
        copy(worker.resolve(ClusterTls.CERT_FILE), mixed.resolve(ClusterTls.CERT_FILE));
        copy(worker.resolve(ClusterTls.CA_FILE), mixed.resolve(ClusterTls.CA_FILE));
        copy(gateway.resolve(ClusterTls.KEY_FILE), mixed.resolve(ClusterTls.KEY_FILE));

        // when it is loaded / then the key is refused, naming both files
        assertThatThrownBy(() -> ClusterTls.load(mixed, null, Set.of(Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(mixed.resolve(ClusterTls.KEY_FILE) + " is not the key of the certificate in "
                        + mixed.resolve(ClusterTls.CERT_FILE));
    }

    @Test
    void loadRefusesACertificateFromAnotherCa() {
        // given the cluster's CA, and certificates from another CA
        ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        ClusterCa other = ClusterCa.create(temp.resolve("other"), "other", ClusterCa.CA_DAYS);
        Path trust = caDir.resolve(ClusterCa.TRUST);

        for (Role role : List.of(Role.GATEWAY, Role.WORKER, Role.SCHEDULER)) {
            Path rogue = other.issue("rogue-" + role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS);

            // when one is loaded trusting the cluster's CA / then it is refused, naming the trust file
            assertThatThrownBy(() -> ClusterTls.load(rogue, trust, Set.of(role), CLOCK)).as(role.id())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the certificate in " + rogue.resolve(ClusterTls.CERT_FILE) + " is not one the cluster trusts")
                    .hasMessageContaining(trust.toString());
        }
    }

    @Test
    void loadRefusesAFolderWithoutItsFilesNamingTheMissingOne() throws Exception {
        // given an empty folder
        Path empty = Files.createDirectories(temp.resolve("empty"));

        // when it is loaded / then the missing file is named, with how to make one
        assertThatThrownBy(() -> ClusterTls.load(empty, null, Set.of(Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(empty.resolve(ClusterTls.CERT_FILE) + " does not exist")
                .hasMessageContaining("clawfleet certs init");
    }

    @Test
    void issueRefusesNamesThatAreNotASingleLowerCaseFolderName() {
        // given a CA
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);

        // when a certificate is issued under a bad name / then it is refused, and nothing is written anywhere
        List<String> bad = new ArrayList<>(List.of("../x", "", "Upper", "..", ".", "a/b", "-x", ".x", "a b", "x".repeat(64)));
        bad.add(null);
        for (String name : bad) {
            assertThatThrownBy(() -> ca.issue(name, Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS)).as(String.valueOf(name))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("a certificate name is 1 to 63 of a-z, 0-9");
        }
        assertThat(temp.resolve("x")).doesNotExist();
        assertThat(ca.nodeFolders()).isEmpty();
        // and the longest good name works
        assertThat(ca.issue("x".repeat(63), Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS)).isDirectory();
        // and a certificate without a role is refused
        assertThatThrownBy(() -> ca.issue("none", Set.of(), List.of(), ClusterCa.NODE_DAYS))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one role");
    }

    @Test
    void aRotationTrustsBothCasThenMovesEveryFolderToTheNewOne() throws Exception {
        // given a CA with a folder per role, and a copy of the worker's folder as it is now
        ClusterCa old = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        for (Role role : Role.values()) {
            old.issue(role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS);
        }
        X509Certificate oldRoot = old.certificate();
        X509Certificate oldWorkerCa = only(caDir.resolve(ClusterCa.WORKER_CA_CERT));
        X509Certificate oldSandboxCa = only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT));
        Path oldWorker = temp.resolve("old-worker");
        for (String file : List.of(ClusterTls.CERT_FILE, ClusterTls.KEY_FILE, ClusterTls.CA_FILE)) {
            copy(caDir.resolve("worker").resolve(file), oldWorker.resolve(file));
        }
        // (a rotation comes long after the CA was made; the same second has a test of its own)
        nextSecond();

        // when the rotation starts
        ClusterCa fresh = ClusterCa.rotate(caDir, "test", ClusterCa.CA_DAYS);

        // then the cluster trusts both roots, and a sandbox node both worker intermediates
        X509Certificate newRoot = fresh.certificate();
        X509Certificate newWorkerCa = only(caDir.resolve(ClusterCa.WORKER_CA_CERT));
        X509Certificate newSandboxCa = only(caDir.resolve(ClusterCa.SANDBOX_CA_CERT));
        assertThat(newRoot).isNotEqualTo(oldRoot);
        assertThat(newSandboxCa).isNotEqualTo(oldSandboxCa);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.WORKER_TRUST)))
                .containsExactly(newRoot, oldRoot, newSandboxCa, oldSandboxCa);
        assertThat(only(caDir.resolve(ClusterCa.PREVIOUS_SANDBOX_CA_CERT))).isEqualTo(oldSandboxCa);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.TRUST))).containsExactly(newRoot, oldRoot);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.SANDBOX_TRUST))).containsExactly(newWorkerCa, oldWorkerCa);
        assertThat(only(caDir.resolve(ClusterCa.PREVIOUS_CA_CERT))).isEqualTo(oldRoot);
        assertThat(only(caDir.resolve(ClusterCa.PREVIOUS_WORKER_CA_CERT))).isEqualTo(oldWorkerCa);
        for (String key : List.of(ClusterCa.CA_KEY, ClusterCa.WORKER_CA_KEY, ClusterCa.PREVIOUS_CA_KEY, ClusterCa.PREVIOUS_WORKER_CA_KEY,
                ClusterCa.SANDBOX_CA_KEY, ClusterCa.PREVIOUS_SANDBOX_CA_KEY)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(caDir.resolve(key)))).as(key).isEqualTo(OWNER_ONLY);
        }
        // and every folder's ca.crt holds both, the sandbox folder's the intermediates
        for (Role role : Role.values()) {
            assertThat(ClusterTls.certificates(caDir.resolve(role.id()).resolve(ClusterTls.CA_FILE))).as(role.id())
                    .containsExactlyElementsOf(role == Role.SANDBOX ? List.of(newWorkerCa, oldWorkerCa)
                            : role == Role.WORKER ? List.of(newRoot, oldRoot, newSandboxCa, oldSandboxCa) : List.of(newRoot, oldRoot));
        }
        // and the old CA's certificates still load, and one issued now from the new CA loads too
        for (Role role : Role.values()) {
            assertThatCode(() -> ClusterTls.load(caDir.resolve(role.id()), null, Set.of(role), CLOCK)).as(role.id())
                    .doesNotThrowAnyException();
        }
        Path joined = fresh.issue("joined", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        assertThat(ClusterTls.certificates(joined.resolve(ClusterTls.CERT_FILE)).get(2)).isEqualTo(newRoot);
        assertThat(ClusterTls.load(joined, null, Set.of(Role.WORKER), CLOCK).trusted())
                .containsExactly(newRoot, oldRoot, newSandboxCa, oldSandboxCa);
        // and it cannot end before the old certificates are replaced: the first such folder is named
        String trustDuring = Files.readString(caDir.resolve(ClusterCa.TRUST));
        assertThatThrownBy(fresh::finishRotation)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(caDir.resolve("gateway") + " still holds a certificate of the previous CA")
                .hasMessageContaining("--reissue");
        assertThat(Files.readString(caDir.resolve(ClusterCa.TRUST))).isEqualTo(trustDuring);
        assertThat(caDir.resolve(ClusterCa.PREVIOUS_CA_KEY)).exists();

        // when every folder is issued again, and the rotation ends
        List<Path> reissued = ClusterCa.open(caDir).reissueAll(ClusterCa.NODE_DAYS);
        ClusterCa.open(caDir).finishRotation();

        // then every folder was issued again, with its roles
        assertThat(reissued).containsExactlyInAnyOrderElementsOf(fresh.nodeFolders());
        assertThat(reissued).hasSize(Role.values().length + 1);
        // and only the new CA is trusted, and the previous CA's files are gone
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.TRUST))).containsExactly(newRoot);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.SANDBOX_TRUST))).containsExactly(newWorkerCa);
        assertThat(ClusterTls.certificates(caDir.resolve(ClusterCa.WORKER_TRUST))).containsExactly(newRoot, newSandboxCa);
        for (String file : List.of(ClusterCa.PREVIOUS_CA_CERT, ClusterCa.PREVIOUS_CA_KEY, ClusterCa.PREVIOUS_WORKER_CA_CERT,
                ClusterCa.PREVIOUS_WORKER_CA_KEY, ClusterCa.PREVIOUS_SANDBOX_CA_CERT, ClusterCa.PREVIOUS_SANDBOX_CA_KEY)) {
            assertThat(caDir.resolve(file)).as(file).doesNotExist();
        }
        // and every folder loads, trusting the new CAs, and its chain passes PKIX against them and not the old ones
        X509TrustManager newOnly = pkix(List.of(newRoot, newSandboxCa));
        X509TrustManager oldOnly = pkix(List.of(oldRoot, oldSandboxCa));
        for (Path folder : fresh.nodeFolders()) {
            X509Certificate[] chain = ClusterTls.certificates(folder.resolve(ClusterTls.CERT_FILE)).toArray(X509Certificate[]::new);
            Set<Role> roles = ClusterTls.rolesOf(chain[0]);
            ClusterTls tls = ClusterTls.load(folder, null, roles, CLOCK);
            assertThat(tls.roles()).as(folder.toString()).isEqualTo(roles);
            assertThat(tls.trusted()).as(folder.toString()).containsExactlyElementsOf(ClusterTls.workersOnly(roles) ? List.of(newWorkerCa)
                    : roles.contains(Role.WORKER) ? List.of(newRoot, newSandboxCa) : List.of(newRoot));
            assertThatCode(() -> newOnly.checkClientTrusted(chain, "UNKNOWN")).as(folder.toString()).doesNotThrowAnyException();
            assertThatThrownBy(() -> oldOnly.checkClientTrusted(chain, "UNKNOWN")).as(folder.toString())
                    .isInstanceOf(CertificateException.class);
        }
        // and the worker's certificate from before the rotation is no longer one the cluster trusts
        assertThatThrownBy(() -> ClusterTls.load(oldWorker, caDir.resolve(ClusterCa.TRUST), Set.of(Role.WORKER), CLOCK))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is not one the cluster trusts");
    }

    @Test
    void aRotationInTheSameSecondAsTheCaStillTellsTheOldCertificatesApart() throws Exception {
        // given a CA made at the start of a second, with a gateway's certificate
        startOfASecond();
        ClusterCa old = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
        old.issue("gateway", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);

        // when the rotation starts within the same second (a script that sets up and rotates at once)
        ClusterCa fresh = ClusterCa.rotate(caDir, "test", ClusterCa.CA_DAYS);

        // then the rotation cannot end with the old certificate in place (ending it would drop the CA the gateway's
        // certificate comes from, and the gateway from the cluster)
        assertThatThrownBy(fresh::finishRotation)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(caDir.resolve("gateway") + " still holds a certificate of the previous CA");
        // and the new CA is told apart from the old one by name too (peers list trusted CAs by subject in the handshake)
        assertThat(fresh.certificate().getSubjectX500Principal()).isNotEqualTo(old.certificate().getSubjectX500Principal());
    }

    @Test
    void aSecondRotationBeforeTheFirstEndsIsRefusedAndAFinishWithoutRotationToo() {
        // given a CA that is not in a rotation
        ClusterCa ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);

        // when it is finished / then it is refused, saying so
        assertThatThrownBy(ca::finishRotation).isInstanceOf(IllegalStateException.class).hasMessageContaining("is not in a rotation");

        // when it is rotated twice
        ClusterCa.rotate(caDir, "test", ClusterCa.CA_DAYS);
        String trust = readString(caDir.resolve(ClusterCa.TRUST));
        // then the second is refused, naming the steps that end the first, and changes nothing
        assertThatThrownBy(() -> ClusterCa.rotate(caDir, "test", ClusterCa.CA_DAYS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is already in a rotation")
                .hasMessageContaining("--reissue")
                .hasMessageContaining("--finish");
        assertThat(readString(caDir.resolve(ClusterCa.TRUST))).isEqualTo(trust);
    }

    /**
     * Real TLS handshakes, with the options the clustered event bus builds: it copies its {@link EventBusOptions}
     * through JSON into the options of its server and its clients.
     */
    @Nested
    class Handshakes {

        private Vertx vertx;
        private ClusterCa ca;
        private final AtomicInteger accepted = new AtomicInteger();
        private final List<Throwable> serverErrors = new java.util.concurrent.CopyOnWriteArrayList<>();
        /** Held until the end: Vert.x closes a client (and its connections) once nothing references it. */
        private final List<NetClient> clients = new ArrayList<>();

        @BeforeEach
        void start() {
            vertx = Vertx.vertx();
            ca = ClusterCa.create(caDir, "test", ClusterCa.CA_DAYS);
            for (Role role : Role.values()) {
                ca.issue(role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS);
            }
        }

        @AfterEach
        void stop() {
            result(vertx.close());
        }

        @Test
        void aWorkerReachesASandboxNodeAndAGatewayOverTls13() {
            for (Role server : List.of(Role.SANDBOX, Role.GATEWAY)) {
                // given a node of that role listening
                accepted.set(0);
                int port = listen(node(server));

                // when a worker connects and sends bytes / then they come back, over TLS 1.3
                assertThat(result(ping(port, client(node(Role.WORKER))))).as(server.id()).isEqualTo("TLSv1.3 ping");
                assertThat(accepted).as(server.id()).hasValue(1);
            }
        }

        @Test
        void theOtherRolesReachAGatewayButNotASandboxNode() {
            // given a gateway and a sandbox node listening
            int gateway = listen(node(Role.GATEWAY));
            for (Role role : List.of(Role.GATEWAY, Role.SCHEDULER)) {
                // when a node of another role connects to the gateway / then it gets through
                assertThat(result(ping(gateway, client(node(role))))).as(role.id()).isEqualTo("TLSv1.3 ping");
            }
            accepted.set(0);
            int sandbox = listen(node(Role.SANDBOX));
            for (Role role : List.of(Role.GATEWAY, Role.SCHEDULER)) {
                // when it connects to the sandbox node (it trusts the sandbox node's certificate, so the refusal is the
                // sandbox node's: it asks for a certificate from the worker CA, which this node has not got)
                // then the handshake fails with the sandbox node's alert, and the sandbox node never sees a connection
                assertRefusedByTheServer(ping(sandbox, client(node(role))), role.id());
            }
            assertThat(accepted).hasValue(0);
        }

        @Test
        void aSandboxNodesCertificateReachesAWorkerButNotAGatewayNorAScheduler() {
            // given a worker listening
            int worker = listen(node(Role.WORKER));
            // when a sandbox node connects (as it does to answer a call) / then it gets through
            assertThat(result(ping(worker, client(node(Role.SANDBOX))))).isEqualTo("TLSv1.3 ping");
            for (Role role : List.of(Role.GATEWAY, Role.SCHEDULER)) {
                // given a gateway or a scheduler listening
                accepted.set(0);
                int port = listen(node(role));
                // when a sandbox host taken over connects with its certificate, trusting any server (so the refusal
                // is the listener's) / then the handshake fails there, and the listener never sees a connection
                assertRefusedByTheServer(ping(port, presenting(caDir.resolve("sandbox")).setTrustAll(true)), role.id());
                assertThat(accepted).as(role.id()).hasValue(0);
                // and the same client with a worker's certificate gets through: the sandbox CA is what is refused
                assertThat(result(ping(port, presenting(caDir.resolve("worker")).setTrustAll(true)))).isEqualTo("TLSv1.3 ping");
            }
        }

        @Test
        void aCertificateFromAnotherCaDoesNotReachAGateway() {
            // given a gateway listening, and a client with a gateway's certificate from another CA that trusts any server
            int port = listen(node(Role.GATEWAY));
            Path rogue = ClusterCa.create(temp.resolve("other"), "other", ClusterCa.CA_DAYS)
                    .issue("rogue", Set.of(Role.GATEWAY, Role.WORKER), List.of(), ClusterCa.NODE_DAYS);

            // when it connects / then the gateway refuses it
            assertRefusedByTheServer(ping(port, presenting(rogue).setTrustAll(true)), "another CA's certificate");
            assertThat(accepted).hasValue(0);
        }

        @Test
        void aClientWithoutACertificateDoesNotReachAGateway() {
            // given a gateway listening
            int port = listen(node(Role.GATEWAY));

            // when a client that presents no certificate connects / then the gateway refuses it
            NetClientOptions anonymous = new NetClientOptions().setSsl(true).setTrustAll(true)
                    .setHostnameVerificationAlgorithm("").setEnabledSecureTransportProtocols(Set.of(ClusterTls.PROTOCOL));
            assertThat(assertRefusedByTheServer(ping(port, anonymous), "no certificate")).contains("Empty client certificate chain");
            assertThat(accepted).hasValue(0);
        }

        @Test
        void anExpiredWorkerCertificateDoesNotReachASandboxNode() {
            // given a sandbox node listening, and a worker's certificate from the cluster's CA that expired yesterday
            int port = listen(node(Role.SANDBOX));
            Instant now = Instant.now();
            Path expired = ca.issue("expired", Set.of(Role.WORKER), List.of(), now.minus(Duration.ofDays(30)), now.minus(Duration.ofDays(1)));
            // (the same client with a valid worker's certificate gets through: the expiry is what is refused)
            assertThat(result(ping(port, presenting(caDir.resolve("worker"))))).isEqualTo("TLSv1.3 ping");
            accepted.set(0);

            // when it connects / then the sandbox node refuses it
            assertThat(assertRefusedByTheServer(ping(port, presenting(expired)), "expired certificate")).contains("validity check failed");
            assertThat(accepted).hasValue(0);
        }

        /**
         * The connection failed, and the server's handshake failed: the refusal is the server's. (The client sees the
         * server's alert, or, when the alert is lost to the connection's reset, only the close: TLS 1.3 finishes the
         * client's side of the handshake before the server checks the client's certificate.)
         */
        private String assertRefusedByTheServer(Future<String> exchange, String what) {
            assertThat(failure(exchange)).as(what).isNotNull();
            Await.until("the server's handshake failure (" + what + ")", Duration.ofSeconds(10), () -> !serverErrors.isEmpty());
            Throwable cause = serverErrors.getFirst();
            while (cause != null && !(cause instanceof javax.net.ssl.SSLHandshakeException)) {
                cause = cause.getCause();
            }
            assertThat(cause).as(what + ": " + serverErrors.getFirst()).isNotNull();
            serverErrors.clear();
            return cause.getMessage();
        }

        private ClusterTls node(Role role) {
            return ClusterTls.load(caDir.resolve(role.id()), null, Set.of(role), CLOCK);
        }

        /** A client with the certificate in {@code folder}, trusting what workers do, built by hand (no checks). */
        private NetClientOptions presenting(Path folder) {
            return new NetClientOptions().setSsl(true).setHostnameVerificationAlgorithm("")
                    .setEnabledSecureTransportProtocols(Set.of(ClusterTls.PROTOCOL))
                    .setKeyCertOptions(new PemKeyCertOptions().setCertPath(folder.resolve(ClusterTls.CERT_FILE).toString())
                            .setKeyPath(folder.resolve(ClusterTls.KEY_FILE).toString()))
                    .setTrustOptions(new PemTrustOptions().addCertPath(caDir.resolve(ClusterCa.WORKER_TRUST).toString()));
        }

        /** As the clustered event bus makes its client. */
        private NetClientOptions client(ClusterTls tls) {
            return new NetClientOptions(tls.apply(new EventBusOptions()).toJson()).setHostnameVerificationAlgorithm("");
        }

        /** An echo server with the options the clustered event bus makes for its server; counts the handshakes it completes. */
        private int listen(ClusterTls tls) {
            NetServerOptions options = new NetServerOptions(tls.apply(new EventBusOptions()).toJson());
            return result(vertx.createNetServer(options).exceptionHandler(serverErrors::add).connectHandler(socket -> {
                accepted.incrementAndGet();
                socket.handler(socket::write);
            }).listen(0, "127.0.0.1")).actualPort();
        }

        /** Connects, sends "ping", and completes with the protocol and the echo, or fails if the connection ends first. */
        private Future<String> ping(int port, NetClientOptions options) {
            NetClient client = vertx.createNetClient(options);
            clients.add(client);
            return client.connect(port, "127.0.0.1").compose(socket -> {
                Promise<String> reply = Promise.promise();
                socket.handler(data -> reply.tryComplete(socket.sslSession().getProtocol() + " " + data));
                socket.exceptionHandler(reply::tryFail);
                socket.closeHandler(v -> reply.tryFail(new IllegalStateException("closed without a reply")));
                socket.write("ping");
                return reply.future();
            });
        }
    }

    private static X509Certificate only(Path file) {
        List<X509Certificate> certificates = ClusterTls.certificates(file);
        assertThat(certificates).as(file.toString()).hasSize(1);
        return certificates.getFirst();
    }

    private static X509TrustManager pkix(List<X509Certificate> anchors) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        for (int i = 0; i < anchors.size(); i++) {
            store.setCertificateEntry("anchor-" + i, anchors.get(i));
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
        factory.init(store);
        for (TrustManager manager : factory.getTrustManagers()) {
            if (manager instanceof X509TrustManager x509) {
                return x509;
            }
        }
        throw new AssertionError("no X.509 trust manager");
    }

    private static void copy(Path from, Path to) {
        try {
            Files.createDirectories(to.getParent());
            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static String readString(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Waits for the next second: CA subjects name the second they were made in. */
    private static void nextSecond() throws InterruptedException {
        long second = Instant.now().getEpochSecond();
        while (Instant.now().getEpochSecond() == second) {
            Thread.sleep(10);
        }
    }

    /** Waits for a second to begin, so that what follows at once falls within it. */
    private static void startOfASecond() throws InterruptedException {
        nextSecond();
    }
}
