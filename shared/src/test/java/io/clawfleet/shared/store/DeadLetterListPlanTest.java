package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's dead letters are listed at the cost of its own letters, whatever other tenants keep: the console's list
 * and the API's pages of a tenant with three letters beside one with 20,000, on the generic plans every node connection
 * uses ({@link Database#GENERIC_PLANS}). Without an index on {@code (tenant_id, id)} (V46) both walked the primary key
 * through the big tenant's rows: hundreds of buffers for an empty page. Counted in buffers ({@link PlanBuffers}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DeadLetterListPlanTest {

    private static final int BIG_TENANTS_LETTERS = 20_000;
    /** A page of a tenant's letters needs a few index and heap pages; the table has over a thousand. */
    private static final int MOST_BUFFERS = 40;

    private Vertx vertx;
    private DbUrl url;
    private Connection sql;

    @BeforeAll
    void fill() throws Exception {
        url = TestDatabases.freshMigrated(16);
        vertx = Vertx.vertx();
        Database database = Database.connect(vertx, url, 1, 5_000);
        try {
            TenantStore tenants = new TenantStore(database.pool());
            Future.all(tenants.ensure("small", "Small", "small-key-0123456789abcdef"),
                            tenants.ensure("big", "Big", "big-key-0123456789abcdef"))
                    .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } finally {
            database.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        sql = DriverManager.getConnection(url.jdbcUrl(), url.user() == null ? "postgres" : url.user(), url.password());
        try (Statement statement = sql.createStatement()) {
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ('small', 'api', 'quiet', 1)");
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) "
                    + "SELECT 'big', 'api', 'chat-' || g, g % 64 FROM generate_series(1, 100) g");
            // The small tenant's letters are the oldest of the table: the worst case for a walk from either end.
            statement.execute("INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error) "
                    + "SELECT 'small', 'inbound', 'small-' || g, c.id, jsonb_build_object('text', repeat('x', 200)), "
                    + "'model unreachable' FROM chats c, generate_series(1, 3) g WHERE c.tenant_id = 'small'");
            statement.execute("INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error) "
                    + "SELECT 'big', 'inbound', 'big-' || g, (SELECT min(id) FROM chats WHERE tenant_id = 'big') + g % 100, "
                    + "jsonb_build_object('text', repeat('x', 200)), 'model unreachable' FROM generate_series(1, "
                    + BIG_TENANTS_LETTERS + ") g");
            statement.execute("ANALYZE");
            statement.execute(Database.GENERIC_PLANS);
            statement.execute("PREPARE letters_after(text, bigint, int, text) AS " + DeadLetterStore.LIST);
            statement.execute("PREPARE letters_newest(text, int, text) AS " + DeadLetterStore.NEWEST);
        }
    }

    @AfterAll
    void close() throws Exception {
        sql.close();
        vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void aSmallTenantsPagesReadOnlyItsOwnLetters() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE letters_after('small', 0, 50, 'main')", MOST_BUFFERS);
        PlanBuffers.atMost(sql, "EXECUTE letters_newest('small', 50, 'main')", MOST_BUFFERS);
        assertThat(refIds("EXECUTE letters_after('small', 0, 50, 'main')")).containsExactly("small-1", "small-2", "small-3");
        assertThat(refIds("EXECUTE letters_newest('small', 50, 'main')")).containsExactly("small-3", "small-2", "small-1");
    }

    @Test
    void aBigTenantsPageReadsOnlyThePage() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE letters_newest('big', 20, 'main')", MOST_BUFFERS);
        List<String> newest = refIds("EXECUTE letters_newest('big', 20, 'main')");
        assertThat(newest).hasSize(20).first().isEqualTo("big-" + BIG_TENANTS_LETTERS);
        PlanBuffers.atMost(sql, "EXECUTE letters_after('big', 0, 20, 'main')", MOST_BUFFERS);
        assertThat(refIds("EXECUTE letters_after('big', 0, 20, 'main')")).hasSize(20).first().isEqualTo("big-1");
    }

    @Test
    void anotherBotsOrAnotherTenantsNameFindsNothing() throws SQLException {
        assertThat(refIds("EXECUTE letters_after('small', 0, 50, 'other')")).isEmpty();
        assertThat(refIds("EXECUTE letters_newest('nobody', 50, 'main')")).isEmpty();
    }

    private List<String> refIds(String execute) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement statement = sql.createStatement(); ResultSet rows = statement.executeQuery(execute)) {
            while (rows.next()) {
                out.add(rows.getString("ref_id"));
            }
        }
        return out;
    }
}
