package io.clawfleet.shared.testing;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.shared.db.Migrations;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Databases for tests: one embedded PostgreSQL per test JVM (started on first use, stopped at
 * exit) and a fresh, migrated database per caller, so test classes never see each other's rows.
 */
public final class TestDatabases {

    private static final AtomicInteger COUNTER = new AtomicInteger();
    private static EmbeddedDatabase server;

    private TestDatabases() {
    }

    public static synchronized EmbeddedDatabase server() {
        if (server == null) {
            server = EmbeddedDatabase.start(null);
            Runtime.getRuntime().addShutdownHook(new Thread(server::close, "embedded-postgres-stop"));
        }
        return server;
    }

    /** A new empty database on the shared embedded server, with the schema applied. */
    public static DbUrl freshMigrated(int partitions) {
        DbUrl url = freshEmpty();
        Migrations.apply(url, partitions);
        return url;
    }

    /** A new empty database on the shared embedded server, without schema. */
    public static DbUrl freshEmpty() {
        String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        return server().createDatabase(name);
    }
}
