package io.clawfleet.shared.db;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.Objects;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A node's start skips Flyway only when Flyway would have nothing to do. */
class MigrationsTest {

    private static EmbeddedDatabase server;

    @BeforeAll
    static void start() {
        server = EmbeddedDatabase.start(null);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void migrateValidatesAnUpToDateSchemaANodeStartDoesNotRereadIt() throws Exception {
        DbUrl url = server.createDatabase("migrations_validate");
        Migrations.apply(url, 8);
        try (Connection connection = connect(url); var statement = connection.createStatement()) {
            statement.execute("""
                    UPDATE flyway_schema_history SET checksum = checksum + 1
                    WHERE installed_rank = (SELECT min(installed_rank) FROM flyway_schema_history WHERE checksum IS NOT NULL)""");
        }
        // a node's start finds the schema current and leaves the history alone
        assertThat(Migrations.apply(url, 8)).isEqualTo(8);
        // clawfleet migrate runs Flyway, which finds the script changed since it was applied
        assertThatThrownBy(() -> Migrations.apply(url, 8, true)).hasMessageContaining("checksum mismatch");
    }

    private static Connection connect(DbUrl url) throws SQLException {
        return DriverManager.getConnection(url.jdbcUrl(), url.user(), url.password());
    }

    @Test
    void theNewestMigrationNamedInTheCodeIsTheNewestScript() throws URISyntaxException, java.io.IOException {
        Path folder = Path.of(Objects.requireNonNull(Migrations.class.getClassLoader().getResource("db/migration")).toURI());
        try (var files = Files.list(folder)) {
            long newest = files.map(f -> f.getFileName().toString()).filter(n -> n.matches("V\\d+__.*\\.sql"))
                    .map(n -> Long.parseLong(n.substring(1, n.indexOf("__")))).max(Comparator.naturalOrder()).orElseThrow();
            assertThat(Migrations.NEWEST).as("Migrations.NEWEST must name the newest script in db/migration")
                    .isEqualTo(Long.toString(newest));
        }
    }

    @Test
    void onlyASchemaAtTheNewestMigrationWithNoFailureSkipsFlyway() throws Exception {
        DbUrl url = server.createDatabase("migrations_skip");
        try (Connection connection = connect(url); var statement = connection.createStatement()) {
            // a new database is Flyway's
            assertThat(Migrations.upToDate(connection)).isFalse();
            assertThat(Migrations.apply(url, 16)).isEqualTo(16);
            assertThat(Migrations.upToDate(connection)).isTrue();
            // a second start finds the schema current and the cluster's partition count as the first made it
            assertThat(Migrations.apply(url, 32)).isEqualTo(16);
            try (var rows = statement.executeQuery("SELECT count(*) FROM partition_leases")) {
                rows.next();
                assertThat(rows.getInt(1)).isEqualTo(16);
            }
            // a failed migration on record is Flyway's to report
            statement.execute("""
                    INSERT INTO flyway_schema_history (installed_rank, version, description, type, script, checksum,
                        installed_by, execution_time, success)
                    SELECT max(installed_rank) + 1, '47', 'broken', 'SQL', 'V47__broken.sql', 0, 'test', 0, false
                    FROM flyway_schema_history""");
            assertThat(Migrations.upToDate(connection)).isFalse();
            // a schema newer than this build, with nothing failed, is Flyway's too (it ignores future migrations)
            statement.execute("UPDATE flyway_schema_history SET success = true WHERE version = '47'");
            assertThat(Migrations.upToDate(connection)).isFalse();
            assertThat(Migrations.apply(url, 16)).isEqualTo(16);
            // and a schema behind the newest (V43 to V46 undone) is migrated by Flyway
            statement.execute("DELETE FROM flyway_schema_history WHERE version IN ('47', '46', '45', '44', '43')");
            statement.execute("ALTER TABLE partition_leases DROP COLUMN acquired_at");
            statement.execute("DROP INDEX dead_letters_tenant_id");
            assertThat(Migrations.upToDate(connection)).isFalse();
            assertThat(Migrations.apply(url, 16)).isEqualTo(16);
            assertThat(Migrations.upToDate(connection)).isTrue();
            try (var rows = statement.executeQuery("SELECT count(acquired_at) FROM partition_leases")) {
                assertThat(rows.next()).isTrue();
            }
        }
    }
}
