package io.clawfleet.deploy.certs;

import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A cluster certificate authority kept in a folder, and the node certificates it issues. Layout (the node folders use
 * the file names of a Kubernetes TLS secret, so {@code kubectl create secret generic --from-file=DIR/worker/} gives
 * what a pod mounts):
 * <pre>
 *   DIR/ca.crt, DIR/ca.key         the current root CA (the key owner-only)
 *   DIR/worker-ca.crt, .key        the intermediate CA that issues certificates with the worker role
 *   DIR/sandbox-ca.crt, .key       the CA (a root of its own) that issues the certificates of sandbox-only nodes
 *   DIR/previous-*.crt, .key       the CAs being replaced, during a rotation
 *   DIR/trust.crt                  the roots gateways and schedulers trust: the current one (and the previous one during
 *                                  a rotation); not the sandbox CA, so a sandbox node's certificate gets no connection
 *   DIR/worker-trust.crt           what a node with the worker role trusts: trust.crt and the sandbox CAs
 *   DIR/sandbox-trust.crt          what a sandbox node trusts: the worker intermediates alone
 *   DIR/NAME/tls.crt, tls.key      a node certificate (leaf, then its CAs) and its key; roles as SAN URIs
 *   DIR/NAME/ca.crt                a copy of the trust file for the node's roles (above)
 * </pre>
 * A folder made before the sandbox CA existed gets one the first time it is opened; the sandbox nodes' certificates
 * are then issued again ({@code clawfleet certs issue}) and every node restarted with its new {@code ca.crt}.
 * Keys are EC P-256; signatures ECDSA with SHA-256. Not thread-safe: one command at a time per folder.
 */
public final class ClusterCa {

    public static final String CA_CERT = "ca.crt";
    public static final String CA_KEY = "ca.key";
    public static final String PREVIOUS_CA_CERT = "previous-ca.crt";
    public static final String PREVIOUS_CA_KEY = "previous-ca.key";
    public static final String TRUST = "trust.crt";
    public static final String WORKER_CA_CERT = "worker-ca.crt";
    public static final String WORKER_CA_KEY = "worker-ca.key";
    public static final String PREVIOUS_WORKER_CA_CERT = "previous-worker-ca.crt";
    public static final String PREVIOUS_WORKER_CA_KEY = "previous-worker-ca.key";
    public static final String SANDBOX_TRUST = "sandbox-trust.crt";
    public static final String SANDBOX_CA_CERT = "sandbox-ca.crt";
    public static final String SANDBOX_CA_KEY = "sandbox-ca.key";
    public static final String PREVIOUS_SANDBOX_CA_CERT = "previous-sandbox-ca.crt";
    public static final String PREVIOUS_SANDBOX_CA_KEY = "previous-sandbox-ca.key";
    public static final String WORKER_TRUST = "worker-trust.crt";
    /** Default life of a CA. */
    public static final Duration CA_DAYS = Duration.ofDays(3650);
    /** Default life of a node certificate: the longest browsers accept, a habit worth keeping. */
    public static final Duration NODE_DAYS = Duration.ofDays(397);
    /** Certificates start a little in the past, so a peer whose clock is behind accepts them at once. */
    static final Duration BACKDATE = Duration.ofMinutes(5);

