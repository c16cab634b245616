package io.clawfleet.shared.db;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Attack 2 of issue 22: a process on the host (a sandboxed run) connects to the embedded server as superuser. */
class EmbeddedDatabaseTest {

    private static void connect(DbUrl url, String password) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", "postgres");
        if (password != null) {
            properties.setProperty("password", password);
        }
        try (var connection = DriverManager.getConnection(url.jdbcUrl(), properties); var statement = connection.createStatement()) {
            statement.execute("SELECT 1");
        }
    }

    @Test
    void noConnectionIsTrustedTheSuperuserNeedsTheGeneratedPasswordAcrossRestarts(@TempDir Path folder) throws Exception {
        Path data = folder.resolve("postgres");
        DbUrl url;
        try (EmbeddedDatabase server = EmbeddedDatabase.start(data)) {
            url = server.url();
            // then the server asks for the password, and only the right one will do
            assertThatThrownBy(() -> connect(url, null)).isInstanceOf(SQLException.class).hasMessageContaining("password");
            assertThatThrownBy(() -> connect(url, "postgres")).isInstanceOf(SQLException.class)
                    .hasMessageContaining("password authentication failed");
            connect(url, url.password());
            assertThat(url.password()).hasSizeGreaterThanOrEqualTo(32);
            // and the password kept for restarts is its owner's alone
            Path kept = folder.resolve("postgres.password");
            assertThat(Files.getPosixFilePermissions(kept)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
            assertThat(Files.readString(kept).strip()).isEqualTo(url.password());
        }
        // when it restarts on the same folder and port, the same password is required
        try (EmbeddedDatabase server = EmbeddedDatabase.start(data, url.port())) {
            assertThat(server.url().password()).isEqualTo(url.password());
            assertThatThrownBy(() -> connect(server.url(), null)).isInstanceOf(SQLException.class);
            connect(server.url(), url.password());
        }
    }

    @Test
    void aServerStartedInTheBackgroundNamesItsAddressAtOnceAndTakesConnectionsOnceStarted(@TempDir Path folder)
            throws Exception {
        // given a server started on a thread of its own (as up starts it, beside its node)
        EmbeddedDatabase.Starting starting = EmbeddedDatabase.startInBackground(folder.resolve("postgres"), 0, Map.of(), true);
        // then its address and password are known before it is up, and are the ones it takes once it is
        DbUrl url = starting.url();
        assertThat(url.port()).isPositive();
        assertThat(url.password()).isEqualTo(Files.readString(folder.resolve("postgres.password")).strip());
        EmbeddedDatabase server = starting.database().get(60, TimeUnit.SECONDS);
        assertThat(server.url()).isEqualTo(url);
        connect(url, url.password());
        // and closing the start stops the server it made
        starting.close();
        assertThatThrownBy(() -> connect(url, url.password())).isInstanceOf(SQLException.class);
    }

    @Test
    void aServerThatCannotStartInTheBackgroundFailsItsFutureSayingWhereAndWhy(@TempDir Path folder) throws Exception {
        // given a data folder PostgreSQL cannot start on (made by hand: a settings file, and no cluster)
        Path data = Files.createDirectories(folder.resolve("postgres"));
        Files.writeString(data.resolve("postgresql.conf"), "# no cluster here\n");
        // when it starts in the background, with up's wait of a minute
        long start = System.nanoTime();
        EmbeddedDatabase.Starting starting = EmbeddedDatabase.startInBackground(data, 0, Map.of(), true);
        // then the future fails at once, not a minute on, saying where and why
        assertThatThrownBy(() -> starting.database().get(60, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("cannot start the embedded PostgreSQL in " + data.toAbsolutePath())
                .hasMessageContaining("no PG_VERSION, so it is not a PostgreSQL data folder");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
        // and closing it is harmless
        starting.close();
    }

    @Test
    void aServerThatStartsIsTakenAndWritesItsOutputBesideItsDataFolder(@TempDir Path folder) throws Exception {
        // given a server on a new folder (initdb, then pg_ctl start, which ends once the server is up)
        Path data = folder.resolve("postgres");
        try (EmbeddedDatabase database = EmbeddedDatabase.start(data, 0)) {
            // then the watcher did not take pg_ctl's end for a failure, and the server's output went beside its data
            assertThat(Files.getPosixFilePermissions(EmbeddedDatabase.logFile(data)))
                    .isEqualTo(PosixFilePermissions.fromString("rw-------"));
            assertThat(Files.readString(EmbeddedDatabase.logFile(data))).contains("server started");
            connect(database.url(), database.url().password());
        }
        // and when its settings file is broken, the next start fails as soon as the server has exited (pg_ctl saw it
        // go), with the server's own words from its log
        Files.writeString(data.resolve("postgresql.conf"), "this is not a setting\n", StandardOpenOption.APPEND);
        long start = System.nanoTime();
        assertThatThrownBy(() -> EmbeddedDatabase.start(data, 0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the server exited during its start")
                .hasMessageContaining(EmbeddedDatabase.logFile(data).toAbsolutePath().toString())
                .hasMessageContaining("syntax error")
                .hasMessageNotContaining("server started");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
    }
}
