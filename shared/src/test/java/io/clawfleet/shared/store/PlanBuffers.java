package io.clawfleet.shared.store;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How much of the database a statement reads, counted as PostgreSQL counts it: the shared buffers its plan touched
 * ({@code EXPLAIN (ANALYZE, BUFFERS)}). Unlike a time, the count does not depend on the machine, so a test can hold a
 * read to "a few pages" and fail when a plan starts walking a table.
 */
final class PlanBuffers {

    private PlanBuffers() {
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
