package io.clawfleet.shared.db;

import io.clawfleet.shared.config.ConfigException;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.SslMode;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The runtime pool honours the {@code sslmode} of CLAWFLEET_DB_URL as migrations (pgjdbc) do (issue 22). */
class DbSslTest {

    private static PgConnectOptions options(String query) {
        return Database.connectOptions(new DbUrl("db.internal", 5432, "fleet", "claw", "pw", query));
    }

    @Test
    void withoutSslmodeOrWithDisableTheClientStaysPlaintext() {
        assertThat(options(null).getSslMode()).isEqualTo(SslMode.DISABLE);
        assertThat(options("sslmode=disable").getSslMode()).isEqualTo(SslMode.DISABLE);
    }

    @Test
    void requireEncryptsWithoutCheckingTheCertificateAsLibpqDoes() {
        PgConnectOptions options = options("sslmode=require");
        assertThat(options.getSslMode()).isEqualTo(SslMode.REQUIRE);
        assertThat(options.getSslOptions().isTrustAll()).isTrue();
    }

    @Test
    void verifyCaTrustsTheRootCertFileAndChecksNoHostName() {
        PgConnectOptions options = options("sslmode=verify-ca&sslrootcert=%2Fetc%2Fpg%2Froot.crt");
        assertThat(options.getSslMode()).isEqualTo(SslMode.VERIFY_CA);
        assertThat(options.getSslOptions().isTrustAll()).isFalse();
        assertThat(options.getSslOptions().getTrustOptions()).isInstanceOfSatisfying(PemTrustOptions.class,
                pem -> assertThat(pem.getCertPaths()).containsExactly("/etc/pg/root.crt"));
        assertThat(options.getSslOptions().getHostnameVerificationAlgorithm()).isEmpty();
    }

    @Test
    void verifyFullWithoutRootCertUsesTheJvmTrustStoreAndChecksTheHostName() {
        PgConnectOptions options = options("sslmode=verify-full");
        assertThat(options.getSslMode()).isEqualTo(SslMode.VERIFY_FULL);
        assertThat(options.getSslOptions().isTrustAll()).isFalse();
        assertThat(options.getSslOptions().getTrustOptions()).isNotNull();
        assertThat(options.getSslOptions().getHostnameVerificationAlgorithm()).isEqualTo("HTTPS");
    }

    @Test
    void anUnknownModeIsAConfigErrorNamingTheKnownOnes() {
        assertThatThrownBy(() -> options("sslmode=requir"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown sslmode 'requir'").hasMessageContaining("verify-full");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_DB_URL", "postgresql://h/db?sslmode=on"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("db.url (CLAWFLEET_DB_URL): unknown sslmode 'on': expected disable, allow, prefer,");
    }

    @Test
    void requireAgainstAServerWithoutSslFailsInsteadOfConnectingInPlaintext() {
        // given the embedded PostgreSQL, which offers no SSL
        DbUrl plain = TestDatabases.freshEmpty();
        DbUrl require = new DbUrl(plain.host(), plain.port(), plain.database(), plain.user(), plain.password(), "sslmode=require");
        Vertx vertx = Vertx.vertx();
        try {
            Database plaintext = Database.connect(vertx, plain, 1, 5_000);
            result(plaintext.ping());
            result(plaintext.close());
            // when the URL requires SSL
            Database database = Database.connect(vertx, require, 1, 5_000);
            // then no statement runs, and the error says why
            Throwable error = failure(database.pool().query("SELECT 1").execute());
            assertThat(error.getMessage()).containsIgnoringCase("ssl");
            result(database.close());
        } finally {
            result(vertx.close());
        }
    }
}