    private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9._-]{0,62})");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private boolean madeSandboxCa;
    private final X509Certificate caCert;
    private final PrivateKey caKey;
    private final X509Certificate workerCert;
    private final PrivateKey workerKey;
    private final X509Certificate sandboxCert;
    private final PrivateKey sandboxKey;

    private ClusterCa(Path dir, X509Certificate caCert, PrivateKey caKey, X509Certificate workerCert, PrivateKey workerKey,
                      X509Certificate sandboxCert, PrivateKey sandboxKey) {
        this.dir = dir;
        this.caCert = caCert;
        this.caKey = caKey;
        this.workerCert = workerCert;
        this.workerKey = workerKey;
        this.sandboxCert = sandboxCert;
        this.sandboxKey = sandboxKey;
    }

    /** Whether {@code dir} holds a CA. */
    public static boolean exists(Path dir) {
        return Files.exists(dir.resolve(CA_CERT)) || Files.exists(dir.resolve(CA_KEY));
    }

    /** Makes a new CA in {@code dir} (which must hold none) and a trust file with it alone. */
    public static ClusterCa create(Path dir, String clusterName, Duration life) {
        if (exists(dir)) {
            throw new IllegalStateException(dir + " already holds a CA (" + CA_CERT + "); use it, or rotate it with: "
                    + "clawfleet certs rotate --dir " + dir);
        }
        ClusterCa ca = newCa(dir, clusterName, life, Instant.now());
        ca.save(CA_CERT, CA_KEY, WORKER_CA_CERT, WORKER_CA_KEY, SANDBOX_CA_CERT, SANDBOX_CA_KEY);
        ca.writeTrust(List.of(ca.caCert), List.of(ca.workerCert), List.of(ca.sandboxCert));
        return ca;
    }

    /** Opens the CA in {@code dir}. */
    public static ClusterCa open(Path dir) {
        for (String file : List.of(CA_CERT, CA_KEY, WORKER_CA_CERT, WORKER_CA_KEY)) {
            if (!Files.exists(dir.resolve(file))) {
                throw new IllegalStateException(dir + " holds no complete cluster CA (" + file + " is missing; a CA folder has "
                        + CA_CERT + ", " + CA_KEY + ", " + WORKER_CA_CERT + " and " + WORKER_CA_KEY + "); make one with: "
                        + "clawfleet certs init --dir " + dir);
            }
        }
        X509Certificate root = ClusterTls.certificates(dir.resolve(CA_CERT)).get(0);
        X509Certificate worker = ClusterTls.certificates(dir.resolve(WORKER_CA_CERT)).get(0);
        PrivateKey rootKey = ClusterTls.privateKey(dir.resolve(CA_KEY));
        PrivateKey workerKey = ClusterTls.privateKey(dir.resolve(WORKER_CA_KEY));
        if (!Files.exists(dir.resolve(SANDBOX_CA_CERT)) || !Files.exists(dir.resolve(SANDBOX_CA_KEY))) {
            // A folder from before sandbox nodes had a CA of their own: make it, and the trust files with it.
            KeyPair sandboxKeys = ecKeyPair();
            X509Certificate sandbox = sandboxCa(clusterNameOf(root), sandboxKeys, Instant.now(),
                    Duration.between(Instant.now(), root.getNotAfter().toInstant()));
            ClusterCa ca = new ClusterCa(dir, root, rootKey, worker, workerKey, sandbox, sandboxKeys.getPrivate());
            ca.save(CA_CERT, CA_KEY, WORKER_CA_CERT, WORKER_CA_KEY, SANDBOX_CA_CERT, SANDBOX_CA_KEY);
            List<X509Certificate> roots = ClusterTls.certificates(dir.resolve(TRUST));
            List<X509Certificate> workers = Files.exists(dir.resolve(SANDBOX_TRUST))
                    ? ClusterTls.certificates(dir.resolve(SANDBOX_TRUST)) : List.of(worker);
            ca.writeTrust(roots, workers, List.of(sandbox));
            ca.madeSandboxCa = true;
            return ca;
        }
        return new ClusterCa(dir, root, rootKey, worker, workerKey,
                ClusterTls.certificates(dir.resolve(SANDBOX_CA_CERT)).get(0), ClusterTls.privateKey(dir.resolve(SANDBOX_CA_KEY)));
    }

    /** Whether {@link #open} made the sandbox CA just now (a folder from an earlier version): re-issue sandbox nodes. */
    public boolean madeSandboxCa() {
        return madeSandboxCa;
    }

    /** The cluster name in a root CA's common name ({@code clawfleet cluster CA <name> <id>}), or "clawfleet". */
    private static String clusterNameOf(X509Certificate root) {
        java.util.regex.Matcher m = Pattern.compile("CN=clawfleet cluster CA (.+) [0-9]+-[0-9a-f]+(,|$)")
                .matcher(root.getSubjectX500Principal().getName());
        return m.find() ? m.group(1) : "clawfleet";
    }

    /**
     * The CA of sandbox-only nodes: a self-signed root, not under the cluster CA, so that gateways and schedulers (which
     * trust the cluster CA) do not accept its certificates. Only nodes with the worker role trust it.
     */
    private static X509Certificate sandboxCa(String clusterName, KeyPair keys, Instant now, Duration life) {
        String id = now.getEpochSecond() + "-" + java.util.HexFormat.of().formatHex(randomBytes(4));
        X500Name subject = subject("clawfleet sandbox CA " + clusterName + " " + id);
        try {
            JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
            return sign(new JcaX509v3CertificateBuilder(subject, serial(),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(life)), subject, keys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(
                            new GeneralName(GeneralName.uniformResourceIdentifier, ClusterTls.SANDBOX_ISSUER_URI)))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic())),
                    keys.getPrivate());
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot make the sandbox CA certificate: " + e.getMessage(), e);
        }
    }

    private static ClusterCa newCa(Path dir, String clusterName, Duration life, Instant now) {
        KeyPair keys = ecKeyPair();
        KeyPair workerKeys = ecKeyPair();
        // A random part: two CAs made in the same second (init, then rotate, in a script) must still differ by name.
        String id = now.getEpochSecond() + "-" + java.util.HexFormat.of().formatHex(randomBytes(4));
        X500Name subject = subject("clawfleet cluster CA " + clusterName + " " + id);
        X500Name workerSubject = subject("clawfleet worker CA " + clusterName + " " + id);
        try {
            JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
            X509Certificate root = sign(new JcaX509v3CertificateBuilder(subject, serial(),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(life)), subject, keys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(1))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic())),
                    keys.getPrivate());
            // The intermediate that issues workers' certificates: what a sandbox node trusts, and nothing else.
            X509Certificate worker = sign(new JcaX509v3CertificateBuilder(root, serial(),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(life)), workerSubject, workerKeys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(
                            new GeneralName(GeneralName.uniformResourceIdentifier, ClusterTls.WORKER_ISSUER_URI)))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(workerKeys.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(root)),
                    keys.getPrivate());
            KeyPair sandboxKeys = ecKeyPair();
            return new ClusterCa(dir, root, keys.getPrivate(), worker, workerKeys.getPrivate(),
                    sandboxCa(clusterName, sandboxKeys, now, life), sandboxKeys.getPrivate());
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a CA certificate: " + e.getMessage(), e);
        }
    }

    /** This CA's certificate. */
    public X509Certificate certificate() {
        return caCert;
    }

    /**
     * Issues a node certificate into {@code DIR/name/}: {@code tls.crt} (leaf and this CA), {@code tls.key} and
     * {@code ca.crt} (the trust file as it is now).
     *
     * @param hosts DNS names or IP addresses to add as SANs (informational: nodes identify peers by CA and roles)
     */
    public Path issue(String name, Set<Role> roles, List<String> hosts, Duration life) {
        Instant now = Instant.now();
        return issue(name, roles, hosts, now.minus(BACKDATE), now.plus(life));
    }

    /** Issues a certificate valid from {@code notBefore} to {@code notAfter} (tests make expired ones with it). */
    public Path issue(String name, Set<Role> roles, List<String> hosts, Instant notBefore, Instant notAfter) {
        checkName(name);
        if (roles.isEmpty()) {
            throw new IllegalArgumentException("a node certificate needs at least one role (gateway, worker, sandbox, scheduler)");
        }
        KeyPair keys = ecKeyPair();
        List<GeneralName> names = new ArrayList<>();
        roles.stream().map(Role::id).sorted().forEach(role ->
                names.add(new GeneralName(GeneralName.uniformResourceIdentifier, ClusterTls.ROLE_URI_PREFIX + role)));
        names.add(new GeneralName(GeneralName.dNSName, name));
        for (String host : hosts) {
            boolean ip = host.matches("[0-9.]+") || host.contains(":");
            if (ip && !org.bouncycastle.util.IPAddress.isValid(host)) {
                throw new IllegalArgumentException("'" + host + "' is neither an IP address nor a DNS name");
            }
            if (!ip && !host.matches("(?i)[a-z0-9*]([a-z0-9.-]{0,251}[a-z0-9])?")) {
                throw new IllegalArgumentException("'" + host + "' is not a DNS name");
            }
            names.add(new GeneralName(ip ? GeneralName.iPAddress : GeneralName.dNSName, host));
        }
        boolean worker = roles.contains(Role.WORKER);
        boolean sandboxOnly = ClusterTls.workersOnly(roles);
        X509Certificate issuer = worker ? workerCert : sandboxOnly ? sandboxCert : caCert;
        List<X509Certificate> chain = worker ? List.of(workerCert, caCert) : List.of(issuer);
        try {
            JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(issuer, serial(),
                    Date.from(notBefore), Date.from(notAfter), subject(name), keys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(
                            new KeyPurposeId[]{KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(issuer));
            X509Certificate leaf = sign(builder, worker ? workerKey : sandboxOnly ? sandboxKey : caKey);
            Path node = dir.resolve(name);
            Files.createDirectories(node);
            List<X509Certificate> full = new ArrayList<>();
            full.add(leaf);
            full.addAll(chain);
            writeAtomically(node.resolve(ClusterTls.KEY_FILE), pemKey(keys.getPrivate()), true);
            writeAtomically(node.resolve(ClusterTls.CERT_FILE), pem(full), false);
            writeAtomically(node.resolve(ClusterTls.CA_FILE), Files.readString(dir.resolve(trustFileFor(roles))), false);
            return node;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the certificate of " + name + ": " + e.getMessage(), e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make the certificate of " + name + ": " + e.getMessage(), e);
        }
    }

    /**
     * Starts a CA rotation: the current CA becomes the previous one, a new CA is made, and the trust file (and every
     * node folder's {@code ca.crt}) holds both. Nodes restarted with these files accept certificates of either CA.
     */
    public static ClusterCa rotate(Path dir, String clusterName, Duration life) {
        ClusterCa old = open(dir);
        if (Files.exists(dir.resolve(PREVIOUS_CA_CERT))) {
            throw new IllegalStateException(dir + " is already in a rotation (" + PREVIOUS_CA_CERT + " exists): re-issue the "
                    + "node certificates (clawfleet certs rotate --reissue) and end it (clawfleet certs rotate --finish) first");
        }
        ClusterCa fresh = newCa(dir, clusterName, life, Instant.now());
        old.save(PREVIOUS_CA_CERT, PREVIOUS_CA_KEY, PREVIOUS_WORKER_CA_CERT, PREVIOUS_WORKER_CA_KEY,
                PREVIOUS_SANDBOX_CA_CERT, PREVIOUS_SANDBOX_CA_KEY);
        fresh.save(CA_CERT, CA_KEY, WORKER_CA_CERT, WORKER_CA_KEY, SANDBOX_CA_CERT, SANDBOX_CA_KEY);
        fresh.writeTrust(List.of(fresh.caCert, old.caCert), List.of(fresh.workerCert, old.workerCert),
                List.of(fresh.sandboxCert, old.sandboxCert));
        return fresh;
    }

    /** Ends a rotation: only the current CA is trusted (trust file and node folders); the previous CA is deleted. */
    public void finishRotation() {
        if (!Files.exists(dir.resolve(PREVIOUS_CA_CERT))) {
            throw new IllegalStateException(dir + " is not in a rotation (no " + PREVIOUS_CA_CERT + ")");
        }
        for (Path node : nodeFolders()) {
            X509Certificate leaf = ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE)).get(0);
            if (!issuedByCurrent(leaf)) {
                throw new IllegalStateException(node + " still holds a certificate of the previous CA; re-issue it first "
                        + "(clawfleet certs rotate --dir " + dir + " --reissue)");
            }
        }
        writeTrust(List.of(caCert), List.of(workerCert), List.of(sandboxCert));
        try {
            for (String file : List.of(PREVIOUS_CA_KEY, PREVIOUS_CA_CERT, PREVIOUS_WORKER_CA_KEY, PREVIOUS_WORKER_CA_CERT,
                    PREVIOUS_SANDBOX_CA_KEY, PREVIOUS_SANDBOX_CA_CERT)) {
                Files.deleteIfExists(dir.resolve(file));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Issues every node folder's certificate again from the current CA, with the same name and roles. */
    public List<Path> reissueAll(Duration life) {
        List<Path> out = new ArrayList<>();
        for (Path node : nodeFolders()) {
            X509Certificate leaf = ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE)).get(0);
            out.add(issue(node.getFileName().toString(), ClusterTls.rolesOf(leaf), List.of(), life));
        }
        return out;
    }

    /** The folders under the CA's that hold a node certificate. */
    public List<Path> nodeFolders() {
        try (var entries = Files.list(dir)) {
            return entries.filter(p -> Files.isRegularFile(p.resolve(ClusterTls.CERT_FILE))).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The trust file for a node with {@code roles}: a sandbox-only node trusts the workers' CA alone; a node with the
     * worker role trusts the cluster CA and the sandbox CA (sandbox nodes answer its calls); any other trusts the cluster
     * CA alone, so sandbox nodes' certificates get no connection to it.
     */
    public static String trustFileFor(Set<Role> roles) {
        return ClusterTls.workersOnly(roles) ? SANDBOX_TRUST : roles.contains(Role.WORKER) ? WORKER_TRUST : TRUST;
    }

    private void writeTrust(List<X509Certificate> roots, List<X509Certificate> workerCas, List<X509Certificate> sandboxCas) {
        List<X509Certificate> forWorkers = new ArrayList<>(roots);
        forWorkers.addAll(sandboxCas);
        writeAtomically(dir.resolve(TRUST), pem(roots), false);
        writeAtomically(dir.resolve(SANDBOX_TRUST), pem(workerCas), false);
        writeAtomically(dir.resolve(WORKER_TRUST), pem(forWorkers), false);
        for (Path node : nodeFolders()) {
            Set<Role> roles = ClusterTls.rolesOf(ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE)).get(0));
            String file = trustFileFor(roles);
            writeAtomically(node.resolve(ClusterTls.CA_FILE),
                    pem(file.equals(SANDBOX_TRUST) ? workerCas : file.equals(WORKER_TRUST) ? forWorkers : roots), false);
        }
    }

    private void save(String certFile, String keyFile, String workerCertFile, String workerKeyFile,
                      String sandboxCertFile, String sandboxKeyFile) {
        writeAtomically(dir.resolve(keyFile), pemKey(caKey), true);
        writeAtomically(dir.resolve(certFile), pem(List.of(caCert)), false);
        writeAtomically(dir.resolve(workerKeyFile), pemKey(workerKey), true);
        writeAtomically(dir.resolve(workerCertFile), pem(List.of(workerCert)), false);
        writeAtomically(dir.resolve(sandboxKeyFile), pemKey(sandboxKey), true);
        writeAtomically(dir.resolve(sandboxCertFile), pem(List.of(sandboxCert)), false);
    }

    static void checkName(String name) {
        if (name == null || !NAME.matcher(name).matches() || name.equals("..")) {
            throw new IllegalArgumentException("a certificate name is 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a "
                    + "letter or digit, got '" + name + "'");
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey key) throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter().getCertificate(
                    builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    private static byte[] randomBytes(int count) {
        byte[] bytes = new byte[count];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    /** Whether {@code leaf} carries the signature of the current root, worker or sandbox CA (names alone could repeat). */
    private boolean issuedByCurrent(X509Certificate leaf) {
        for (X509Certificate ca : List.of(caCert, workerCert, sandboxCert)) {
            try {
                leaf.verify(ca.getPublicKey());
                return true;
            } catch (GeneralSecurityException e) {
                // not this one
            }
        }
        return false;
    }

    private static BigInteger serial() {
        return new BigInteger(127, RANDOM).add(BigInteger.ONE);
    }

    private static KeyPair ecKeyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("EC P-256 is not available: " + e.getMessage(), e);
        }
    }

    static String pem(List<X509Certificate> certificates) {
        StringBuilder out = new StringBuilder();
        for (X509Certificate certificate : certificates) {
            try {
                out.append(block("CERTIFICATE", certificate.getEncoded()));
            } catch (CertificateEncodingException e) {
                throw new IllegalStateException(e);
            }
        }
        return out.toString();
    }

    static String pemKey(PrivateKey key) {
        return block("PRIVATE KEY", key.getEncoded());
    }

    private static String block(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** Writes through a temporary file and a rename; a key file is owner-only from its creation. */
    static void writeAtomically(Path file, String text, boolean secret) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
            Files.deleteIfExists(tmp);
            if (secret) {
                Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            }
            Files.writeString(tmp, text, StandardCharsets.US_ASCII);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * A subject with this common name, built attribute by attribute: a cluster or node name with {@code ,} or
     * {@code =} in it stays text in the CN and cannot add attributes of its own (a name parsed as a string could).
     */
    static X500Name subject(String commonName) {
        return new org.bouncycastle.asn1.x500.X500NameBuilder(org.bouncycastle.asn1.x500.style.BCStyle.INSTANCE)
                .addRDN(org.bouncycastle.asn1.x500.style.BCStyle.CN, commonName)
                .addRDN(org.bouncycastle.asn1.x500.style.BCStyle.O, "clawfleet").build();
    }
}
