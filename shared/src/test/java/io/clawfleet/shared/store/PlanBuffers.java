package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How much of the database a statement reads, counted as PostgreSQL counts it: the shared buffers its plan touched
 * ({@code EXPLAIN (ANALYZE, BUFFERS)}). Unlike a time, the count does not depend on the machine, so a test can hold a
 * read to "a few pages" and fail when a plan starts walking a table.
 */
final class PlanBuffers {

    private PlanBuffers() {
    }

    /**
     * A fresh migrated database with these tenants (each with its default bot {@code main}), and a JDBC connection to
     * it for the test to fill, plan and read.
     */
    static Connection databaseWithTenants(String... tenantIds) throws Exception {
        DbUrl url = TestDatabases.freshMigrated(16);
        Vertx vertx = Vertx.vertx();
        try {
            Database database = Database.connect(vertx, url, 1, 5_000);
            try {
                TenantStore tenants = new TenantStore(database.pool());
                Future.all(Arrays.stream(tenantIds).map(id -> tenants.ensure(id, id, id + "-key-0123456789abcdef")).toList())
                        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
            } finally {
                database.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        return DriverManager.getConnection(url.jdbcUrl(), url.user() == null ? "postgres" : url.user(), url.password());
    }

    /** Runs {@code execute} (an {@code EXECUTE} of a prepared statement, say) and asserts it touched 1 to {@code most} buffers. */
    static void atMost(Connection sql, String execute, long most) throws SQLException {
        try (Statement statement = sql.createStatement();
             ResultSet plan = statement.executeQuery("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + execute)) {
            assertThat(plan.next()).isTrue();
            JsonObject top = new JsonArray(plan.getString(1)).getJsonObject(0).getJsonObject("Plan");
            long buffers = top.getLong("Shared Hit Blocks") + top.getLong("Shared Read Blocks");
            assertThat(buffers).as("shared buffers %s touched; its plan: %s", execute, top.encodePrettily())
                    .isBetween(1L, most);
        }
    }
}
