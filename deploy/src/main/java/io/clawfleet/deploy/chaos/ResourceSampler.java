package io.clawfleet.deploy.chaos;

import io.clawfleet.shared.db.DbUrl;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Samples what a leak grows, for the soak (issue 20): per node JVM its resident memory, its heap right after a full
 * collection, its threads and its open files; for PostgreSQL its connections, its size and its largest tables. Writes
 * every sample to a CSV file as it goes ({@code seconds,source,metric,value}: plot-ready, one row per value) and sums
 * each series up at the end with its least-squares slope per hour.
 *
 * <p>The heap figure is exact, not a guess from a sawtooth: before reading it the sampler asks the node for a full
 * collection ({@code jcmd PID GC.run}), then reads {@code clawfleet_jvm_heap_after_gc_bytes} from its metrics. A node
 * restarted by a fault starts a new series (its process id changes); a series' slope is over its own samples.
 */
public final class ResourceSampler implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ResourceSampler.class);
    /** The tables that grow with traffic, and the daily usage sums that pruning leaves (a few rows a day). */
    private static final List<String> TABLES = List.of("inbox", "outbox", "messages", "turn_steps", "llm_usage",
            "audit_events", "dead_letters", "usage_calls_daily", "usage_messages_daily");

    /** One series: a node incarnation's (or the database's) values of one metric over time. */
    private record Point(double seconds, double value) {
    }

    private final ClusterHarness cluster;
    private final DbUrl db;
    private final Path csv;
    private final long everyMs;
    private final long started = System.nanoTime();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "resource-sampler");
        thread.setDaemon(true);
        return thread;
    });
    /** series key ("node@pid metric" or "postgres metric") to its points, in the order first seen. */
    private final Map<String, List<Point>> series = new LinkedHashMap<>();
    private Connection connection;

    public ResourceSampler(ClusterHarness cluster, DbUrl db, Path csv, long everyMs) {
        this.cluster = cluster;
        this.db = db;
        this.csv = csv;
        this.everyMs = everyMs;
    }

    public ResourceSampler start() throws IOException {
        Files.writeString(csv, "seconds,source,metric,value\n", StandardCharsets.UTF_8);
        timer.scheduleWithFixedDelay(this::sampleQuietly, 0, everyMs, TimeUnit.MILLISECONDS);
        return this;
    }

    private void sampleQuietly() {
        try {
            sample();
        } catch (Exception e) {
            LOG.warn("resource sample failed, carrying on: {}", e.toString());
        }
    }

    private synchronized void sample() throws IOException {
        double seconds = (System.nanoTime() - started) / 1e9;
        StringBuilder rows = new StringBuilder();
        for (ClusterHarness.Node node : cluster.nodes()) {
            if (!node.alive() || node.paused()) {
                continue;
            }
            long pid = node.pid();
            String source = node.id() + "@" + pid;
            Map<String, Double> values = new LinkedHashMap<>();
            try {
                String status = Files.readString(Path.of("/proc", Long.toString(pid), "status"));
                values.put("rss_bytes", statusValue(status, "VmRSS:") * 1024);
                values.put("threads", statusValue(status, "Threads:"));
                try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                    values.put("open_files", (double) fds.count());
                }
            } catch (IOException | RuntimeException gone) {
                continue;
            }
            if (fullCollection(pid)) {
                try {
                    double heap = metric(cluster.metrics(node), "clawfleet_jvm_heap_after_gc_bytes");
                    if (heap >= 0) {
                        values.put("heap_after_gc_bytes", heap);
                    }
                } catch (IOException e) {
                    // Not answering now (cut off, stopping): the other figures stand.
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            values.forEach((metric, value) -> record(rows, seconds, source, metric, value));
        }
        try {
            Map<String, Double> database = database();
            database.forEach((metric, value) -> record(rows, seconds, "postgres", metric, value));
        } catch (SQLException e) {
            // Down (a restart fault): sampled again as soon as it is back, if that is before half the interval.
            closeConnection();
            retryDatabase(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(everyMs / 2));
        }
        Files.writeString(csv, rows, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    }

    /**
     * Samples the database alone a second from now, and again each second while it is down, until {@code untilNanos}:
     * a run with a restart every few seconds would otherwise lose most of its database samples (one ChaosIT run with six
     * restarts kept 3 of 5).
     */
    private void retryDatabase(long untilNanos) {
        try {
            timer.schedule(() -> {
                synchronized (this) {
                    double seconds = (System.nanoTime() - started) / 1e9;
                    StringBuilder rows = new StringBuilder();
                    try {
                        database().forEach((metric, value) -> record(rows, seconds, "postgres", metric, value));
                        Files.writeString(csv, rows, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
                    } catch (SQLException e) {
                        closeConnection();
                        if (System.nanoTime() < untilNanos) {
                            retryDatabase(untilNanos);
                        }
                    } catch (IOException e) {
                        LOG.warn("resource sample not written: {}", e.toString());
                    }
                }
            }, 1, TimeUnit.SECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            // The sampler is closing: its last sample is taken by close().
        }
    }

    private void record(StringBuilder rows, double seconds, String source, String metric, double value) {
        series.computeIfAbsent(source + " " + metric, k -> new ArrayList<>()).add(new Point(seconds, value));
        rows.append(String.format(java.util.Locale.ROOT, "%.1f,%s,%s,%.0f%n", seconds, source, metric, value));
    }

    private static double statusValue(String status, String key) {
        return status.lines().filter(line -> line.startsWith(key)).findFirst()
                .map(line -> Double.parseDouble(line.substring(key.length()).strip().split("\\s+")[0]))
                .orElseThrow(() -> new IllegalStateException("no " + key + " in /proc status"));
    }

    private static double metric(String scrape, String name) {
        return scrape.lines().filter(line -> line.startsWith(name)).findFirst()
                .map(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1))).orElse(-1.0);
    }

    /** A full collection in the node ({@code jcmd PID GC.run}); false when it could not be asked. */
    private static boolean fullCollection(long pid) {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            Process process = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.run")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return false;
            }
            return process.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private Map<String, Double> database() throws SQLException {
        if (connection == null || !connection.isValid(2)) {
            closeConnection();
            connection = DriverManager.getConnection(db.jdbcUrl(), db.user() == null ? "postgres" : db.user(), db.password());
        }
        Map<String, Double> values = new LinkedHashMap<>();
        try (Statement statement = connection.createStatement()) {
            statement.setQueryTimeout(10);
            try (ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")) {
                rs.next();
                values.put("connections", rs.getDouble(1));
            }
            try (ResultSet rs = statement.executeQuery("SELECT pg_database_size(current_database())")) {
                rs.next();
                values.put("database_bytes", rs.getDouble(1));
            }
            for (String table : TABLES) {
                try (ResultSet rs = statement.executeQuery("SELECT pg_total_relation_size('" + table + "')")) {
                    rs.next();
                    values.put(table + "_bytes", rs.getDouble(1));
                }
            }
            // Rows as the statistics count them (cheap; updated as autovacuum and analyze run): a table pruned as fast
            // as it grows keeps its bytes once its free space is reused, and its rows at once.
            try (ResultSet rs = statement.executeQuery("SELECT relname, n_live_tup FROM pg_stat_user_tables WHERE relname IN ('"
                    + String.join("','", TABLES) + "') ORDER BY relname")) {
                while (rs.next()) {
                    values.put(rs.getString(1) + "_rows", rs.getDouble(2));
                }
            }
        }
        return values;
    }

    private void closeConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException e) {
                // Gone anyway.
            }
            connection = null;
        }
    }

    /**
     * Each series summed up: samples, first, last, min, max and the least-squares slope per hour (null with fewer than
     * three samples). Keyed {@code source metric}, sorted.
     */
    public synchronized JsonObject summary() {
        Map<String, Object> out = new TreeMap<>();
        series.forEach((key, points) -> {
            JsonObject s = new JsonObject().put("samples", points.size())
                    .put("first", points.get(0).value()).put("last", points.get(points.size() - 1).value())
                    .put("min", points.stream().mapToDouble(Point::value).min().orElse(0))
                    .put("max", points.stream().mapToDouble(Point::value).max().orElse(0))
                    .put("spanSeconds", Math.round(points.get(points.size() - 1).seconds() - points.get(0).seconds()));
            s.put("slopePerHour", points.size() < 3 ? null : Math.round(slope(points) * 3600));
            out.put(key, s);
        });
        return new JsonObject(out);
    }

    /** Least-squares slope of value over seconds. */
    private static double slope(List<Point> points) {
        double n = points.size();
        double meanX = points.stream().mapToDouble(Point::seconds).sum() / n;
        double meanY = points.stream().mapToDouble(Point::value).sum() / n;
        double num = 0;
        double den = 0;
        for (Point p : points) {
            num += (p.seconds() - meanX) * (p.value() - meanY);
            den += (p.seconds() - meanX) * (p.seconds() - meanX);
        }
        return den == 0 ? 0 : num / den;
    }

    /** Takes one last sample and stops. */
    @Override
    public void close() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(30, TimeUnit.SECONDS);
            sample();
        } catch (Exception e) {
            LOG.warn("last resource sample failed: {}", e.toString());
        }
        closeConnection();
    }
}
