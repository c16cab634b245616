package io.clawfleet.shared.bus;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.message.Versioned;
import io.vertx.core.MultiMap;
import io.vertx.core.eventbus.DeliveryOptions;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Signs and checks event-bus payloads with the cluster secret (HMAC-SHA256), so a receiver can tell a
 * message from a node of its own cluster from one any process that joined the bus made up. A signature
 * covers the purpose ({@link #CALL}, {@link #RESULT}, {@link #CHUNK}), the node the message is for or from,
 * when it was issued, an optional binding (a result names the call it answers) and the whole payload in a
 * canonical JSON form (every record component, map entries by key). It travels in message headers
 * ({@link #SIGNATURE}, {@link #NODE}); the payload records are unchanged. Thread-safe.
 */
public final class BusSigner {

    /** Shortest cluster secret a clustered node accepts. */
    public static final int MIN_SECRET_LENGTH = 32;
    /** How far the issue time of a signed message may be from the receiver's clock, either way. */
    public static final long DEFAULT_WINDOW_MS = 60_000;

    /** Header: {@code <issuedAtMs>.<base64url mac>}. */
    public static final String SIGNATURE = "clawfleet-sig";
    /** Header: the node a call or chunk is for, or the node a result is from. */
    public static final String NODE = "clawfleet-node";

    /** A worker's {@code ToolCall} to one sandbox node. */
    public static final String CALL = "tool-call";
    /** A sandbox node's {@code ToolResult}, bound to the call's signature. */
    public static final String RESULT = "tool-result";
    /** A worker's {@code StreamChunk} to one gateway. */
    public static final String CHUNK = "stream-chunk";
    /** A worker's notice that a reply is in the outbox ({@code OutboundReply}), published to every gateway. */
    public static final String REPLY = "reply-ready";

    private static final String ALGORITHM = "HmacSHA256";
    private static final byte[] DOMAIN = "clawfleet-bus-v1".getBytes(StandardCharsets.UTF_8);
    /** Json's mapper with map entries in key order: a decoded record encodes to the same bytes as the one sent. */
    private static final ObjectMapper CANONICAL = Json.MAPPER.copy().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

    /** What a check found; everything but {@link #VALID} means the message is dropped. */
    public enum Verdict {
        VALID, MISSING, MALFORMED, EXPIRED, WRONG_NODE, FORGED,
        /** The sender's certificate is not one this node trusts ({@link PeerTags}). */
        UNTRUSTED,
        /** The sender's certificate does not name the role the message needs ({@link PeerTags}). */
        WRONG_ROLE;

        /** Lowercase, for metric tags and logs. */
        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final SecretKeySpec key;
    private final LongSupplier clockMs;
    private final long windowMs;
    private final ThreadLocal<Mac> macs;
    private final RoleSignatures roles;
    private final PeerTags peers;

    /** @param secret the cluster secret (its UTF-8 bytes are the key); never logged */
    public BusSigner(String secret, LongSupplier clockMs, long windowMs) {
        this(Objects.requireNonNull(secret, "secret").getBytes(StandardCharsets.UTF_8), clockMs, windowMs);
    }

    private BusSigner(byte[] secret, LongSupplier clockMs, long windowMs) {
        this(key(secret), clockMs, windowMs, RoleSignatures.off(), PeerTags.off());
    }

    private static SecretKeySpec key(byte[] secret) {
        if (secret.length == 0) {
            throw new IllegalArgumentException("the cluster secret is empty");
        }
        return new SecretKeySpec(secret, ALGORITHM);
    }

    private BusSigner(SecretKeySpec key, LongSupplier clockMs, long windowMs, RoleSignatures roles, PeerTags peers) {
        this.key = key;
        this.clockMs = Objects.requireNonNull(clockMs);
        this.windowMs = windowMs;
        this.roles = Objects.requireNonNull(roles);
        this.peers = Objects.requireNonNull(peers);
        this.macs = ThreadLocal.withInitial(() -> {
            try {
                Mac mac = Mac.getInstance(ALGORITHM);
                mac.init(key);
                return mac;
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("HmacSHA256 is not available", e);
            }
        });
    }

    /** A signer with a random secret, for a node that runs alone: nobody else needs to know it. */
    public static BusSigner random() {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        return new BusSigner(HexFormat.of().formatHex(secret), System::currentTimeMillis, DEFAULT_WINDOW_MS);
    }

    /** The signer of a node: the configured secret, else (alone only) a random one. */
    public static BusSigner forNode(String configuredSecret) {
        return configuredSecret == null ? random()
                : new BusSigner(configuredSecret, System::currentTimeMillis, DEFAULT_WINDOW_MS);
    }

    /** This signer, also signing and checking control notices with the node's certificate key ({@code roles}). */
    public BusSigner withRoles(RoleSignatures roles) {
        return new BusSigner(key, clockMs, windowMs, roles, peers);
    }

    /** This signer, also tagging per-message traffic for its receivers with pair keys ({@code peers}). */
    public BusSigner withPeers(PeerTags peers) {
        return new BusSigner(key, clockMs, windowMs, roles, peers);
    }

    /** The pair-key tags that tell a receiver which role sent a message (off on a node without a bus certificate). */
    public PeerTags peers() {
        return peers;
    }

    /**
     * Signatures with the node's own certificate key, for the notices a receiver takes only from one role (off on a
     * node without a bus certificate).
     */
    public RoleSignatures roles() {
        return roles;
    }

    /** The signature header value for {@code payload}, issued now. */
    public String sign(String purpose, String node, Versioned payload, String binding) {
        long issuedAt = clockMs.getAsLong();
        return issuedAt + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(mac(purpose, node, issuedAt, binding, payload));
    }

    /** Delivery options carrying the signature of {@code payload} for (or from) {@code node}. */
    public DeliveryOptions sign(DeliveryOptions options, String purpose, String node, Versioned payload, String binding) {
        return options.addHeader(SIGNATURE, sign(purpose, node, payload, binding)).addHeader(NODE, node);
    }

    /**
     * As {@link #sign(DeliveryOptions, String, String, Versioned, String)} for a message to the member {@code node},
     * plus this node's tag for it ({@link PeerTags}), so that it can tell which role sent it.
     */
    public DeliveryOptions signTo(DeliveryOptions options, String purpose, String node, Versioned payload) {
        String signature = sign(purpose, node, payload, "");
        options.addHeader(SIGNATURE, signature).addHeader(NODE, node);
        return peers.tagForNode(options, purpose, signature, node);
    }

    /**
     * Signs a notice published on {@code address} and tags it for every member with role {@code to}. On a node without
     * a bus certificate it adds nothing: receivers there check nothing ({@link #verifyNoticeFrom}), and a local or
     * plain bus is not worth the CPU.
     */
    public DeliveryOptions signNotice(DeliveryOptions options, String purpose, String address, Versioned payload,
                                      ClawfleetConfig.Role to) {
        if (!peers.on()) {
            return options;
        }
        String signature = sign(purpose, address, payload, "");
        options.addHeader(SIGNATURE, signature).addHeader(NODE, address);
        return peers.tagForRole(options, purpose, signature, to);
    }

    /** Checks the signature of a message for {@code node}, and that a member with role {@code from} sent it. */
    public Verdict verifyFrom(MultiMap headers, String purpose, String node, Versioned payload, ClawfleetConfig.Role from) {
        Verdict verdict = verify(headers, purpose, node, payload, "");
        return verdict != Verdict.VALID ? verdict : peers.check(headers, purpose, headers.get(SIGNATURE), from);
    }

    /** Checks a notice signed by {@link #signNotice}; on a node without a bus certificate, accepts it as it is. */
    public Verdict verifyNoticeFrom(MultiMap headers, String purpose, String address, Versioned payload,
                                    ClawfleetConfig.Role from) {
        return peers.on() ? verifyFrom(headers, purpose, address, payload, from) : Verdict.VALID;
    }

    /**
     * Checks the headers of a received message.
     *
     * @param node    the node the message must name: the receiver itself (calls, chunks) or the node the
     *                call went to (results)
     * @param binding what the signature must be bound to ("" for none)
     */
    public Verdict verify(MultiMap headers, String purpose, String node, Versioned payload, String binding) {
        String signature = headers == null ? null : headers.get(SIGNATURE);
        String named = headers == null ? null : headers.get(NODE);
        if (signature == null) {
            return Verdict.MISSING;
        }
        if (!node.equals(named)) {
            return Verdict.WRONG_NODE;
        }
        return verify(purpose, node, payload, binding, signature);
    }

    /** Checks a signature made by {@link #sign(String, String, Versioned, String)}, in constant time. */
    public Verdict verify(String purpose, String node, Versioned payload, String binding, String signature) {
        if (signature == null) {
            return Verdict.MISSING;
        }
        Stamped stamped = Stamped.parse(signature);
        if (stamped == null) {
            return Verdict.MALFORMED;
        }
        long issuedAt = stamped.issuedAt();
        byte[] expected = mac(purpose, node, issuedAt, binding, payload);
        // The MAC is checked before the time, so a made-up timestamp says nothing about the key.
        if (!MessageDigest.isEqual(expected, stamped.bytes())) {
            return Verdict.FORGED;
        }
        return Math.abs(clockMs.getAsLong() - issuedAt) > windowMs ? Verdict.EXPIRED : Verdict.VALID;
    }

    /** A signature header value, {@code <issuedAtMs>.<base64url bytes>}, read. */
    record Stamped(long issuedAt, byte[] bytes) {

        /** The value read, or null when it is not of that form. */
        static Stamped parse(String value) {
            int dot = value.indexOf('.');
            try {
                return new Stamped(Long.parseLong(value.substring(0, Math.max(dot, 0))),
                        Base64.getUrlDecoder().decode(value.substring(dot + 1)));
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
    }

    /** How long a valid signature stays valid on this node's clock: what a replay cache must remember. */
    public long windowMs() {
        return windowMs;
    }

    private byte[] mac(String purpose, String node, long issuedAt, String binding, Versioned payload) {
        Mac mac = macs.get();
        mac.reset();
        field(mac, DOMAIN);
        field(mac, purpose.getBytes(StandardCharsets.UTF_8));
        field(mac, node.getBytes(StandardCharsets.UTF_8));
        mac.update(ByteBuffer.allocate(Long.BYTES).putLong(issuedAt).array());
        field(mac, (binding == null ? "" : binding).getBytes(StandardCharsets.UTF_8));
        field(mac, canonical(payload));
        return mac.doFinal();
    }

    /** Length-prefixed, so no two different field lists give the same bytes. */
    private static void field(Mac mac, byte[] bytes) {
        mac.update(ByteBuffer.allocate(Integer.BYTES).putInt(bytes.length).array());
        mac.update(bytes);
    }

    static byte[] canonical(Versioned payload) {
        try {
            return CANONICAL.writeValueAsBytes(payload);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot encode " + payload.getClass().getSimpleName() + " to sign it", e);
        }
    }
}
