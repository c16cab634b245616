package io.clawfleet.deploy.certs;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.BusSigner.Verdict;
import io.clawfleet.shared.bus.PeerTags;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.MultiMap;
import io.vertx.core.eventbus.DeliveryOptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reply notices and stream chunks reach a gateway from workers alone: every role holds the cluster secret and may
 * connect to a gateway, but only a worker can make the tag of the key it shares with that gateway.
 */
class PeerTagsTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";
    private static final long WINDOW_MS = 60_000;

    @TempDir
    Path temp;

    private final List<Member> members = new ArrayList<>();
    private final Map<String, BusSigner> nodes = new HashMap<>();
    private final Membership membership = new Membership() {
        @Override
        public Member self() {
            return members.getFirst();
        }

        @Override
        public List<Member> members() {
            return List.copyOf(members);
        }

        @Override
        public void onChange(Consumer<MembershipChange> listener) {
        }
    };

    private final AtomicLong now = new AtomicLong(System.currentTimeMillis());
    private ClusterCa ca;

    @BeforeEach
    void cluster() {
        ca = ClusterCa.create(temp.resolve("ca"), "test", ClusterCa.CA_DAYS);
        node(ca, "gateway-1", Set.of(Role.GATEWAY));
        node(ca, "gateway-2", Set.of(Role.GATEWAY));
        node(ca, "worker-1", Set.of(Role.WORKER));
        node(ca, "scheduler-1", Set.of(Role.SCHEDULER));
        node(ca, "both-1", Set.of(Role.GATEWAY, Role.WORKER));
    }

    /** A node with its certificate from {@code issuer}, published to the members, its signer watching them. */
    private BusSigner node(ClusterCa issuer, String id, Set<Role> roles) {
        Path folder = issuer.issue(id, roles, List.of(), ClusterCa.NODE_DAYS);
        PeerTags peers = PeerTags.of(ClusterTls.load(folder, null, roles, Clock.systemUTC()), now::get);
        members.add(new Member(id, Set.copyOf(roles.stream().map(Role::id).toList()), "http://127.0.0.1:1", peers.memberAttributes()));
        BusSigner signer = new BusSigner(SECRET, now::get, WINDOW_MS).withPeers(peers);
        nodes.put(id, signer);
        return signer;
    }

    /** Every node reads the members as they are now (a join's change event, in a cluster). */
    private void settle() {
        nodes.values().forEach(signer -> signer.peers().watch(membership));
    }

    private static StreamChunk chunk() {
        return new StreamChunk(42, 0, "Hello");
    }

    private static OutboundReply reply(String id) {
        return new OutboundReply(id, BotRef.main("t1"), "api", "chat-1", 7, 3, 42, "", Instant.parse("2026-11-30T12:00:00Z"));
    }

    private MultiMap chunkFrom(String sender, String to) {
        return nodes.get(sender).signTo(new DeliveryOptions(), BusSigner.CHUNK, to, chunk()).getHeaders();
    }

    private MultiMap noticeFrom(String sender, OutboundReply reply) {
        return nodes.get(sender).signNotice(new DeliveryOptions(), BusSigner.REPLY, Addresses.REPLY_READY, reply, Role.GATEWAY)
                .getHeaders();
    }

    private Verdict chunkAt(String receiver, MultiMap headers) {
        return nodes.get(receiver).verifyFrom(headers, BusSigner.CHUNK, receiver, chunk(), Role.WORKER);
    }

    private Verdict noticeAt(String receiver, MultiMap headers, OutboundReply reply) {
        return nodes.get(receiver).verifyNoticeFrom(headers, BusSigner.REPLY, Addresses.REPLY_READY, reply, Role.WORKER);
    }

    @Test
    void aWorkersChunkIsTakenAndAGatewaysOrSchedulersWithTheSameSecretIsRefusedForItsRole() {
        settle();
        // when a worker (or a node that is also a worker) streams to gateway-1 / then the gateway takes the chunk
        assertThat(chunkAt("gateway-1", chunkFrom("worker-1", "gateway-1"))).isEqualTo(Verdict.VALID);
        assertThat(chunkAt("gateway-1", chunkFrom("both-1", "gateway-1"))).isEqualTo(Verdict.VALID);
        // and a node that is gateway and worker takes its own chunks (a chat it holds and serves)
        assertThat(chunkAt("both-1", chunkFrom("both-1", "both-1"))).isEqualTo(Verdict.VALID);
        for (String other : List.of("gateway-2", "scheduler-1")) {
            // when another gateway or a scheduler, which hold the cluster secret, make the same chunk
            MultiMap headers = chunkFrom(other, "gateway-1");
            // then the cluster signature is good and the sender's role is what refuses it
            assertThat(nodes.get("gateway-1").verify(headers, BusSigner.CHUNK, "gateway-1", chunk(), "")).isEqualTo(Verdict.VALID);
            assertThat(chunkAt("gateway-1", headers)).as(other).isEqualTo(Verdict.WRONG_ROLE);
        }
    }

    @Test
    void aWorkersReplyNoticeIsTaggedForEveryGatewayAndTakenByEach() {
        settle();
        OutboundReply reply = reply("r-1");
        MultiMap headers = noticeFrom("worker-1", reply);
        // one tag per member with the gateway role: gateway-1, gateway-2 and both-1
        assertThat(headers.getAll(PeerTags.TAG)).hasSize(3);
        for (String gateway : List.of("gateway-1", "gateway-2", "both-1")) {
            assertThat(noticeAt(gateway, headers, reply)).as(gateway).isEqualTo(Verdict.VALID);
        }
        // when a gateway publishes a notice of its own / then the others refuse it
        assertThat(noticeAt("gateway-1", noticeFrom("gateway-2", reply), reply)).isEqualTo(Verdict.WRONG_ROLE);
        assertThat(noticeAt("gateway-1", noticeFrom("scheduler-1", reply), reply)).isEqualTo(Verdict.WRONG_ROLE);
    }

    @Test
    void aGatewayThatReceivedAWorkersNoticeCannotPassOffAnotherInItsName() {
        settle();
        OutboundReply real = reply("r-1");
        MultiMap received = noticeFrom("worker-1", real);
        // given gateway-2 holds a worker's notice and the cluster secret: it signs another payload with the secret and
        // keeps the worker's fingerprint and tags
        OutboundReply made = reply("r-forged");
        MultiMap forged = MultiMap.caseInsensitiveMultiMap().addAll(received)
                .set(BusSigner.SIGNATURE, nodes.get("gateway-2").sign(BusSigner.REPLY, Addresses.REPLY_READY, made, ""));
        // then gateway-1 finds the tag is not the worker's for that signature
        assertThat(noticeAt("gateway-1", forged, made)).isEqualTo(Verdict.FORGED);
        // and the payload changed under the worker's own signature fails the cluster signature first
        assertThat(noticeAt("gateway-1", received, made)).isEqualTo(Verdict.FORGED);
        // when gateway-2 makes its own tags but names the worker as the sender
        MultiMap own = MultiMap.caseInsensitiveMultiMap().addAll(noticeFrom("gateway-2", made))
                .set(PeerTags.FROM, received.get(PeerTags.FROM));
        assertThat(noticeAt("gateway-1", own, made)).isEqualTo(Verdict.FORGED);
        // and the original is still taken
        assertThat(noticeAt("gateway-1", received, real)).isEqualTo(Verdict.VALID);
    }

    @Test
    void anotherCasWorkerIsUntrustedAndAMessageWithoutATagForThisGatewayIsMissing() {
        // given a worker whose certificate comes from another CA, published as a member
        node(ClusterCa.create(temp.resolve("other"), "test", ClusterCa.CA_DAYS), "rogue-worker", Set.of(Role.WORKER));
        settle();
        assertThat(chunkAt("gateway-1", chunkFrom("rogue-worker", "gateway-1"))).isEqualTo(Verdict.UNTRUSTED);
        // and a worker whose view of the members lacks gateway-1 tags nothing for it
        OutboundReply reply = reply("r-2");
        MultiMap headers = noticeFrom("worker-1", reply);
        MultiMap stripped = MultiMap.caseInsensitiveMultiMap().addAll(headers).remove(PeerTags.TAG);
        headers.getAll(PeerTags.TAG).stream().filter(tag -> !tag.equals(headers.getAll(PeerTags.TAG).getFirst()))
                .forEach(tag -> stripped.add(PeerTags.TAG, tag));
        assertThat(stripped.getAll(PeerTags.TAG)).hasSize(2);
        long missing = List.of("gateway-1", "gateway-2", "both-1").stream()
                .filter(gateway -> noticeAt(gateway, stripped, reply) == Verdict.MISSING).count();
        assertThat(missing).isEqualTo(1);
        // and a message without the sender's fingerprint is missing its proof
        assertThat(chunkAt("gateway-1", MultiMap.caseInsensitiveMultiMap().addAll(chunkFrom("worker-1", "gateway-1"))
                .remove(PeerTags.FROM))).isEqualTo(Verdict.MISSING);
    }

    @Test
    void aGatewayThatJoinedAfterTheWorkerLastReadTheMembersIsFoundWhenAChunkIsSentToIt() {
        BusSigner worker = nodes.get("worker-1");
        worker.peers().watch(membership);
        // given gateway-3 joins after the worker read the members (its change event not delivered yet)
        node(ca, "gateway-3", Set.of(Role.GATEWAY));
        nodes.get("gateway-3").peers().watch(membership);
        // when the worker streams to it (past the least time between two reads) / then it reads the members again
        // and the chunk carries a tag gateway-3 takes
        now.addAndGet(200);
        assertThat(chunkAt("gateway-3", chunkFrom("worker-1", "gateway-3"))).isEqualTo(Verdict.VALID);
    }

    @Test
    void withoutBusCertificatesNothingIsTaggedAndNoticesAreTakenAsTheyCome() {
        BusSigner plain = new BusSigner(SECRET, now::get, WINDOW_MS);
        OutboundReply reply = reply("r-3");
        MultiMap headers = plain.signNotice(new DeliveryOptions(), BusSigner.REPLY, Addresses.REPLY_READY, reply, Role.GATEWAY)
                .getHeaders();
        assertThat(headers == null || headers.isEmpty()).as("headers of an untagged notice").isTrue();
        assertThat(plain.verifyNoticeFrom(headers, BusSigner.REPLY, Addresses.REPLY_READY, reply, Role.WORKER))
                .isEqualTo(Verdict.VALID);
        // chunks still carry the cluster signature and are checked against it
        MultiMap chunk = plain.signTo(new DeliveryOptions(), BusSigner.CHUNK, "gateway-1", chunk()).getHeaders();
        assertThat(plain.verifyFrom(chunk, BusSigner.CHUNK, "gateway-1", chunk(), Role.WORKER)).isEqualTo(Verdict.VALID);
        assertThat(plain.verifyFrom(chunk, BusSigner.CHUNK, "gateway-1", new StreamChunk(42, 0, "Bye"), Role.WORKER))
                .isEqualTo(Verdict.FORGED);
    }
}
