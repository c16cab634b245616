package io.clawfleet.deploy;

import io.clawfleet.deploy.certs.ClusterCa;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet certs init|issue|rotate}: the cluster CA and the nodes' event-bus certificates, from the command line. */
class CertsCommandTest {

    private static final Clock CLOCK = Clock.systemUTC();
    private static final String ALL_ROLES = "gateway,worker,sandbox,scheduler";

    @TempDir
    Path temp;

    private Path dir;

    @BeforeEach
    void folder() {
        dir = temp.resolve("certs");
    }

    @Test
    void initMakesTheCaAndAFolderPerRoleThatANodeOfThatRoleLoads() {
        // when the CA is made with a certificate per role
        CliRunner.Run run = certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES);

        // then it succeeds, says where the key is to stay, and describes each certificate
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("made a CA in " + dir).contains("keep " + dir.resolve(ClusterCa.CA_KEY) + " off the nodes");
        // and every role's folder holds what cluster.tls.dir needs, and loads for a node of that role
        for (Role role : Role.values()) {
            Path node = dir.resolve(role.id());
            for (String file : new String[]{ClusterTls.CERT_FILE, ClusterTls.KEY_FILE, ClusterTls.CA_FILE}) {
                assertThat(node.resolve(file)).as(role.id() + "/" + file).isRegularFile();
            }
            assertThat(run.out()).contains(node + ": roles [" + role.id() + "], valid until");
            assertThat(ClusterTls.load(node, null, Set.of(role), CLOCK).roles()).as(role.id()).containsExactly(role);
        }
        // and the node certificates live about 397 days
        X509Certificate worker = leaf(dir.resolve("worker"));
        assertThat(Duration.between(Instant.now(), worker.getNotAfter().toInstant()).toDays()).isBetween(395L, 397L);
    }

    @Test
    void initAgainRefusesAndChangesNothing() throws IOException {
        // given a CA with a certificate per role
        assertThat(certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES).exit()).isZero();
        Map<Path, String> before = files(dir);

        // when init runs again without --if-missing
        CliRunner.Run again = certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES);

        // then it fails, saying there is a CA and how to replace it, and every file is as it was
        assertThat(again.exit()).isNotZero();
        assertThat(again.err()).contains("already holds a CA").contains("clawfleet certs rotate --dir " + dir);
        assertThat(files(dir)).isEqualTo(before);
    }

    @Test
    void initIfMissingKeepsWhatExistsAndAddsWhatIsMissing() throws IOException {
        // given a CA with a gateway's certificate
        assertThat(certs("init", "--dir", dir.toString(), "--issue", "gateway").exit()).isZero();
        Map<Path, String> before = files(dir);

        // when init runs again with --if-missing, asking for every role
        CliRunner.Run run = certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES, "--if-missing");

        // then it succeeds, keeping the CA and the gateway's folder byte for byte
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("kept the CA in " + dir).contains("kept " + dir.resolve("gateway"));
        Map<Path, String> after = files(dir);
        before.forEach((file, text) -> assertThat(after.get(file)).as(file.toString()).isEqualTo(text));
        // and the missing roles' folders were issued from the kept CA
        for (Role role : Set.of(Role.WORKER, Role.SANDBOX, Role.SCHEDULER)) {
            assertThat(ClusterTls.load(dir.resolve(role.id()), null, Set.of(role), CLOCK).roles()).as(role.id()).containsExactly(role);
        }

        // when it runs once more / then nothing changes at all
        Map<Path, String> complete = files(dir);
        assertThat(certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES, "--if-missing").exit()).isZero();
        assertThat(files(dir)).isEqualTo(complete);
    }

    @Test
    void initIfMissingOnAFolderFromBeforeTheSandboxCaMakesItAndIssuesTheSandboxFolderAgain() throws IOException {
        // given a CA folder with a folder per role, as an earlier version made it: no sandbox CA, the sandbox node's
        // certificate from the root (which gateways trust)
        assertThat(certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES).exit()).isZero();
        X509Certificate root = ClusterTls.certificates(dir.resolve(ClusterCa.CA_CERT)).getFirst();
        for (String file : List.of(ClusterCa.SANDBOX_CA_CERT, ClusterCa.SANDBOX_CA_KEY, ClusterCa.WORKER_TRUST)) {
            Files.delete(dir.resolve(file));
        }
        Files.delete(dir.resolve("sandbox").resolve(ClusterTls.CERT_FILE));
        ClusterCa.open(dir).issue("sandbox", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS); // a root-issued leaf
        Files.delete(dir.resolve(ClusterCa.SANDBOX_CA_CERT));
        Files.delete(dir.resolve(ClusterCa.SANDBOX_CA_KEY));
        String gatewayBefore = Files.readString(dir.resolve("gateway").resolve(ClusterTls.CERT_FILE));

        // when the set-up step runs again (Compose's certs service on every start)
        CliRunner.Run run = certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES, "--if-missing");

        // then it says it made the sandbox CA, and the sandbox folder now comes from it; the others are kept
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("made the sandbox nodes' CA").contains("kept " + dir.resolve("gateway"));
        X509Certificate sandboxCa = ClusterTls.certificates(dir.resolve(ClusterCa.SANDBOX_CA_CERT)).getFirst();
        List<X509Certificate> sandboxChain = ClusterTls.certificates(dir.resolve("sandbox").resolve(ClusterTls.CERT_FILE));
        assertThat(sandboxChain.getLast()).isEqualTo(sandboxCa);
        assertThat(ClusterTls.rolesOf(sandboxChain.getFirst())).containsExactly(Role.SANDBOX);
        assertThat(Files.readString(dir.resolve("gateway").resolve(ClusterTls.CERT_FILE))).isEqualTo(gatewayBefore);
        // and the worker trusts the sandbox CA, the gateway still the root alone; every folder loads
        assertThat(ClusterTls.certificates(dir.resolve("worker").resolve(ClusterTls.CA_FILE))).containsExactly(root, sandboxCa);
        assertThat(ClusterTls.certificates(dir.resolve("gateway").resolve(ClusterTls.CA_FILE))).containsExactly(root);
        for (Role role : Role.values()) {
            assertThat(ClusterTls.load(dir.resolve(role.id()), null, Set.of(role), CLOCK).roles()).as(role.id()).containsExactly(role);
        }
    }

    @Test
    void issueMakesANodeCertificateWithEveryRoleGiven() {
        // given a CA
        assertThat(certs("init", "--dir", dir.toString()).exit()).isZero();

        // when a certificate is issued for a node that is a worker and a gateway
        CliRunner.Run run = certs("issue", "--dir", dir.toString(), "--name", "n1", "--roles", "worker,gateway",
                "--host", "n1.example,10.1.2.3", "--days", "30");

        // then it carries both roles, comes from the worker intermediate, trusts the root and the sandbox CA (what
        // workers trust), and lives 30 days
        assertThat(run.exit()).as(run.err()).isZero();
        Path node = dir.resolve("n1");
        assertThat(run.out()).contains(node + ": roles [gateway, worker]");
        assertThat(ClusterTls.rolesOf(leaf(node))).containsExactlyInAnyOrder(Role.WORKER, Role.GATEWAY);
        assertThat(ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE))).hasSize(3);
        assertThat(ClusterTls.certificates(node.resolve(ClusterTls.CA_FILE)))
                .containsExactlyElementsOf(ClusterTls.certificates(dir.resolve(ClusterCa.WORKER_TRUST)));
        assertThat(ClusterTls.load(node, null, Set.of(Role.WORKER, Role.GATEWAY), CLOCK).roles())
                .containsExactlyInAnyOrder(Role.WORKER, Role.GATEWAY);
        assertThat(Duration.between(Instant.now(), leaf(node).getNotAfter().toInstant()).toDays()).isBetween(28L, 30L);
    }

    @Test
    void issueRefusesAnUnknownRoleABadNameAndAMissingCaWithoutWritingAnything() throws IOException {
        // given a CA
        assertThat(certs("init", "--dir", dir.toString()).exit()).isZero();
        Map<Path, String> before = files(dir);

        // when a role is misspelt / then it is refused, naming it and the roles there are
        CliRunner.Run unknown = certs("issue", "--dir", dir.toString(), "--name", "n1", "--roles", "worker,brain");
        assertThat(unknown.exit()).isNotZero();
        assertThat(unknown.err()).contains("unknown role 'brain' (gateway, worker, sandbox, scheduler)");
        // when no role is given / then it is refused
        CliRunner.Run none = certs("issue", "--dir", dir.toString(), "--name", "n1", "--roles", " , ");
        assertThat(none.exit()).isNotZero();
        assertThat(none.err()).contains("name at least one role");
        // when the name is a path / then it is refused
        CliRunner.Run path = certs("issue", "--dir", dir.toString(), "--name", "../x", "--roles", "worker");
        assertThat(path.exit()).isNotZero();
        assertThat(path.err()).contains("a certificate name is 1 to 63 of a-z");
        // when the life is out of range / then it is refused
        CliRunner.Run days = certs("issue", "--dir", dir.toString(), "--name", "n1", "--roles", "worker", "--days", "0");
        assertThat(days.exit()).isNotZero();
        assertThat(days.err()).contains("--days must be 1 to 36500, got 0");
        // and nothing was written
        assertThat(files(dir)).isEqualTo(before);
        assertThat(temp.resolve("x")).doesNotExist();

        // when the folder holds no CA / then it says how to make one
        CliRunner.Run noCa = certs("issue", "--dir", temp.resolve("empty").toString(), "--name", "n1", "--roles", "worker");
        assertThat(noCa.exit()).isNotZero();
        assertThat(noCa.err()).contains("holds no complete cluster CA").contains("clawfleet certs init --dir " + temp.resolve("empty"));
    }

    @Test
    void rotateThenReissueThenFinishMovesEveryFolderToANewCa() throws Exception {
        // given a CA with a certificate per role
        assertThat(certs("init", "--dir", dir.toString(), "--issue", ALL_ROLES).exit()).isZero();
        X509Certificate oldRoot = ClusterTls.certificates(dir.resolve(ClusterCa.CA_CERT)).getFirst();
        // (a rotation comes long after the CA was made: CA names carry the second they were made in)
        nextSecond();

        // when the rotation starts
        CliRunner.Run rotate = certs("rotate", "--dir", dir.toString());

        // then every folder trusts both CAs and still loads, and the next step is named
        assertThat(rotate.exit()).as(rotate.err()).isZero();
        assertThat(rotate.out()).contains("clawfleet certs rotate --dir " + dir + " --reissue");
        X509Certificate newRoot = ClusterTls.certificates(dir.resolve(ClusterCa.CA_CERT)).getFirst();
        assertThat(ClusterTls.certificates(dir.resolve(ClusterCa.TRUST))).containsExactly(newRoot, oldRoot);
        for (Role role : Role.values()) {
            assertThat(ClusterTls.load(dir.resolve(role.id()), null, Set.of(role), CLOCK).trusted()).as(role.id())
                    .hasSize(role == Role.WORKER ? 4 : 2);
        }
        // and a second rotation, both steps at once, or finishing now, are refused
        CliRunner.Run twice = certs("rotate", "--dir", dir.toString());
        assertThat(twice.exit()).isNotZero();
        assertThat(twice.err()).contains("is already in a rotation");
        CliRunner.Run both = certs("rotate", "--dir", dir.toString(), "--reissue", "--finish");
        assertThat(both.exit()).isNotZero();
        assertThat(both.err()).contains("--reissue and --finish are separate steps");
        CliRunner.Run early = certs("rotate", "--dir", dir.toString(), "--finish");
        assertThat(early.exit()).isNotZero();
        assertThat(early.err()).contains(dir.resolve("gateway") + " still holds a certificate of the previous CA");
        assertThat(ClusterTls.certificates(dir.resolve(ClusterCa.TRUST))).hasSize(2);

        // when every folder is issued again
        CliRunner.Run reissue = certs("rotate", "--dir", dir.toString(), "--reissue", "--node-days", "90");

        // then each comes from the new CA, lives the days given, and the last step is named
        assertThat(reissue.exit()).as(reissue.err()).isZero();
        assertThat(reissue.out()).contains("clawfleet certs rotate --dir " + dir + " --finish");
        for (Role role : Role.values()) {
            Path node = dir.resolve(role.id());
            assertThat(reissue.out()).contains(node + ": roles [" + role.id() + "]");
            var chain = ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE));
            assertThat(chain.getLast()).as(role.id()).isEqualTo(role == Role.SANDBOX
                    ? ClusterTls.certificates(dir.resolve(ClusterCa.SANDBOX_CA_CERT)).getFirst() : newRoot);
            assertThat(ClusterTls.rolesOf(chain.getFirst())).as(role.id()).containsExactly(role);
            assertThat(Duration.between(Instant.now(), chain.getFirst().getNotAfter().toInstant()).toDays()).isBetween(88L, 90L);
        }

        // when the rotation ends
        CliRunner.Run finish = certs("rotate", "--dir", dir.toString(), "--finish");

        // then only the new CA is trusted, the old one is gone, and every folder loads
        assertThat(finish.exit()).as(finish.err()).isZero();
        assertThat(ClusterTls.certificates(dir.resolve(ClusterCa.TRUST))).containsExactly(newRoot);
        assertThat(dir.resolve(ClusterCa.PREVIOUS_CA_CERT)).doesNotExist();
        assertThat(dir.resolve(ClusterCa.PREVIOUS_CA_KEY)).doesNotExist();
        for (Role role : Role.values()) {
            assertThat(ClusterTls.load(dir.resolve(role.id()), null, Set.of(role), CLOCK).trusted()).as(role.id())
                    .hasSize(role == Role.WORKER ? 2 : 1);
        }
        // and finishing again is refused
        CliRunner.Run again = certs("rotate", "--dir", dir.toString(), "--finish");
        assertThat(again.exit()).isNotZero();
        assertThat(again.err()).contains("is not in a rotation");
    }

    @Test
    void reissueWithoutDaysGivesNodeCertificatesTheirUsualLife() throws Exception {
        // given a CA in a rotation
        assertThat(certs("init", "--dir", dir.toString(), "--issue", "worker").exit()).isZero();
        nextSecond();
        assertThat(certs("rotate", "--dir", dir.toString()).exit()).isZero();

        // when every folder is issued again without --days (whose default is the CA's 3650)
        assertThat(certs("rotate", "--dir", dir.toString(), "--reissue").exit()).isZero();

        // then the certificate lives as long as a node certificate does, not as long as a CA
        assertThat(Duration.between(Instant.now(), leaf(dir.resolve("worker")).getNotAfter().toInstant()).toDays())
                .isBetween(395L, 397L);
    }

    /** Runs {@code clawfleet certs ARGS...} in this JVM, capturing its exit code and output. */
    private static CliRunner.Run certs(String... args) {
        String[] full = Stream.concat(Stream.of("certs"), Stream.of(args)).toArray(String[]::new);
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try {
            int exit = Main.commandLine().execute(full);
            return new CliRunner.Run(exit, stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    private static X509Certificate leaf(Path node) {
        return ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE)).getFirst();
    }

    /** Every file under {@code root} and its content. */
    private static Map<Path, String> files(Path root) throws IOException {
        Map<Path, String> out = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path file : walk.filter(Files::isRegularFile).toList()) {
                out.put(root.relativize(file), Files.readString(file));
            }
        }
        return out;
    }

    private static void nextSecond() throws InterruptedException {
        long second = Instant.now().getEpochSecond();
        while (Instant.now().getEpochSecond() == second) {
            Thread.sleep(10);
        }
    }
}
