package io.clawfleet.shared.cluster;

import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.PemTrustOptions;

import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Mutual TLS for the clustered event bus. A node's certificate comes from the cluster CA (or the operator's own PKI)
 * and names the node's roles as subject alternative name URIs ({@value #ROLE_URI_PREFIX}{@code <role>}). Every
 * event-bus connection is TLS 1.3 with a certificate both ways, checked by the JDK's PKIX against the CAs the node
 * trusts (signature, validity, key usage); a member without one (none, another CA's, an expired one) gets no
 * connection in either direction, so it receives nothing even after registering for an address, and sends nothing.
 * <p>
 * Roles, where they decide: certificates of nodes with the worker role are issued by an intermediate CA of their own
 * (it carries {@value #WORKER_ISSUER_URI}), and a sandbox node trusts only that intermediate. So a sandbox node
 * accepts connections from workers alone, and nothing else (a gateway, a scheduler, another sandbox node, even with
 * the cluster secret) can make it run a program. The other way round, sandbox-only nodes' certificates come from a CA
 * of their own ({@value #SANDBOX_ISSUER_URI}, a separate root) that only workers trust: a sandbox host taken over gets
 * no connection to a gateway or a scheduler, so the stream chunks it could sign with the cluster secret reach none.
 * The checks are the TLS handshake's own, on settings Vert.x's clustered event bus can carry (PEM values; it copies its
 * options through JSON, which drops custom trust managers). Where one role must be told from another on a connection
 * every role may open (a worker's: sandbox nodes answer calls on it), the notices that need it carry a signature with
 * the sender's certificate key ({@code io.clawfleet.shared.bus.RoleSignatures}).
 * Identity is the CA and the roles, not the host name: node addresses change with every pod, so certificates need
 * not name them. The files are read once, at start (rotation is a rolling restart, see docs/SECURITY.md).
 */
public final class ClusterTls {

    /** The SAN URI prefix of a role: {@code urn:clawfleet:role:worker}. */
    public static final String ROLE_URI_PREFIX = "urn:clawfleet:role:";
    /** In {@code cluster.tls.dir}: the node's certificate chain (leaf first), PEM. Kubernetes TLS secret names. */
    public static final String CERT_FILE = "tls.crt";
    /** In {@code cluster.tls.dir}: the node's private key, PKCS#8 PEM ({@code BEGIN PRIVATE KEY}). */
    public static final String KEY_FILE = "tls.key";
    /** In {@code cluster.tls.dir}: the CA certificates to trust, PEM, one or more (two during a CA rotation). */
    public static final String CA_FILE = "ca.crt";
    /** Carried (as a SAN URI) by the intermediate CA that issues the certificates of nodes with the worker role. */
    public static final String WORKER_ISSUER_URI = "urn:clawfleet:issuer:worker";
    /**
     * Carried (as a SAN URI) by the CA that issues the certificates of sandbox-only nodes. It is a root of its own, not
     * under the cluster CA: only nodes with the worker role trust it, so a sandbox node's certificate gets no connection
     * to a gateway or a scheduler, and nothing a sandbox host sends reaches them.
     */
    public static final String SANDBOX_ISSUER_URI = "urn:clawfleet:issuer:sandbox";
    /** Only protocol the bus speaks. */
    public static final String PROTOCOL = "TLSv1.3";
    /** A node warns at start when its certificate expires sooner than this. */
    static final Duration EXPIRY_WARNING = Duration.ofDays(14);

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ClusterTls.class);
    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z ]+)-----([A-Za-z0-9+/=\\s]+)-----END \\1-----");

    private final PrivateKey key;
    private final List<X509Certificate> chain;
    private final List<X509Certificate> trusted;
    private final Set<Role> roles;
    /** PKIX over {@link #trusted}, made on first use by {@link #checkPeer}. */
    private volatile X509TrustManager peers;

    private ClusterTls(PrivateKey key, List<X509Certificate> chain, List<X509Certificate> trusted) {
        this.key = key;
        this.chain = List.copyOf(chain);
        this.trusted = List.copyOf(trusted);
        this.roles = rolesOf(chain.get(0));
    }

    /** Whether a node with {@code roles} takes connections from workers only: a node that is a sandbox node and nothing else. */
    public static boolean workersOnly(Set<Role> roles) {
        return roles.equals(Set.of(Role.SANDBOX));
    }

    /** Whether {@code key} is an EC key on P-256 (secp256r1), the curve every node's key agreement uses. */
    static boolean ecP256(java.security.Key key) {
        return key instanceof java.security.interfaces.ECKey ec && ec.getParams().getCurve().getField().getFieldSize() == 256
                && ec.getParams().getOrder().bitLength() == 256;
    }

    /** Whether {@code ca} is the CA that issues the certificates of sandbox-only nodes ({@value #SANDBOX_ISSUER_URI}). */
    public static boolean issuesSandboxes(X509Certificate ca) {
        return uris(ca).contains(SANDBOX_ISSUER_URI);
    }

    /** Whether {@code ca} is an intermediate CA that issues the certificates of workers ({@value #WORKER_ISSUER_URI}). */
    public static boolean issuesWorkers(X509Certificate ca) {
        return uris(ca).contains(WORKER_ISSUER_URI);
    }

    /**
     * Reads a node's certificate, key and trusted CAs, and checks them: the key is the certificate's, the certificate
     * is valid now and names every one of {@code nodeRoles}, and the chain leads to a trusted CA (a sandbox-only node,
     * which trusts only the workers' CA, checks its chain link by link instead, and that every CA it trusts issues
     * workers' certificates).
     *
     * @param dir       holds {@value #CERT_FILE}, {@value #KEY_FILE} and (unless {@code trustFile}) {@value #CA_FILE}
     * @param trustFile the CAs to trust instead of {@code dir/ca.crt}; null for that file
     * @throws IllegalStateException naming the file and what is wrong with it
     */
    public static ClusterTls load(Path dir, Path trustFile, Set<Role> nodeRoles, Clock clock) {
        Path certFile = dir.resolve(CERT_FILE);
        Path keyFile = dir.resolve(KEY_FILE);
        Path caFile = trustFile != null ? trustFile : dir.resolve(CA_FILE);
        List<X509Certificate> chain = certificates(certFile);
        List<X509Certificate> trusted = certificates(caFile);
        PrivateKey key = privateKey(keyFile);
        if (!chain.get(0).getPublicKey().equals(publicKeyOf(key, chain.get(0)))) {
            throw new IllegalStateException(keyFile + " is not the key of the certificate in " + certFile);
        }
        ClusterTls tls = new ClusterTls(key, chain, trusted);
        X509Certificate leaf = chain.get(0);
        if ((nodeRoles.contains(Role.GATEWAY) || nodeRoles.contains(Role.WORKER)) && !ecP256(key)) {
            // Workers and gateways share a key per pair by ECDH of their certificates' keys (io.clawfleet.shared.bus.PeerTags).
            throw new IllegalStateException(keyFile + " holds a " + key.getAlgorithm() + " key, but a node with the gateway or "
                    + "worker role needs an EC P-256 key (workers tag replies for gateways with a key the two agree by ECDH); "
                    + "clawfleet certs issue makes one, and cert-manager does with privateKey {algorithm: ECDSA, size: 256}");
        }
        if (!tls.roles.containsAll(nodeRoles)) {
            throw new IllegalStateException("the certificate in " + certFile + " (" + leaf.getSubjectX500Principal().getName()
                    + ") carries roles " + ids(tls.roles) + " but this node has roles " + ids(nodeRoles)
                    + "; issue one for these roles: clawfleet certs issue --dir <ca-dir> --name <node> --roles "
                    + String.join(",", ids(nodeRoles)));
        }
        try {
            leaf.checkValidity(java.util.Date.from(clock.instant()));
        } catch (CertificateExpiredException | CertificateNotYetValidException e) {
            throw new IllegalStateException("the certificate in " + certFile + " is not valid now (" + leaf.getNotBefore().toInstant()
                    + " to " + leaf.getNotAfter().toInstant() + "); issue a new one", e);
        }
        if (workersOnly(nodeRoles)) {
            // Its own chain cannot be checked against its trust (it trusts the workers' CA, not the root that issued its
            // certificate): check that each certificate of the chain is valid now and signed by the next.
            for (int i = 0; i < chain.size(); i++) {
                X509Certificate certificate = chain.get(i);
                try {
                    certificate.checkValidity(java.util.Date.from(clock.instant()));
                    if (i + 1 < chain.size()) {
                        certificate.verify(chain.get(i + 1).getPublicKey());
                    }
                } catch (GeneralSecurityException e) {
                    throw new IllegalStateException("the chain in " + certFile + " is broken at "
                            + certificate.getSubjectX500Principal().getName() + ": " + e.getMessage()
                            + " (tls.crt holds the node's certificate, then the CAs that issued it)", e);
                }
            }
            // A sandbox node's trust is its defence: a CA that issues other roles' certificates would let them in.
            for (X509Certificate ca : trusted) {
                if (!issuesWorkers(ca)) {
                    throw new IllegalStateException("a sandbox node must trust only the CA that issues workers' certificates ("
                            + WORKER_ISSUER_URI + "), but " + caFile + " holds " + ca.getSubjectX500Principal().getName()
                            + "; give it the ca.crt that clawfleet certs issue wrote for a sandbox node");
                }
            }
        } else {
            if (!nodeRoles.contains(Role.WORKER)) {
                // Only workers talk with sandbox nodes: a gateway or scheduler that trusted their CA would let a sandbox
                // host taken over connect to it.
                for (X509Certificate ca : trusted) {
                    if (issuesSandboxes(ca)) {
                        throw new IllegalStateException("only a node with the worker role may trust the sandbox nodes' CA ("
                                + SANDBOX_ISSUER_URI + "), but " + caFile + " holds " + ca.getSubjectX500Principal().getName()
                                + " and this node has roles " + ids(nodeRoles)
                                + "; give it the ca.crt that clawfleet certs issue wrote for its roles");
                    }
                }
            }
            try {
                pkix(trusted).checkClientTrusted(chain.toArray(X509Certificate[]::new), "UNKNOWN");
            } catch (CertificateException e) {
                throw new IllegalStateException("the certificate in " + certFile + " is not one the cluster trusts ("
                        + caFile + "): " + reason(e), e);
            }
        }
        Instant notAfter = leaf.getNotAfter().toInstant();
        if (Duration.between(clock.instant(), notAfter).compareTo(EXPIRY_WARNING) < 0) {
            LOG.warn("cluster certificate {} expires at {}: issue a new one and restart the node before then",
                    certFile, notAfter);
        }
        return tls;
    }

    /** The roles a certificate names (its {@value #ROLE_URI_PREFIX} SAN URIs); unknown role names are ignored. */
    public static Set<Role> rolesOf(X509Certificate certificate) {
        EnumSet<Role> roles = EnumSet.noneOf(Role.class);
        for (String uri : uris(certificate)) {
            if (uri.startsWith(ROLE_URI_PREFIX)) {
                String id = uri.substring(ROLE_URI_PREFIX.length()).toUpperCase(Locale.ROOT);
                for (Role role : Role.values()) {
                    if (role.name().equals(id)) {
                        roles.add(role);
                    }
                }
            }
        }
        return Set.copyOf(roles);
    }

    private static List<String> uris(X509Certificate certificate) {
        List<String> out = new ArrayList<>();
        try {
            Collection<List<?>> names = certificate.getSubjectAlternativeNames();
            if (names != null) {
                for (List<?> name : names) {
                    // 6 = uniformResourceIdentifier
                    if (Integer.valueOf(6).equals(name.get(0)) && name.get(1) instanceof String uri) {
                        out.add(uri);
                    }
                }
            }
        } catch (java.security.cert.CertificateParsingException e) {
            return List.of();
        }
        return out;
    }

    /** Makes {@code options} speak TLS 1.3 with this node's certificate, requiring and checking the peer's. */
    public EventBusOptions apply(EventBusOptions options) {
        // PEM values, not key or trust managers: the clustered event bus copies its options through JSON.
        PemTrustOptions trust = new PemTrustOptions();
        trusted.forEach(ca -> trust.addCertValue(Buffer.buffer(pem("CERTIFICATE", encoded(ca)))));
        StringBuilder certs = new StringBuilder();
        chain.forEach(certificate -> certs.append(pem("CERTIFICATE", encoded(certificate))));
        return options.setSsl(true)
                .setClientAuth(ClientAuth.REQUIRED)
                .setEnabledSecureTransportProtocols(Set.of(PROTOCOL))
                .setKeyCertOptions(new PemKeyCertOptions()
                        .setKeyValue(Buffer.buffer(pem("PRIVATE KEY", key.getEncoded())))
                        .setCertValue(Buffer.buffer(certs.toString())))
                .setTrustOptions(trust);
    }

    private static byte[] encoded(X509Certificate certificate) {
        try {
            return certificate.getEncoded();
        } catch (java.security.cert.CertificateEncodingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** The roles this node's certificate carries. */
    public Set<Role> roles() {
        return roles;
    }

    /** The node's certificate. */
    public X509Certificate certificate() {
        return chain.get(0);
    }

    /** The node's certificate chain, leaf first, each base64 DER: how it travels in headers and member attributes. */
    public List<String> chainBase64() {
        List<String> values = new java.util.ArrayList<>();
        for (X509Certificate certificate : chain) {
            try {
                values.add(Base64.getEncoder().encodeToString(certificate.getEncoded()));
            } catch (java.security.cert.CertificateEncodingException e) {
                throw new IllegalStateException(e);
            }
        }
        return List.copyOf(values);
    }

    /** The node's certificate chain, leaf first, as in its {@value #CERT_FILE}. */
    public List<X509Certificate> chain() {
        return chain;
    }

    /** The node's private key (for {@code RoleSignatures}; never logged). */
    public PrivateKey privateKey() {
        return key;
    }

    /**
     * Checks a peer's chain (leaf first) as the bus handshake does: the JDK's PKIX against the CAs this node trusts.
     *
     * @throws CertificateException saying why it is not trusted
     */
    public void checkPeer(List<X509Certificate> peerChain) throws CertificateException {
        X509TrustManager manager = peers;
        if (manager == null) {
            manager = pkix(trusted);
            peers = manager;
        }
        manager.checkClientTrusted(peerChain.toArray(X509Certificate[]::new), "UNKNOWN");
    }

    /** The JCA signature algorithm for a key algorithm ({@code EC}, {@code RSA}, {@code Ed25519}). */
    public static String signatureAlgorithm(String keyAlgorithm) {
        return switch (keyAlgorithm) {
            case "EC" -> "SHA256withECDSA";
            case "RSA" -> "SHA256withRSA";
            default -> keyAlgorithm;
        };
    }

    /** The CA certificates this node trusts. */
    public List<X509Certificate> trusted() {
        return trusted;
    }

    private static List<String> ids(Set<Role> roles) {
        return roles.stream().map(Role::id).sorted().toList();
    }

    private static String reason(CertificateException e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause == e ? e.getMessage() : e.getMessage() + " (" + cause.getMessage() + ")";
    }

    /** The PEM certificates in {@code file}, in order. */
    public static List<X509Certificate> certificates(Path file) {
        String text = read(file);
        List<X509Certificate> out = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            Matcher m = PEM.matcher(text);
            while (m.find()) {
                if (m.group(1).equals("CERTIFICATE")) {
                    out.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(der(m.group(2)))));
                }
            }
        } catch (CertificateException | IllegalArgumentException e) {
            throw new IllegalStateException(file + " holds a certificate that cannot be read: " + e.getMessage(), e);
        }
        if (out.isEmpty()) {
            throw new IllegalStateException(file + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        return out;
    }

    /** The PKCS#8 PEM private key in {@code file} (EC, RSA or Ed25519). */
    public static PrivateKey privateKey(Path file) {
        Matcher m = PEM.matcher(read(file));
        if (!m.find() || !m.group(1).equals("PRIVATE KEY")) {
            throw new IllegalStateException(file + " holds no PKCS#8 private key (-----BEGIN PRIVATE KEY-----); convert "
                    + "one with: openssl pkcs8 -topk8 -nocrypt -in old.key -out " + file.getFileName());
        }
        byte[] der = der(m.group(2));
        for (String algorithm : List.of("EC", "RSA", "Ed25519")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new IllegalStateException(file + " holds a private key that is neither EC, RSA nor Ed25519");
    }

    /** The public key that goes with {@code key}, found by signing with it and checking against the certificate. */
    private static java.security.PublicKey publicKeyOf(PrivateKey key, X509Certificate certificate) {
        try {
            String algorithm = signatureAlgorithm(key.getAlgorithm());
            byte[] probe = "clawfleet-key-check".getBytes(StandardCharsets.UTF_8);
            java.security.Signature signer = java.security.Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            java.security.Signature verifier = java.security.Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature) ? certificate.getPublicKey() : null;
        } catch (GeneralSecurityException e) {
            return null;
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new IllegalStateException(file + " does not exist (cluster.tls.dir must hold " + CERT_FILE + ", "
                    + KEY_FILE + " and " + CA_FILE + "; make them with: clawfleet certs init)");
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static byte[] der(String base64) {
        return Base64.getMimeDecoder().decode(base64);
    }

    private static X509TrustManager pkix(List<X509Certificate> trusted) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            for (int i = 0; i < trusted.size(); i++) {
                store.setCertificateEntry("ca-" + i, trusted.get(i));
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
            factory.init(store);
            for (TrustManager manager : factory.getTrustManagers()) {
                if (manager instanceof X509TrustManager x509) {
                    return x509;
                }
            }
            throw new IllegalStateException("no X.509 trust manager");
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot set up the trusted CAs: " + e.getMessage(), e);
        }
    }
}
