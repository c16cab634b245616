package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.certs.ClusterCa;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.testing.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cluster CA replaced without downtime (issue 21), as docs/OPERATIONS.md#rotating-the-cluster-ca tells the
 * operator: {@code certs rotate}, a rolling restart, {@code rotate --reissue}, a rolling restart, {@code rotate
 * --finish}, a rolling restart, on separate JVMs (two gateways, two workers, a sandbox node) under chat load through
 * whichever gateway is up. Every node presents a certificate of the new CA at the end and trusts only it; every
 * accepted message is answered exactly once and in order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 12, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class ClusterCaRotationIT {

    private static final List<String> NODES = List.of("gateway-1:gateway", "gateway-2:gateway", "worker-1:worker",
            "worker-2:worker", "sandbox-1:sandbox");

    private TestCluster fixture;
    private ClusterHarness cluster;

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(50, NODES.size(), harness -> { }, NODES.toArray(String[]::new));
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    private void rollingRestart(ChatLoad load, String step) throws Exception {
        for (String node : NODES) {
            String id = node.substring(0, node.indexOf(':'));
            int before = load.sent();
            cluster.stop(id);
            cluster.restart(id);
            cluster.awaitReady(Duration.ofSeconds(120));
            Await.until("messages accepted after restarting " + id + " (" + step + ")", Duration.ofSeconds(30),
                    () -> load.sent() > before + 20);
        }
    }

    @Test
    void theCaIsReplacedInThreeRollingRestartsUnderLoadLosingNothing() throws Exception {
        Path ca = cluster.caDir();
        X509Certificate oldRoot = ClusterCa.open(ca).certificate();
        AtomicInteger next = new AtomicInteger();
        ChatLoad load = new ChatLoad(() -> fixture.anyGateway(next, 2), ClusterHarness.API_KEY, "ca-rotation");
        load.start(20, Integer.MAX_VALUE, 200);
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 100);

        // step 1: a new CA, trusted beside the old one; nodes restarted with both
        ClusterCa.rotate(ca, cluster.clusterName(), ClusterCa.CA_DAYS);
        // (a worker trusts both roots and both sandbox CAs)
        assertThat(ClusterTls.certificates(ca.resolve("worker-1").resolve(ClusterTls.CA_FILE))).hasSize(4);
        rollingRestart(load, "trust both");
        // step 2: every node's certificate from the new CA
        ClusterCa.open(ca).reissueAll(ClusterCa.NODE_DAYS);
        rollingRestart(load, "new certificates");
        // step 3: the old CA no longer trusted
        ClusterCa rotated = ClusterCa.open(ca);
        rotated.finishRotation();
        rollingRestart(load, "old CA dropped");

        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
        load.close();
        System.out.printf("CA rotation, 3 rolling restarts of %d nodes: %d messages in %d chats, reply latency p50 %d ms, "
                        + "p99 %d ms, longest %d ms%n", NODES.size(), verdict.messages(), verdict.chats(), verdict.p50LatencyMs(),
                verdict.p99LatencyMs(), verdict.maxLatencyMs());
        assertThat(verdict.messages()).isGreaterThan(300);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
        // and every node now holds a certificate of the new CA and trusts nothing of the old one
        X509Certificate sandboxCa = ClusterTls.certificates(ca.resolve(ClusterCa.SANDBOX_CA_CERT)).getFirst();
        for (String node : NODES) {
            Path folder = ca.resolve(node.substring(0, node.indexOf(':')));
            boolean sandbox = node.endsWith(":sandbox");
            boolean worker = node.endsWith(":worker");
            X509Certificate leaf = ClusterTls.certificates(folder.resolve(ClusterTls.CERT_FILE)).get(0);
            List<X509Certificate> chain = ClusterTls.certificates(folder.resolve(ClusterTls.CERT_FILE));
            assertThat(chain.getLast()).as(node + "'s chain ends at the new root (the new sandbox CA for a sandbox node)")
                    .isEqualTo(sandbox ? sandboxCa : rotated.certificate());
            assertThat(leaf.getIssuerX500Principal()).isNotEqualTo(oldRoot.getSubjectX500Principal());
            assertThat(ClusterTls.certificates(folder.resolve(ClusterTls.CA_FILE))).as(node + " trusts").hasSize(worker ? 2 : 1)
                    .doesNotContain(oldRoot);
        }
    }
}
