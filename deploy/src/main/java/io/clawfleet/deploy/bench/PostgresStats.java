package io.clawfleet.deploy.bench;

import io.clawfleet.shared.db.DbUrl;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * What the database did, from its own statistics: committed transactions of the benchmark's
 * database ({@code pg_stat_database.xact_commit}) and, when the server preloads
 * pg_stat_statements, statements executed (each one a request the client sent and waited for;
 * BEGIN and COMMIT included), and the CPU time of the PostgreSQL server's processes.
 */
final class PostgresStats implements AutoCloseable {

    /** Counters at one moment; statements is -1 when pg_stat_statements is not loaded. */
    record Snapshot(long commits, long statements, long cpuMillis) {
    }

    private final Connection connection;
    private final boolean statementsAvailable;
    private final long postmasterPid;

    PostgresStats(DbUrl db) throws SQLException {
        this.connection = DriverManager.getConnection(db.jdbcUrl(), db.user() == null ? "postgres" : db.user(),
                db.password() == null ? "" : db.password());
        connection.setAutoCommit(true);
        this.statementsAvailable = loadStatements();
        // A backend's parent is the postmaster, whose reaped children's CPU is counted too.
        long backend = queryLong("SELECT pg_backend_pid()");
        this.postmasterPid = ProcessStats.parentPid(backend);
    }

    private boolean loadStatements() {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            statement.executeQuery("SELECT 1 FROM pg_stat_statements LIMIT 1").close();
            return true;
        } catch (SQLException e) {
            return false;
        }
    }

    boolean statementsAvailable() {
        return statementsAvailable;
    }

    /** The PostgreSQL server process, or -1 when it is not on this machine's /proc. */
    long postmasterPid() {
        return postmasterPid;
    }

    Snapshot snapshot() throws SQLException {
        long commits = queryLong("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
        // The benchmark's own queries read pg_stat_* views; they are not the system's work.
        long statements = statementsAvailable ? queryLong("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                + "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat%'") : -1;
        return new Snapshot(commits, statements, serverCpuMillis());
    }

    /** Resident memory of the server and its backends, KiB (shared buffers counted once per process that touched them). */
    long serverRssKib() {
        if (postmasterPid <= 0) {
            return -1;
        }
        long total = ProcessStats.rssKib(postmasterPid);
        for (long child : ProcessStats.children(postmasterPid)) {
            total += Math.max(0, ProcessStats.rssKib(child));
        }
        return total;
    }

    /** Starts statement counting afresh, so that {@link #topStatements} covers only what follows. */
    void resetStatements() throws SQLException {
        if (statementsAvailable) {
            queryLong("SELECT count(*) FROM (SELECT pg_stat_statements_reset()) r");
        }
    }

    /** The most frequent statements since the reset: calls per message, mean execution time, text (shortened). */
    java.util.List<String> topStatements(int limit, long perMessages) throws SQLException {
        java.util.List<String> top = new java.util.ArrayList<>();
        if (!statementsAvailable) {
            return top;
        }
        try (Statement statement = connection.createStatement(); ResultSet rows = statement.executeQuery(
                "SELECT calls, total_exec_time / greatest(calls, 1), plans, total_plan_time / greatest(plans, 1), regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements "
                        + "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                        + "AND query NOT LIKE '%pg_stat%' ORDER BY calls DESC LIMIT " + limit)) {
            while (rows.next()) {
                String query = rows.getString(5);
                top.add(String.format(java.util.Locale.ROOT, "%.2f/msg, %.3f ms each, planned %d times (%.3f ms each)  %s",
                        rows.getLong(1) / (double) perMessages, rows.getDouble(2), rows.getLong(3), rows.getDouble(4),
                        query.length() > 140 ? query.substring(0, 140) + "..." : query));
            }
        }
        return top;
    }

    /** CPU milliseconds of the server and its backends so far (/proc, no query), or -1 when it is not on this machine. */
    long serverCpuMillis() {
        if (postmasterPid <= 0) {
            return -1;
        }
        long total = ProcessStats.cpuMillis(postmasterPid) + ProcessStats.reapedChildrenCpuMillis(postmasterPid);
        for (long child : ProcessStats.children(postmasterPid)) {
            total += Math.max(0, ProcessStats.cpuMillis(child));
        }
        return total;
    }

    private long queryLong(String sql) throws SQLException {
        try (Statement statement = connection.createStatement(); ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    @Override
    public void close() throws SQLException {
        connection.close();
    }
}
