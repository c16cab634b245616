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

    private Migrations() {
    }

    /**
     * @param requestedPartitions partition count to use if this creates the cluster
     * @return the cluster's partition count (fixed at creation; a different request is ignored with a warning)
     */
    public static int apply(DbUrl url, int requestedPartitions) {
        Flyway flyway = Flyway.configure()
                .dataSource(url.jdbcUrl(), url.user() == null ? "postgres" : url.user(), url.password())
                .locations("classpath:db/migration")
                .connectRetries(10)
                .load();
        var result = flyway.migrate();
        if (result.migrationsExecuted > 0) {
            LOG.info("schema migrated [database: {}, migrations: {}, version: {}]",
                    url.redacted(), result.migrationsExecuted, result.targetSchemaVersion);
        }
        try (Connection connection = DriverManager.getConnection(url.jdbcUrl(),
                url.user() == null ? "postgres" : url.user(), url.password())) {
            return ensureClusterMeta(connection, requestedPartitions);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot initialise cluster metadata in " + url.redacted() + ": " + e.getMessage(), e);
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
