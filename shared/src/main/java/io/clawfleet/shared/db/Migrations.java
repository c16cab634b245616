package io.clawfleet.shared.db;

import org.flywaydb.core.Flyway;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Applies the schema (Flyway, under its advisory lock, so nodes starting together are safe) and
 * creates the cluster's fixed facts: the partition count and one lease row per partition.
 * Blocking: call it before the event loops start or through {@code executeBlocking}.
 */
public final class Migrations {

    private static final Logger LOG = LoggerFactory.getLogger(Migrations.class);
    /** The newest migration in db/migration; MigrationsTest fails the build when a new one is not named here. */
    static final String NEWEST = "46";

    private Migrations() {
    }

    /**
     * @param requestedPartitions partition count to use if this creates the cluster
     * @return the cluster's partition count (fixed at creation; a different request is ignored with a warning)
     */
    public static int apply(DbUrl url, int requestedPartitions) {
        return apply(url, requestedPartitions, false);
    }

    /**
     * As {@link #apply(DbUrl, int)}; with {@code validate} Flyway runs even on a schema that is up to date, and checks
     * the applied scripts' checksums against this build's ({@code clawfleet migrate}).
     */
    public static int apply(DbUrl url, int requestedPartitions, boolean validate) {
        String user = url.user() == null ? "postgres" : url.user();
        Connection connection = null;
        try {
            connection = DriverManager.getConnection(url.jdbcUrl(), user, url.password());
        } catch (SQLException e) {
            // Not reachable yet, say: Flyway retries, and reports what stays wrong.
        }
        try {
            // A schema already at this build's newest migration is the common start (every node after the first, every
            // restart): Flyway's scan, parse and checksums of 40-odd scripts cost a start 0.35-0.7 s of CPU
            // (docs/PERFORMANCE.md, "Start-up"). `clawfleet migrate` and a start behind the newest still go through
            // Flyway, which validates.
            if (validate || connection == null || !upToDate(connection)) {
                Flyway flyway = Flyway.configure()
                        .dataSource(url.jdbcUrl(), user, url.password())
                        .locations("classpath:db/migration")
                        .connectRetries(10)
                        .load();
                var result = flyway.migrate();
                if (result.migrationsExecuted > 0) {
                    LOG.info("schema migrated [database: {}, migrations: {}, version: {}]",
                            url.redacted(), result.migrationsExecuted, result.targetSchemaVersion);
                }
                if (connection == null) {
                    connection = DriverManager.getConnection(url.jdbcUrl(), user, url.password());
                }
            }
            return ensureClusterMeta(connection, requestedPartitions);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot initialise cluster metadata in " + url.redacted() + ": " + e.getMessage(), e);
        } finally {
            if (connection != null) {
                try {
                    connection.close();
                } catch (SQLException e) {
                    LOG.debug("closing the migration connection failed", e);
                }
            }
        }
    }

    /**
     * Whether Flyway would have nothing to do: its history names this build's newest migration as the last one
     * applied, and no migration failed. Anything else (a new database, an older schema, a newer one, a failed
     * migration) is Flyway's to handle and report.
     */
    static boolean upToDate(Connection connection) throws SQLException {
        try (var statement = connection.createStatement()) {
            try (var rows = statement.executeQuery("SELECT to_regclass('flyway_schema_history') IS NOT NULL")) {
                if (!rows.next() || !rows.getBoolean(1)) {
                    return false;
                }
            }
            try (var rows = statement.executeQuery("""
                    SELECT (SELECT version FROM flyway_schema_history WHERE version IS NOT NULL
                            ORDER BY installed_rank DESC LIMIT 1),
                           EXISTS (SELECT 1 FROM flyway_schema_history WHERE NOT success)""")) {
                return rows.next() && NEWEST.equals(rows.getString(1)) && !rows.getBoolean(2);
            }
        }
    }

    private static int ensureClusterMeta(Connection connection, int requestedPartitions) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO cluster_meta (id, partitions) VALUES (true, ?) ON CONFLICT (id) DO NOTHING")) {
            insert.setInt(1, requestedPartitions);
            insert.executeUpdate();
        }
        int partitions;
        try (PreparedStatement select = connection.prepareStatement("SELECT partitions FROM cluster_meta");
             ResultSet rows = select.executeQuery()) {
            rows.next();
            partitions = rows.getInt(1);
        }
        try (PreparedStatement leases = connection.prepareStatement(
                "INSERT INTO partition_leases (partition) SELECT generate_series(0, ? - 1) ON CONFLICT DO NOTHING")) {
            leases.setInt(1, partitions);
            leases.executeUpdate();
        }
        if (partitions != requestedPartitions) {
            LOG.warn("partition count is fixed when the cluster's database is created; using {} from the database, not the configured {}",
                    partitions, requestedPartitions);
        }
        return partitions;
    }
}
