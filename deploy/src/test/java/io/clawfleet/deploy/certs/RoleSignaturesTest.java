package io.clawfleet.deploy.certs;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.RoleSignatures;
import io.clawfleet.shared.bus.RoleSignatures.Verdict;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.message.PartitionReleased;
import io.clawfleet.shared.message.WorkerReady;
import io.vertx.core.MultiMap;
import io.vertx.core.eventbus.DeliveryOptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Handoff notices signed with the sender's certificate key: a worker takes them only from a worker of its own cluster,
 * whatever else may connect to it (sandbox nodes answer calls on the same connections), and whoever holds the cluster
 * secret.
 */
class RoleSignaturesTest {

    private static final long WINDOW_MS = 60_000;

    @TempDir
    Path temp;

    private ClusterCa ca;
    private final AtomicLong now = new AtomicLong(System.currentTimeMillis());
    private RoleSignatures receiver;

    @BeforeEach
    void cluster() {
        ca = ClusterCa.create(temp.resolve("ca"), "test", ClusterCa.CA_DAYS);
        for (Role role : Role.values()) {
            ca.issue(role.id(), Set.of(role), List.of(), ClusterCa.NODE_DAYS);
        }
        ca.issue("receiver", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        receiver = signatures(temp.resolve("ca").resolve("receiver"), Set.of(Role.WORKER));
    }

    private RoleSignatures signatures(Path folder, Set<Role> roles) {
        return RoleSignatures.of(ClusterTls.load(folder, null, roles, Clock.systemUTC()), now::get, WINDOW_MS);
    }

    private RoleSignatures of(Role role) {
        return signatures(temp.resolve("ca").resolve(role.id()), Set.of(role));
    }

    private static MultiMap signed(RoleSignatures sender, String address, Object payload) {
        return sender.sign(new DeliveryOptions(), address, (io.clawfleet.shared.message.Versioned) payload).getHeaders();
    }

    @Test
    void aWorkersNoticeIsTakenAndEveryOtherRolesIsRefusedForItsRole() {
        WorkerReady ready = new WorkerReady("worker-2", false);
        // when a worker signs a notice / then another worker takes it
        assertThat(receiver.verify(signed(of(Role.WORKER), Addresses.WORKER_READY, ready), Addresses.WORKER_READY, ready, Role.WORKER))
                .isEqualTo(Verdict.VALID);
        // when a sandbox node, a gateway or a scheduler signs the same notice with its own valid certificate
        for (Role role : List.of(Role.SANDBOX, Role.GATEWAY, Role.SCHEDULER)) {
            MultiMap headers = signed(of(role), Addresses.WORKER_READY, ready);
            // then the signature is good, the chain trusted, and the role is what refuses it
            assertThat(receiver.verify(headers, Addresses.WORKER_READY, ready, Role.WORKER)).as(role.id()).isEqualTo(Verdict.WRONG_ROLE);
            // (the same signature, asked for the role it has, is taken: the test tells a role refusal from a broken one)
            assertThat(receiver.verify(headers, Addresses.WORKER_READY, ready, role)).as(role.id()).isEqualTo(Verdict.VALID);
        }
    }

    @Test
    void aChangedPayloadOrAddressIsForgedAndAMissingOrBrokenSignatureIsRefused() {
        RoleSignatures worker = of(Role.WORKER);
        PartitionReleased released = new PartitionReleased(7, 3, "worker-2", true);
        MultiMap headers = signed(worker, Addresses.PARTITION_RELEASED, released);

        // when the payload or the address is not what was signed / then it is forged
        assertThat(receiver.verify(headers, Addresses.PARTITION_RELEASED, new PartitionReleased(7, 3, "worker-1", true), Role.WORKER))
                .isEqualTo(Verdict.FORGED);
        assertThat(receiver.verify(headers, Addresses.WORKER_READY, released, Role.WORKER)).isEqualTo(Verdict.FORGED);
        // when there is no signature, or one that cannot be read
        assertThat(receiver.verify(MultiMap.caseInsensitiveMultiMap(), Addresses.PARTITION_RELEASED, released, Role.WORKER))
                .isEqualTo(Verdict.MISSING);
        assertThat(receiver.verify(null, Addresses.PARTITION_RELEASED, released, Role.WORKER)).isEqualTo(Verdict.MISSING);
        MultiMap garbled = MultiMap.caseInsensitiveMultiMap().addAll(headers).set(RoleSignatures.SIGNATURE, "x.!!");
        assertThat(receiver.verify(garbled, Addresses.PARTITION_RELEASED, released, Role.WORKER)).isEqualTo(Verdict.MALFORMED);
        MultiMap badChain = MultiMap.caseInsensitiveMultiMap().addAll(headers).set(RoleSignatures.CHAIN, "bm90IGEgY2VydA==");
        assertThat(receiver.verify(badChain, Addresses.PARTITION_RELEASED, released, Role.WORKER)).isEqualTo(Verdict.MALFORMED);
        // and the original still verifies
        assertThat(receiver.verify(headers, Addresses.PARTITION_RELEASED, released, Role.WORKER)).isEqualTo(Verdict.VALID);
    }

    @Test
    void anotherCasWorkerIsUntrusted() {
        WorkerReady ready = new WorkerReady("worker-2", true);
        // given a worker's certificate from another CA
        Path other = ClusterCa.create(temp.resolve("other"), "other", ClusterCa.CA_DAYS)
                .issue("rogue", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        RoleSignatures rogue = signatures(other, Set.of(Role.WORKER));

        // when it signs a notice / then it is not trusted (an expired certificate is refused by the same PKIX check,
        // which the handshake tests in ClusterCaTest cover; one that expires after it was checked is below)
        assertThat(receiver.verify(signed(rogue, Addresses.WORKER_READY, ready), Addresses.WORKER_READY, ready, Role.WORKER))
                .isEqualTo(Verdict.UNTRUSTED);
    }

    @Test
    void aNoticeOlderThanTheWindowIsExpiredAndAWorkerCertificateThatExpiresAfterBeingCheckedIsRefusedThen() {
        WorkerReady ready = new WorkerReady("worker-2", true);
        RoleSignatures worker = of(Role.WORKER);
        MultiMap headers = signed(worker, Addresses.WORKER_READY, ready);
        assertThat(receiver.verify(headers, Addresses.WORKER_READY, ready, Role.WORKER)).isEqualTo(Verdict.VALID);

        // when it is replayed after the window / then it has expired
        now.addAndGet(WINDOW_MS + 1);
        assertThat(receiver.verify(headers, Addresses.WORKER_READY, ready, Role.WORKER)).isEqualTo(Verdict.EXPIRED);

        // when the clock passes the end of the signer's certificate (its chain is cached as good) / then it is untrusted
        long notAfter = ClusterTls.certificates(temp.resolve("ca").resolve("worker").resolve(ClusterTls.CERT_FILE))
                .getFirst().getNotAfter().getTime();
        now.set(notAfter + 1);
        MultiMap late = signed(worker, Addresses.WORKER_READY, ready);
        assertThat(receiver.verify(late, Addresses.WORKER_READY, ready, Role.WORKER)).isEqualTo(Verdict.UNTRUSTED);
    }

    @Test
    void offSignsNothingAndTakesEverything() {
        // a node without a bus certificate (alone, or --insecure-cluster) has nothing to sign or check with
        RoleSignatures off = RoleSignatures.off();
        WorkerReady ready = new WorkerReady("worker-2", true);
        assertThat(off.on()).isFalse();
        assertThat(off.sign(new DeliveryOptions(), Addresses.WORKER_READY, ready).getHeaders()).isNullOrEmpty();
        assertThat(off.verify(null, Addresses.WORKER_READY, ready, Role.WORKER)).isEqualTo(Verdict.VALID);
        // and a node with one refuses what such a node sends
        assertThat(receiver.verify(MultiMap.caseInsensitiveMultiMap(), Addresses.WORKER_READY, ready, Role.WORKER))
                .isEqualTo(Verdict.MISSING);
    }
}
