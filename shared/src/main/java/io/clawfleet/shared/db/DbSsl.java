package io.clawfleet.shared.db;

import io.vertx.core.net.ClientSSLOptions;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.core.net.TrustOptions;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.SslMode;

import javax.net.ssl.TrustManagerFactory;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Map;

/**
 * The {@code sslmode} and {@code sslrootcert} of a database URL, applied to the reactive client the way libpq
 * and pgjdbc (Flyway) read them, so a node's runtime pool is never less protected than its migrations.
 * {@code require} encrypts without checking the certificate; {@code verify-ca} checks it against
 * {@code sslrootcert} (a PEM file) or, without one or with {@code sslrootcert=system}, the JVM's trust store;
 * {@code verify-full} checks the host name too. No {@code sslmode} keeps the client's default: plaintext.
 */
public final class DbSsl {

    private static final Map<String, SslMode> MODES = Map.of(
            "disable", SslMode.DISABLE, "allow", SslMode.ALLOW, "prefer", SslMode.PREFER,
            "require", SslMode.REQUIRE, "verify-ca", SslMode.VERIFY_CA, "verify-full", SslMode.VERIFY_FULL);

    private DbSsl() {
    }

    /** The URL's mode, or null when it names none; an unknown mode is an IllegalArgumentException naming the known ones. */
    static SslMode mode(DbUrl url) {
        String mode = url.parameter("sslmode");
        if (mode == null) {
            return null;
        }
        SslMode known = MODES.get(mode);
        if (known == null) {
            throw new IllegalArgumentException("unknown sslmode '" + mode
                    + "': expected disable, allow, prefer, require, verify-ca or verify-full");
        }
        return known;
    }

    /** Sets the mode and trust of {@code options} from the URL. */
    static PgConnectOptions apply(DbUrl url, PgConnectOptions options) {
        SslMode mode = mode(url);
        if (mode == null || mode == SslMode.DISABLE) {
            return options.setSslMode(SslMode.DISABLE);
        }
        ClientSSLOptions ssl = new ClientSSLOptions();
        if (mode == SslMode.VERIFY_CA || mode == SslMode.VERIFY_FULL) {
            String rootCert = url.parameter("sslrootcert");
            ssl.setTrustOptions(rootCert == null || rootCert.isEmpty() || rootCert.equals("system")
                    ? systemTrust() : new PemTrustOptions().addCertPath(rootCert));
            // Checks the name in the server's certificate against the host the URL names.
            ssl.setHostnameVerificationAlgorithm(mode == SslMode.VERIFY_FULL ? "HTTPS" : "");
        } else {
            // libpq's allow, prefer and require encrypt but do not verify: the server's certificate is not checked.
            ssl.setTrustAll(true).setHostnameVerificationAlgorithm("");
        }
        return options.setSslMode(mode).setSslOptions(ssl);
    }

    private static TrustOptions systemTrust() {
        try {
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init((KeyStore) null);
            return TrustOptions.wrap(factory);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JVM's trust store cannot be read: " + e.getMessage(), e);
        }
    }
}
