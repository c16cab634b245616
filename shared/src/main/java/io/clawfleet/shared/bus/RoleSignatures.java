package io.clawfleet.shared.bus;

import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.message.Versioned;
import io.vertx.core.MultiMap;
import io.vertx.core.eventbus.DeliveryOptions;

import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Signs the cluster's rare control notices with the node's own certificate key, so a receiver knows which
 * <em>role</em> sent them: the cluster secret is shared by every gateway, worker and sandbox node, a node's key is not.
 * A signature covers a domain, the address, when it was issued and the payload in the canonical JSON form
 * {@link BusSigner} uses; it travels in two headers, {@link #SIGNATURE} ({@code <issuedAtMs>.<base64url signature>})
 * and {@link #CHAIN} (one value per certificate of the signer's chain, leaf first, base64 DER). The receiver checks
 * the chain against the CAs it trusts for the bus (the JDK's PKIX: signatures, dates, key usage), that the leaf
 * names the role the notice needs, the signature, and that it was issued within the window of its clock.
 * <p>
 * Which notices: those that move partitions between workers ({@code WorkerReady}, {@code PartitionReleased}), which a
 * worker accepts only from a worker. They are a few per second in the whole cluster, so an ECDSA signature each
 * costs nothing that matters; per-message traffic (wake-ups, replies, chunks) is kept off it. Checked chains are
 * cached (bounded), so a receiver runs PKIX once per signer, and one signature check per notice.
 * <p>
 * A node without a bus certificate (alone, or {@code --insecure-cluster}) has {@link #off()}: it signs nothing and
 * accepts everything, as everything else on a plain bus is accepted. Thread-safe.
 */
public final class RoleSignatures {

    /** Header: {@code <issuedAtMs>.<base64url signature>}. */
    public static final String SIGNATURE = "clawfleet-role-sig";
    /** Header, repeated: the signer's certificate chain, leaf first, each base64 DER. */
    public static final String CHAIN = "clawfleet-role-chain";

    private static final byte[] DOMAIN = "clawfleet-role-notice-v1".getBytes(StandardCharsets.UTF_8);
    private static final int CACHED_CHAINS = 256;

    /** What a check found; everything but {@link #VALID} means the notice is dropped. */
    public enum Verdict {
        VALID, MISSING, MALFORMED, UNTRUSTED, WRONG_ROLE, FORGED, EXPIRED;

        /** Lowercase, for metric tags and logs. */
        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** A chain this node checked: its leaf's roles and key, or why it is not trusted. */
    private record Checked(Set<Role> roles, PublicKey key, String algorithm, long notAfterMs, String problem) {
    }

    private final ClusterTls tls;
    private final LongSupplier clockMs;
    private final long windowMs;
    private final List<String> chainValues;
    private final String algorithm;
    private final Map<String, Checked> checked = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Checked> eldest) {
            return size() > CACHED_CHAINS;
        }
    };

    private RoleSignatures(ClusterTls tls, LongSupplier clockMs, long windowMs) {
        this.tls = tls;
        this.clockMs = Objects.requireNonNull(clockMs);
        this.windowMs = windowMs;
        if (tls == null) {
            this.chainValues = List.of();
            this.algorithm = null;
        } else {
            this.chainValues = tls.chainBase64();
            this.algorithm = ClusterTls.signatureAlgorithm(tls.privateKey().getAlgorithm());
        }
    }

    /** Signatures with the node's bus certificate and key, checked against the CAs it trusts. */
    public static RoleSignatures of(ClusterTls tls, LongSupplier clockMs, long windowMs) {
        return new RoleSignatures(Objects.requireNonNull(tls, "tls"), clockMs, windowMs);
    }

    /** For a node without a bus certificate: signs nothing, accepts everything. */
    public static RoleSignatures off() {
        return new RoleSignatures(null, System::currentTimeMillis, BusSigner.DEFAULT_WINDOW_MS);
    }

    /** Whether notices are signed and checked here (the node has a bus certificate). */
    public boolean on() {
        return tls != null;
    }

    /** Delivery options carrying this node's signature of {@code payload} for {@code address} (unchanged when off). */
    public DeliveryOptions sign(DeliveryOptions options, String address, Versioned payload) {
        if (tls == null) {
            return options;
        }
        long issuedAt = clockMs.getAsLong();
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(tls.privateKey());
            signer.update(signed(address, issuedAt, payload));
            options.addHeader(SIGNATURE, issuedAt + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(signer.sign()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot sign with the node's key: " + e.getMessage(), e);
        }
        chainValues.forEach(value -> options.addHeader(CHAIN, value));
        return options;
    }

    /**
     * Checks a received notice: signed by a certificate this node trusts that names {@code role}, over this address
     * and payload, within the window. Always {@link Verdict#VALID} when off.
     */
    public Verdict verify(MultiMap headers, String address, Versioned payload, Role role) {
        if (tls == null) {
            return Verdict.VALID;
        }
        String signature = headers == null ? null : headers.get(SIGNATURE);
        List<String> chain = headers == null ? List.of() : headers.getAll(CHAIN);
        if (signature == null || chain.isEmpty()) {
            return Verdict.MISSING;
        }
        BusSigner.Stamped stamped = BusSigner.Stamped.parse(signature);
        if (stamped == null) {
            return Verdict.MALFORMED;
        }
        long issuedAt = stamped.issuedAt();
        Checked signer = check(chain);
        if (signer == null) {
            return Verdict.MALFORMED;
        }
        if (signer.problem() != null || clockMs.getAsLong() > signer.notAfterMs()) {
            return Verdict.UNTRUSTED;
        }
        if (!signer.roles().contains(role)) {
            return Verdict.WRONG_ROLE;
        }
        try {
            Signature verifier = Signature.getInstance(signer.algorithm());
            verifier.initVerify(signer.key());
            verifier.update(signed(address, issuedAt, payload));
            if (!verifier.verify(stamped.bytes())) {
                return Verdict.FORGED;
            }
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            return Verdict.FORGED;
        }
        return Math.abs(clockMs.getAsLong() - issuedAt) > windowMs ? Verdict.EXPIRED : Verdict.VALID;
    }

    /** The chain checked once (cached by its text); null when it cannot even be read. */
    private Checked check(List<String> values) {
        String cacheKey = String.join(",", values);
        synchronized (checked) {
            Checked known = checked.get(cacheKey);
            if (known != null) {
                return known;
            }
        }
        List<X509Certificate> chain = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (String value : values) {
                chain.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(Base64.getDecoder().decode(value))));
            }
        } catch (CertificateException | IllegalArgumentException e) {
            return null;
        }
        X509Certificate leaf = chain.get(0);
        String problem = null;
        try {
            tls.checkPeer(chain);
        } catch (CertificateException e) {
            problem = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        }
        Checked result = new Checked(ClusterTls.rolesOf(leaf), leaf.getPublicKey(),
                ClusterTls.signatureAlgorithm(leaf.getPublicKey().getAlgorithm()), leaf.getNotAfter().getTime(), problem);
        // Only good chains are remembered (a chain not valid yet may be soon); verify() still refuses one once its leaf
        // has expired.
        if (problem == null) {
            synchronized (checked) {
                checked.put(cacheKey, result);
            }
        }
        return result;
    }

    private static byte[] signed(String address, long issuedAt, Versioned payload) {
        byte[] to = address.getBytes(StandardCharsets.UTF_8);
        byte[] body = BusSigner.canonical(payload);
        return ByteBuffer.allocate(4 + DOMAIN.length + 4 + to.length + Long.BYTES + 4 + body.length)
                .putInt(DOMAIN.length).put(DOMAIN)
                .putInt(to.length).put(to)
                .putLong(issuedAt)
                .putInt(body.length).put(body)
                .array();
    }
}
