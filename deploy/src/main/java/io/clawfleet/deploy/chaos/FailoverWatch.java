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
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Measures failover gaps from the lease table: after a worker is killed, the time until every
 * partition it held is held, under a live lease, by another worker.
 */
public final class FailoverWatch implements AutoCloseable {

    /** One measured takeover. */
    public record Gap(String node, int partitions, long millis) {
    }

    private final DbUrl db;
    private Connection connection;
    private final List<Gap> gaps = new CopyOnWriteArrayList<>();
    private final AtomicInteger measuring = new AtomicInteger();

    FailoverWatch(DbUrl db) throws SQLException {
        this.db = db;
        this.connection = connect();
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), db.user() == null ? "postgres" : db.user(),
                db.password() == null ? "" : db.password());
    }

    /** The connection, opened again if a database restart closed it. */
    private Connection connection() throws SQLException {
        if (connection.isClosed() || !connection.isValid(2)) {
            connection.close();
            connection = connect();
        }
        return connection;
    }

    /** Kills whose failover is still being measured. */
    int measuring() {
        return measuring.get();
    }

    /** The node holding a live lease on the partition, or null. */
    synchronized String ownerOf(int partition) throws SQLException {
        try (PreparedStatement statement = connection().prepareStatement(
                "SELECT owner_node FROM partition_leases WHERE partition = ? AND expires_at > now()")) {
            statement.setInt(1, partition);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getString(1) : null;
            }
        }
    }

    /**
     * What retention left: answered inbound messages, history rows and delivered replies, each followed by how many of
     * them are older than {@code overdueS} seconds (which a scheduler keeping up would have pruned). Rows still needed
     * (unanswered or dead messages, push replies not delivered or dead) do not count; the API's replies are delivered
     * once written (their clients read them).
     */
    synchronized long[] retained(long overdueS) throws SQLException {
        try (PreparedStatement statement = connection().prepareStatement("""
                SELECT (SELECT count(*) FROM inbox WHERE status = 'done'),
                       (SELECT count(*) FROM inbox WHERE status = 'done' AND received_at < now() - make_interval(secs => ?)),
                       (SELECT count(*) FROM messages),
                       (SELECT count(*) FROM messages WHERE created_at < now() - make_interval(secs => ?)),
                       (SELECT count(*) FROM outbox WHERE NOT push OR status = 'delivered'),
                       (SELECT count(*) FROM outbox WHERE (NOT push OR status = 'delivered')
                                                     AND created_at < now() - make_interval(secs => ?)),
                       (SELECT count(*) FROM llm_usage),
                       (SELECT count(*) FROM llm_usage WHERE created_at < now() - make_interval(secs => ?)),
                       (SELECT coalesce(sum(calls), 0) FROM usage_calls_daily)""")) {
            for (int i = 1; i <= 4; i++) {
                statement.setLong(i, overdueS);
            }
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                long[] out = new long[9];
                for (int i = 0; i < out.length; i++) {
                    out[i] = rows.getLong(i + 1);
                }
                return out;
            }
        }
    }

    /** Every tool call's audit row, oldest first, as CSV: what ran where and how it ended (the side-effect chats). */
    synchronized void dumpToolCalls(java.nio.file.Path file) throws SQLException, java.io.IOException {
        StringBuilder out = new StringBuilder("at,chat,outcome,inbox,call,duration_ms,reason\n");
        try (PreparedStatement statement = connection().prepareStatement("""
                SELECT at, chat_key, outcome, metadata_json ->> 'inboxId', metadata_json ->> 'call',
                       metadata_json ->> 'durationMs', coalesce(left(reason, 80), '')
                  FROM audit_events WHERE event_type = 'tool_call' ORDER BY at""");
             ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                for (int i = 1; i <= 7; i++) {
                    out.append(i > 1 ? "," : "").append(String.valueOf(rows.getString(i)).replace(',', ';').replace('\n', ' '));
                }
                out.append('\n');
            }
        }
        java.nio.file.Files.writeString(file, out);
    }

    /** Dead letters of chats whose key starts with {@code prefix}. */
    synchronized long deadLettersOf(String prefix) throws SQLException {
        try (PreparedStatement statement = connection().prepareStatement(
                "SELECT count(*) FROM dead_letters d JOIN chats c ON c.id = d.chat_id WHERE c.chat_key LIKE ? || '%'")) {
            statement.setString(1, prefix);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        }
    }

    /** Dead letters of chats whose key does not start with {@code prefix}. */
    synchronized long deadLettersBesides(String prefix) throws SQLException {
        try (PreparedStatement statement = connection().prepareStatement(
                "SELECT count(*) FROM dead_letters d JOIN chats c ON c.id = d.chat_id WHERE c.chat_key NOT LIKE ? || '%'")) {
            statement.setString(1, prefix);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        }
    }

    /** Partitions the node holds right now, with their epochs. */
    synchronized Map<Integer, Long> heldBy(String node) throws SQLException {
        Map<Integer, Long> held = new HashMap<>();
        Connection connection = connection();
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
        Connection connection = connection();
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
        measuring.incrementAndGet();
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
            } finally {
                measuring.decrementAndGet();
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
