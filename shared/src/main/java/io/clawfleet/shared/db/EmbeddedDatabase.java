package io.clawfleet.shared.db;

import io.clawfleet.shared.node.FreePorts;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

/**
 * A PostgreSQL server run from the bundled binaries (zonky), for the all-in-one mode and tests.
 * With a data folder its data survives restarts; without one it lives in a temporary folder.
 * It binds to loopback only, and every connection, local ones included, must give the superuser's
 * generated password.
 */
public final class EmbeddedDatabase implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedDatabase.class);
    /** How long a starting server may take to accept connections: crash recovery after an unclean stop included. */
    private static final Duration STARTUP_WAIT = Duration.ofSeconds(60);

    private final EmbeddedPostgres postgres;
    private final String password;

    private EmbeddedDatabase(EmbeddedPostgres postgres, String password) {
        this.postgres = postgres;
        this.password = password;
    }

    /** Starts a server; {@code dataDir} null means a throw-away database. */
    public static EmbeddedDatabase start(Path dataDir) {
        return start(dataDir, 0);
    }

    /** Starts a server on a given port (0: any free one); with the same folder and port, a restart. */
    public static EmbeddedDatabase start(Path dataDir, int port) {
        return start(dataDir, port, Map.of());
    }

    /** As {@link #start(Path, int)}, with server settings added or overridden (benchmarks load pg_stat_statements). */
    public static EmbeddedDatabase start(Path dataDir, int port, Map<String, String> settings) {
        return start(dataDir, port, settings, true);
    }

    /**
     * As {@link #start(Path, int, Map)}; with {@code stopAtExit} false the caller stops the server itself when the JVM
     * exits. {@code up} does, after its node has stopped: zonky's own exit hook runs beside the node's, so the server
     * went away while the node was still handing its partitions off and giving its turn slots back.
     */
    public static EmbeddedDatabase start(Path dataDir, int port, Map<String, String> settings, boolean stopAtExit) {
        Prepared prepared = prepare(dataDir, port, settings, stopAtExit);
        return launch(prepared.builder(), prepared.password(), dataDir);
    }

    /**
     * A server being started on a thread of its own: its address, port and password are known at once, so the caller
     * can go on with its own start (a node makes Vert.x and its roles meanwhile) and connect once {@link
     * Starting#database()} completes. {@code up} saves the server's start, about half a second, this way.
     */
    public static Starting startInBackground(Path dataDir, int port, Map<String, String> settings, boolean stopAtExit) {
        Prepared prepared = prepare(dataDir, port, settings, stopAtExit);
        CompletableFuture<EmbeddedDatabase> database = new CompletableFuture<>();
        Thread.ofPlatform().name("embedded-postgres-start").start(() -> {
            try {
                database.complete(launch(prepared.builder(), prepared.password(), dataDir));
            } catch (Throwable e) {
                database.completeExceptionally(e);
            }
        });
        return new Starting(new DbUrl("127.0.0.1", prepared.port(), "postgres", "postgres", prepared.password(), null),
                database);
    }

    /**
     * A server started by {@link #startInBackground}.
     *
     * @param url      where it will listen, with the superuser's password
     * @param database completes once it takes connections with that password; fails if it cannot start
     */
    public record Starting(DbUrl url, CompletableFuture<EmbeddedDatabase> database) {

        /** Stops the server once its start has ended, if it started; waits for that end. */
        public void close() {
            try {
                database.join().close();
            } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
                // It did not start: nothing to stop.
            }
        }
    }

    private record Prepared(EmbeddedPostgres.Builder builder, int port, String password) {
    }

    private static Prepared prepare(Path dataDir, int port, Map<String, String> settings, boolean stopAtExit) {
        try {
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setRegisterShutdownHook(stopAtExit)
                    .setPGStartupWait(STARTUP_WAIT)
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("shared_buffers", "128MB")
                    .setServerConfig("fsync", "on")
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("max_wal_size", "1GB")
                    // A new database's tables grow fast; statistics taken early re-plan the nodes'
                    // prepared statements (their generic plans were made on empty tables) and keep
                    // the chat rows, updated on every message, pruned. The default is a minute.
                    .setServerConfig("autovacuum_naptime", "10s")
                    .setServerConfig("log_min_messages", "warning");
            settings.forEach(builder::setServerConfig);
            // zonky's own choice for port 0 is an ephemeral port, which an outgoing connection may take first.
            int chosen = port != 0 ? port : FreePorts.take();
            builder.setPort(chosen);
            if (dataDir != null) {
                Files.createDirectories(dataDir);
                builder.setDataDirectory(dataDir).setCleanDataDirectory(false);
            }
            String password = password(dataDir);
            // zonky checks readiness and creates databases over JDBC as postgres: with the password once it is required.
            builder.setConnectConfig("password", password);
            return new Prepared(builder, chosen, password);
        } catch (IOException e) {
            throw cannotStart(dataDir, e);
        }
    }

    private static EmbeddedDatabase launch(EmbeddedPostgres.Builder builder, String password, Path dataDir) {
        try {
            EmbeddedPostgres postgres = dataDir == null ? builder.start() : startWatched(builder, dataDir);
            try {
                requirePassword(postgres, password);
            } catch (IOException e) {
                postgres.close();
                throw e;
            }
            LOG.info("embedded postgresql started [port: {}, data: {}]", postgres.getPort(),
                    dataDir == null ? "temporary" : dataDir.toAbsolutePath());
            return new EmbeddedDatabase(postgres, password);
        } catch (IOException e) {
            throw cannotStart(dataDir, e);
        }
    }

    /**
     * The server's own output beside its data folder, owner-readable only: pg_ctl's and initdb's, and the server's log at
     * warning and above (with the text of a failed statement). zonky sent it to its logger at info, which dropped it.
     */
    public static Path logFile(Path dataDir) {
        return dataDir.resolveSibling(dataDir.getFileName() + ".log");
    }

    /**
     * zonky launches {@code pg_ctl -w start} and then tries to connect for the whole startup wait without looking at
     * pg_ctl again, so a server that exits at once (a data folder of another PostgreSQL version, a setting it cannot
     * read) cost a minute and said only that it gave up waiting. A watcher finds that pg_ctl among this JVM's children
     * and waits for it; when it ends and the server left no {@code postmaster.pid}, the server has failed: the watcher
     * interrupts the start (zonky stops waiting) and the start fails with the end of the server's log. Once pg_ctl has
     * started a server it checks on it every 100 ms, so it outlives the watcher's 10 ms polls; a pg_ctl that ended
     * before the watcher saw it would leave zonky's wait, as before.
     */
    private static EmbeddedPostgres startWatched(EmbeddedPostgres.Builder builder, Path dataDir) throws IOException {
        // zonky runs initdb only where there is no postgresql.conf; pg_ctl refuses a folder with one and no PG_VERSION
        // before it starts a server, too quickly to be seen by the watcher below, so that case is told here.
        if (Files.exists(dataDir.resolve("postgresql.conf")) && !Files.exists(dataDir.resolve("PG_VERSION"))) {
            throw new IOException("it holds a postgresql.conf but no PG_VERSION, so it is not a PostgreSQL data folder;"
                    + " move it away, or give another data folder");
        }
        Path log = logFile(dataDir);
        if (!Files.exists(log)) {
            // Owner-only, as the password beside it: the server logs the text of a statement that failed.
            Files.createFile(log, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        }
        long logStart = Files.size(log);
        builder.setOutputRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .setErrorRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()));
        StartWatch watch = new StartWatch(Thread.currentThread());
        Thread watcher = Thread.ofVirtual().name("embedded-postgres-watch").start(() -> {
            try {
                ProcessHandle pgCtl = null;
                while (pgCtl == null) {
                    if (watch.ended()) {
                        return;
                    }
                    pgCtl = ProcessHandle.current().children().filter(child -> startsServerIn(child, dataDir))
                            .findFirst().orElse(null);
                    if (pgCtl == null) {
                        Thread.sleep(10);
                    }
                }
                pgCtl.onExit().get();
                watch.pgCtlExited(() -> !Files.exists(dataDir.resolve("postmaster.pid")));
            } catch (InterruptedException | ExecutionException e) {
                // The start ended first.
            }
        });
        EmbeddedPostgres postgres = null;
        IOException error = null;
        try {
            postgres = builder.start();
        } catch (IOException e) {
            error = e;
        }
        boolean failed = watch.end();
        watcher.interrupt();
        if (!failed) {
            if (error != null) {
                throw error;
            }
            return postgres;
        }
        Thread.interrupted(); // the watcher's, not the caller's
        // Not closed: there is no server to stop, and zonky's stop would log its pg_ctl's failure as an error.
        throw new IOException("the server exited during its start; the end of its log (" + log.toAbsolutePath() + "):\n"
                + tail(log, logStart, 15), error);
    }

    /**
     * What the watcher and the start agree on: whether the start has ended, and whether the server failed first. Both
     * are decided under this object's lock with the interrupt, so no interrupt lands after the start has ended.
     */
    private static final class StartWatch {
        private final Thread starter;
        private boolean ended;
        private boolean failed;

        StartWatch(Thread starter) {
            this.starter = starter;
        }

        synchronized boolean ended() {
            return ended;
        }

        /** pg_ctl has ended: if the start still waits and the server is gone, the start is told to stop waiting. */
        synchronized void pgCtlExited(BooleanSupplier serverGone) {
            if (!ended && serverGone.getAsBoolean()) {
                failed = true;
                starter.interrupt();
            }
        }

        /** The start has ended; true when it ended because the server failed. */
        synchronized boolean end() {
            ended = true;
            return failed;
        }
    }

    private static boolean startsServerIn(ProcessHandle process, Path dataDir) {
        ProcessHandle.Info info = process.info();
        if (info.command().isEmpty() || !info.command().get().endsWith("/pg_ctl") || info.arguments().isEmpty()) {
            return false;
        }
        List<String> arguments = List.of(info.arguments().get());
        return arguments.contains("start")
                && (arguments.contains(dataDir.toString()) || arguments.contains(dataDir.toAbsolutePath().toString()));
    }

    /** The last lines the log got from {@code from} on: this start's, not those of the starts before it. */
    private static String tail(Path log, long from, int lines) {
        try (var in = Files.newInputStream(log)) {
            in.skipNBytes(from);
            List<String> written = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).lines()
                    .filter(line -> !line.isBlank()).toList();
            return String.join("\n", written.subList(Math.max(0, written.size() - lines), written.size()));
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    private static IllegalStateException cannotStart(Path dataDir, IOException e) {
        return new IllegalStateException("cannot start the embedded PostgreSQL"
                + (dataDir == null ? "" : " in " + dataDir.toAbsolutePath()) + ": " + e.getMessage(), e);
    }

    public int port() {
        return postgres.getPort();
    }

    public DbUrl url() {
        return new DbUrl("127.0.0.1", postgres.getPort(), "postgres", "postgres", password, null);
    }

    /**
     * zonky's initdb trusts every local connection: any process on the host, a sandboxed run included,
     * could connect as the superuser (issue 22, attack 2). So the superuser gets a generated password and
     * the server asks for it (SCRAM) on every connection, socket or TCP. With a data folder the password is
     * kept beside it, readable by its owner only, so a restart on the same folder finds it.
     */
    private static String password(Path dataDir) throws IOException {
        Path file = dataDir == null ? null : dataDir.resolveSibling(dataDir.getFileName() + ".password");
        if (file != null && Files.isRegularFile(file)) {
            return Files.readString(file).strip();
        }
        byte[] random = new byte[24];
        new SecureRandom().nextBytes(random);
        String password = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        if (file != null) {
            Files.deleteIfExists(file);
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(file, password);
        }
        return password;
    }

    private static void requirePassword(EmbeddedPostgres postgres, String password) throws IOException {
        try (var connection = postgres.getPostgresDatabase().getConnection(); var statement = connection.createStatement()) {
            // password_encryption is scram-sha-256 by default since PostgreSQL 14: the hash, not the password, is stored.
            statement.execute("ALTER ROLE postgres PASSWORD '" + password + "'");
            String hbaFile;
            try (var rows = statement.executeQuery("SHOW hba_file")) {
                rows.next();
                hbaFile = rows.getString(1);
            }
            Files.writeString(Path.of(hbaFile), """
                    # Written by Clawfleet: every connection proves the password (SCRAM); nothing is trusted.
                    local all all scram-sha-256
                    host all all 127.0.0.1/32 scram-sha-256
                    host all all ::1/128 scram-sha-256
                    """);
            try (var rows = statement.executeQuery("SELECT pg_reload_conf()")) {
                rows.next();
            }
        } catch (java.sql.SQLException e) {
            throw new IOException("cannot require a password on the embedded PostgreSQL: " + e.getMessage(), e);
        }
    }

    /** A fresh, empty database on this server, for a test that wants its own schema. */
    public DbUrl createDatabase(String name) {
        if (!name.matches("[a-z][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("database name must be lower-case letters, digits and _: " + name);
        }
        try (var connection = postgres.getPostgresDatabase().getConnection();
             var statement = connection.createStatement()) {
            statement.execute("CREATE DATABASE " + name);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException("cannot create database " + name + ": " + e.getMessage(), e);
        }
        return new DbUrl("127.0.0.1", postgres.getPort(), name, "postgres", password, null);
    }

    /**
     * A fresh database owned by a login role with a password, as the {@code postgres} image makes from
     * {@code POSTGRES_DB}, {@code POSTGRES_USER} and {@code POSTGRES_PASSWORD}: a deployment file's own database URL
     * then works against this server. The role is created, or given this password if it exists; a database of that
     * name is dropped first.
     */
    public DbUrl createOwnedDatabase(String name, String user, String password) {
        if (!name.matches("[a-z][a-z0-9_]{0,62}") || !user.matches("[a-z][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("database and user names must be lower-case letters, digits and _: " + name + ", " + user);
        }
        if (password.contains("$")) {
            throw new IllegalArgumentException("the password must not contain '$' (it is written into a dollar-quoted block)");
        }
        try (var connection = postgres.getPostgresDatabase().getConnection();
             var statement = connection.createStatement()) {
            String quoted = "'" + password.replace("'", "''") + "'";
            statement.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            statement.execute("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + user + "') THEN "
                    + "ALTER ROLE " + user + " LOGIN PASSWORD " + quoted + "; ELSE CREATE ROLE " + user + " LOGIN PASSWORD "
                    + quoted + "; END IF; END $$");
            statement.execute("CREATE DATABASE " + name + " OWNER " + user);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException("cannot create database " + name + " owned by " + user + ": " + e.getMessage(), e);
        }
        return new DbUrl("127.0.0.1", postgres.getPort(), name, user, password, null);
    }

    @Override
    public void close() {
        try {
            postgres.close();
        } catch (IOException e) {
            LOG.warn("embedded postgresql did not stop cleanly: {}", e.getMessage());
        }
    }
}
