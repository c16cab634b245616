package io.clawfleet.shared.bus;

import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.vertx.core.MultiMap;
import io.vertx.core.eventbus.DeliveryOptions;

import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.interfaces.ECKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Tells a receiver which <em>role</em> sent a per-message notice, at the cost of an HMAC: reply notices and stream
 * chunks reach a gateway from workers alone, though gateways and schedulers can connect to it too (they share tenant
 * notices) and hold the cluster secret.
 * <p>
 * Each pair of nodes shares a key no third node can compute: ECDH between the two nodes' own certificate keys (EC
 * P-256), run once per pair, then HKDF-style HMAC over both certificates' fingerprints. A sender adds, beside the
 * cluster-secret signature of the message ({@link BusSigner}), its certificate's fingerprint ({@link #FROM}) and one
 * tag per receiver ({@link #TAG}: {@code <receiver fingerprint>.<base64url HMAC(pair key, purpose, signature)>}). A
 * receiver finds the sender's chain among the members' published chains ({@link #CHAIN_ATTRIBUTE}, a member
 * attribute set at join), checks it once against the CAs it trusts (PKIX) and that it names the role, then checks
 * its own tag. A sender's signature binds the payload, address and time, so the tag binds them too.
 * <p>
 * Why not an ECDSA signature per message, as {@link RoleSignatures} makes for the rare handoff notices: measured here,
 * 0.10 ms to sign and 0.32 ms to check, on every reply of every gateway; a pair key costs one ECDH (about 0.2 ms) per
 * pair of nodes and then an HMAC (microseconds). A member attribute is not to be trusted (Hazelcast authenticates no
 * member): what is read from it is a public certificate chain, checked like one from a handshake, and a tag can only
 * be made with the private key of the certificate it names.
 * <p>
 * A node without a bus certificate (alone, or {@code --insecure-cluster}) has {@link #off()}: it tags nothing and
 * accepts everything, as everything else on such a bus is accepted. Thread-safe.
 */
public final class PeerTags {

    /** Header: the fingerprint of the sender's certificate. */
    public static final String FROM = "clawfleet-peer";
    /** Header, one per receiver: {@code <receiver fingerprint>.<base64url tag>}. */
    public static final String TAG = "clawfleet-peer-tag";
    /** Member attribute: the node's bus certificate chain, leaf first, base64 DER values joined by commas. */
    public static final String CHAIN_ATTRIBUTE = "busChain";

    private static final byte[] DOMAIN = "clawfleet-peer-v1".getBytes(StandardCharsets.UTF_8);
    private static final int TAG_BYTES = 16;
    private static final int CACHED_PEERS = 256;
    /** A receiver re-reads the members for an unknown sender at most this often (a flood of made-up ones costs little). */
    private static final long REFRESH_MS = 100;
    /** A published chain found bad is checked again after this long, not at every read of the members. */
    private static final long RECHECK_BAD_MS = 10_000;

    /** A member's certificate as this node checked it, with the key the two share; {@code problem} when not trusted. */
    private record Peer(String fingerprint, Set<Role> roles, long notAfterMs, SecretKeySpec pairKey, String problem,
                        long checkedAtMs) {
    }

    /** What the members published: a node id's peer and the peers by fingerprint. */
    private record View(Map<String, Peer> byNode, Map<String, Peer> byFingerprint) {
        static final View EMPTY = new View(Map.of(), Map.of());
    }

    private final ClusterTls tls;
    private final LongSupplier clockMs;
    private final String fingerprint;
    private final String chainAttribute;
    /** Peers checked from a chain attribute value, by that value (bounded). */
    private final Map<String, Peer> checked = new ConcurrentHashMap<>();
    private final ThreadLocal<Mac> macs = ThreadLocal.withInitial(() -> {
        try {
            return Mac.getInstance("HmacSHA256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    });
    private volatile Membership membership;
    private volatile View view = View.EMPTY;
    private volatile long refreshedAtMs = Long.MIN_VALUE / 2;

    private PeerTags(ClusterTls tls, LongSupplier clockMs) {
        this.tls = tls;
        this.clockMs = Objects.requireNonNull(clockMs);
        if (tls == null) {
            this.fingerprint = null;
            this.chainAttribute = null;
        } else {
            this.fingerprint = fingerprint(tls.chain().get(0));
            this.chainAttribute = String.join(",", tls.chainBase64());
        }
    }

    /** Tags made and checked with the node's bus certificate and key. */
    public static PeerTags of(ClusterTls tls, LongSupplier clockMs) {
        return new PeerTags(Objects.requireNonNull(tls, "tls"), clockMs);
    }

    /** For a node without a bus certificate: tags nothing, accepts everything. */
    public static PeerTags off() {
        return new PeerTags(null, System::currentTimeMillis);
    }

    /** Whether tags are made and checked here (the node has a bus certificate). */
    public boolean on() {
        return tls != null;
    }

    /** The member attributes that publish this node's chain (none when off). */
    public Map<String, String> memberAttributes() {
        return tls == null ? Map.of() : Map.of(CHAIN_ATTRIBUTE, chainAttribute);
    }

    /** Reads the members' chains from {@code membership} now and at every change. Call once, on a Vert.x context. */
    public void watch(Membership membership) {
        if (tls == null) {
            return;
        }
        this.membership = Objects.requireNonNull(membership);
        refresh();
        membership.onChange(change -> refresh());
    }

    /**
     * Adds this node's tag of {@code signature} for every member with {@code role} (a published notice). Unchanged
     * when off.
     */
    public DeliveryOptions tagForRole(DeliveryOptions options, String purpose, String signature, Role role) {
        if (tls == null) {
            return options;
        }
        options.addHeader(FROM, fingerprint);
        for (Map.Entry<String, Peer> entry : view.byNode().entrySet()) {
            Peer peer = entry.getValue();
            if (peer.problem() == null && peer.roles().contains(role)) {
                options.addHeader(TAG, peer.fingerprint() + "." + tag(peer, purpose, signature));
            }
        }
        return options;
    }

    /** Adds this node's tag of {@code signature} for the member {@code nodeId} (a message sent to it). Unchanged when off. */
    public DeliveryOptions tagForNode(DeliveryOptions options, String purpose, String signature, String nodeId) {
        if (tls == null) {
            return options;
        }
        options.addHeader(FROM, fingerprint);
        Peer peer = view.byNode().get(nodeId);
        if (peer == null && refreshNow()) {
            // A member that joined a moment ago: its change event may not have been delivered yet.
            peer = view.byNode().get(nodeId);
        }
        if (peer != null && peer.problem() == null) {
            options.addHeader(TAG, peer.fingerprint() + "." + tag(peer, purpose, signature));
        }
        return options;
    }

    /**
     * Checks that a received message carries a tag for this node from a member whose certificate this node trusts and
     * names {@code role}. The signature's own check (key, time) is {@link BusSigner#verify}'s. Always valid when off.
     */
    public BusSigner.Verdict check(MultiMap headers, String purpose, String signature, Role role) {
        if (tls == null) {
            return BusSigner.Verdict.VALID;
        }
        String from = headers == null ? null : headers.get(FROM);
        if (from == null || signature == null) {
            return BusSigner.Verdict.MISSING;
        }
        Peer sender = view.byFingerprint().get(from);
        if (sender == null && refreshNow()) {
            sender = view.byFingerprint().get(from);
        }
        if (sender == null || sender.problem() != null || clockMs.getAsLong() > sender.notAfterMs()) {
            return BusSigner.Verdict.UNTRUSTED;
        }
        if (!sender.roles().contains(role)) {
            return BusSigner.Verdict.WRONG_ROLE;
        }
        String prefix = fingerprint + ".";
        for (String value : headers.getAll(TAG)) {
            if (value.startsWith(prefix)) {
                byte[] expected = tagBytes(sender, purpose, signature);
                byte[] got;
                try {
                    got = Base64.getUrlDecoder().decode(value.substring(prefix.length()));
                } catch (IllegalArgumentException e) {
                    return BusSigner.Verdict.MALFORMED;
                }
                return MessageDigest.isEqual(expected, got) ? BusSigner.Verdict.VALID : BusSigner.Verdict.FORGED;
            }
        }
        return BusSigner.Verdict.MISSING;
    }

    private String tag(Peer peer, String purpose, String signature) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(tagBytes(peer, purpose, signature));
    }

    private byte[] tagBytes(Peer peer, String purpose, String signature) {
        try {
            Mac mac = macs.get();
            mac.init(peer.pairKey());
            field(mac, purpose.getBytes(StandardCharsets.UTF_8));
            field(mac, signature.getBytes(StandardCharsets.UTF_8));
            return Arrays.copyOf(mac.doFinal(), TAG_BYTES);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a peer tag: " + e.getMessage(), e);
        }
    }

    /** Re-reads the members unless that was done less than {@link #REFRESH_MS} ago; whether it read them. */
    private boolean refreshNow() {
        if (membership == null || clockMs.getAsLong() - refreshedAtMs < REFRESH_MS) {
            return false;
        }
        refresh();
        return true;
    }

    private synchronized void refresh() {
        Membership members = membership;
        if (members == null) {
            return;
        }
        refreshedAtMs = clockMs.getAsLong();
        Map<String, Peer> byNode = new HashMap<>();
        Map<String, Peer> byFingerprint = new HashMap<>();
        for (Member member : members.members()) {
            String chain = member.attributes().get(CHAIN_ATTRIBUTE);
            if (chain == null) {
                continue;
            }
            Peer peer = checked.get(chain);
            // A bad chain is checked again now and then: one not valid yet (a clock a little ahead) may be soon.
            if (peer == null || peer.problem() != null && refreshedAtMs - peer.checkedAtMs() > RECHECK_BAD_MS) {
                peer = check(chain);
                if (peer == null) {
                    continue;
                }
                if (checked.size() >= CACHED_PEERS) {
                    checked.clear();
                }
                checked.put(chain, peer);
            }
            byNode.put(member.nodeId(), peer);
            // A fingerprint is a certificate's: two members publishing one chain share one peer, and only the one with
            // the private key can make its tags.
            byFingerprint.putIfAbsent(peer.fingerprint(), peer);
        }
        view = new View(Map.copyOf(byNode), Map.copyOf(byFingerprint));
    }

    /** The peer of a published chain, checked; null when the value cannot be read as one. */
    private Peer check(String value) {
        List<X509Certificate> chain = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (String part : value.split(",")) {
                chain.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(Base64.getDecoder().decode(part))));
            }
        } catch (CertificateException | IllegalArgumentException e) {
            return null;
        }
        if (chain.isEmpty()) {
            return null;
        }
        X509Certificate leaf = chain.get(0);
        String problem = null;
        SecretKeySpec pairKey = null;
        try {
            tls.checkPeer(chain);
            pairKey = pairKey(tls.privateKey(), fingerprint, leaf.getPublicKey(), fingerprint(leaf));
        } catch (CertificateException e) {
            problem = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            problem = "no key agreement with its key: " + e.getMessage();
        }
        return new Peer(fingerprint(leaf), ClusterTls.rolesOf(leaf), leaf.getNotAfter().getTime(), pairKey, problem,
                clockMs.getAsLong());
    }

    /** The key two nodes share: ECDH of one's private and the other's public key, bound to both fingerprints. */
    static SecretKeySpec pairKey(PrivateKey own, String ownFingerprint, PublicKey peer, String peerFingerprint)
            throws GeneralSecurityException {
        if (!(own instanceof ECKey) || !(peer instanceof ECKey)) {
            throw new GeneralSecurityException("both keys must be EC, got " + own.getAlgorithm() + " and " + peer.getAlgorithm());
        }
        KeyAgreement agreement = KeyAgreement.getInstance("ECDH");
        agreement.init(own);
        agreement.doPhase(peer, true);
        byte[] shared = agreement.generateSecret();
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(shared, "HmacSHA256"));
        // Both ends list the fingerprints in the same order, so both derive the same key.
        boolean ownFirst = ownFingerprint.compareTo(peerFingerprint) <= 0;
        field(mac, DOMAIN);
        field(mac, (ownFirst ? ownFingerprint : peerFingerprint).getBytes(StandardCharsets.UTF_8));
        field(mac, (ownFirst ? peerFingerprint : ownFingerprint).getBytes(StandardCharsets.UTF_8));
        return new SecretKeySpec(mac.doFinal(), "HmacSHA256");
    }

    /** The first 16 bytes of the certificate's SHA-256, base64url. */
    static String fingerprint(X509Certificate certificate) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(certificate.getEncoded());
            return Base64.getUrlEncoder().withoutPadding().encodeToString(Arrays.copyOf(digest, 16));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Length-prefixed, so no two different field lists give the same bytes. */
    private static void field(Mac mac, byte[] bytes) {
        mac.update(ByteBuffer.allocate(Integer.BYTES).putInt(bytes.length).array());
        mac.update(bytes);
    }
}
