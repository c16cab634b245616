package io.clawfleet.deploy.chaos;

import io.clawfleet.shared.db.DbUrl;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Measures failover gaps from the lease table: after a worker is killed, the time until every
 * partition it held is held, under a live lease, by another worker.
 */
public final class FailoverWatch implements AutoCloseable {

    /** One measured takeover. */
    public record Gap(String node, int partitions, long millis) {
    }

    private final Connection connection;
    private final List<Gap> gaps = new CopyOnWriteArrayList<>();

    FailoverWatch(DbUrl db) throws SQLException {
        this.connection = DriverManager.getConnection(db.jdbcUrl(), db.user() == null ? "postgres" : db.user(),
                db.password() == null ? "" : db.password());
    }

    /** Partitions the node holds right now, with their epochs. */
    synchronized Map<Integer, Long> heldBy(String node) throws SQLException {
        Map<Integer, Long> held = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT partition, epoch FROM partition_leases WHERE owner_node = ? AND expires_at > now()")) {
            statement.setString(1, node);
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    held.put(rows.getInt(1), rows.getLong(2));
                }
            }
        }
        return held;
    }

    /**
     * Whether every given partition is served again: held under a live lease at a newer epoch
     * (by another worker, or by the killed one restarted).
     */
    synchronized boolean takenOver(Map<Integer, Long> partitions) throws SQLException {
        if (partitions.isEmpty()) {
            return true;
        }
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT partition, epoch FROM partition_leases WHERE partition = ANY(?) AND owner_node IS NOT NULL "
                        + "AND expires_at > now()")) {
            statement.setArray(1, connection.createArrayOf("integer", partitions.keySet().toArray()));
            int served = 0;
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    if (rows.getLong(2) > partitions.get(rows.getInt(1))) {
                        served++;
                    }
                }
            }
            return served == partitions.size();
        }
    }

    /** Polls until the killed node's partitions are served again (or 60 s pass) and records the gap. */
    void measure(String node, Map<Integer, Long> partitions, long killedAtNanos) {
        Thread.ofVirtual().name("failover-watch-" + node).start(() -> {
            try {
                while (System.nanoTime() - killedAtNanos < 60_000_000_000L) {
                    if (takenOver(partitions)) {
                        gaps.add(new Gap(node, partitions.size(), (System.nanoTime() - killedAtNanos) / 1_000_000));
                        return;
                    }
                    Thread.sleep(50);
                }
                gaps.add(new Gap(node, partitions.size(), 60_000));
            } catch (SQLException | InterruptedException e) {
                gaps.add(new Gap(node, partitions.size(), -1));
            }
        });
    }

    List<Gap> gaps() {
        return new ArrayList<>(gaps);
    }

    @Override
    public synchronized void close() throws SQLException {
        connection.close();
    }
}
