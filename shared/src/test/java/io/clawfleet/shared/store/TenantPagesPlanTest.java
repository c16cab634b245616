package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's pages of its dead letters and audit events cost its own rows, whatever other tenants keep: a tenant with
 * three rows beside one with 20,000, on the generic plans every node connection uses ({@link Database#GENERIC_PLANS}).
 * Generic plans estimate a tenant's rows as the table's over the number of tenants, half the table here, and then
 * walked the primary key through the big tenant's rows, filtering on the tenant: hundreds of buffers for a page of
 * three. V46 gives both tables an index on {@code (tenant_id, id)} and the planner the hint that a tenant is a small
 * share. Counted in buffers ({@link PlanBuffers}), which do not depend on the machine.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantPagesPlanTest {

    private static final int BIG_TENANTS_ROWS = 20_000;
    /** A page of a tenant's rows needs a few index and heap pages; each table has over a thousand. */
    private static final int MOST_BUFFERS = 40;

    private Connection sql;

    @BeforeAll
    void fill() throws Exception {
        sql = PlanBuffers.databaseWithTenants("small", "big");
        try (Statement statement = sql.createStatement()) {
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ('small', 'api', 'quiet', 1)");
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) "
                    + "SELECT 'big', 'api', 'chat-' || g, g % 64 FROM generate_series(1, 100) g");
            // The small tenant's rows are the oldest of each table: the worst case for a walk from either end.
            statement.execute("INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error) "
                    + "SELECT 'small', 'inbound', 'small-' || g, c.id, jsonb_build_object('text', repeat('x', 200)), "
                    + "'model unreachable' FROM chats c, generate_series(1, 3) g WHERE c.tenant_id = 'small'");
            statement.execute("INSERT INTO audit_events (tenant_id, event_type, tool_name, outcome, reason, bot_id) "
                    + "SELECT 'small', 'tool_call', 'exec', 'success', 'small-' || g, 'main' FROM generate_series(1, 3) g");
            statement.execute("INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error) "
                    + "SELECT 'big', 'inbound', 'big-' || g, (SELECT min(id) FROM chats WHERE tenant_id = 'big') + g % 100, "
                    + "jsonb_build_object('text', repeat('x', 200)), 'model unreachable' FROM generate_series(1, "
                    + BIG_TENANTS_ROWS + ") g");
            statement.execute("INSERT INTO audit_events (tenant_id, event_type, tool_name, outcome, reason, bot_id, args_json) "
                    + "SELECT 'big', 'tool_call', 'exec', 'success', 'big-' || g, 'main', "
                    + "jsonb_build_object('command', repeat('x', 200)) FROM generate_series(1, " + BIG_TENANTS_ROWS + ") g");
            statement.execute("INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens, created_at) "
                    + "SELECT 'small', c.id, 'gpt', 100, 10, now() - interval '1 hour' FROM chats c, generate_series(1, 3) g "
                    + "WHERE c.tenant_id = 'small'");
            statement.execute("INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens, created_at) "
                    + "SELECT 'big', (SELECT min(id) FROM chats WHERE tenant_id = 'big') + g % 100, 'gpt', 100, 10, "
                    + "now() - interval '1 hour' + g * interval '1 millisecond' FROM generate_series(1, " + BIG_TENANTS_ROWS + ") g");
            statement.execute("ANALYZE");
            statement.execute(Database.GENERIC_PLANS);
            statement.execute("PREPARE letters_after(text, bigint, int, text) AS " + DeadLetterStore.LIST);
            statement.execute("PREPARE letters_newest(text, int, text) AS " + DeadLetterStore.NEWEST);
            statement.execute("PREPARE events_after(text, bigint, int, text, text) AS " + AuditStore.LIST);
            statement.execute("PREPARE usage_totals(text, timestamptz, timestamptz, text, text, text) AS " + UsageStore.TOTALS);
            statement.execute("PREPARE events_before(text, bigint, int, text, text, boolean) AS " + AuditStore.LIST_BEFORE);
        }
    }

    @AfterAll
    void close() throws Exception {
        sql.close();
    }

    @Test
    void aSmallTenantsDeadLetterPagesReadOnlyItsOwnLetters() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE letters_after('small', 0, 50, 'main')", MOST_BUFFERS);
        PlanBuffers.atMost(sql, "EXECUTE letters_newest('small', 50, 'main')", MOST_BUFFERS);
        assertThat(column("EXECUTE letters_after('small', 0, 50, 'main')", "ref_id"))
                .containsExactly("small-1", "small-2", "small-3");
        assertThat(column("EXECUTE letters_newest('small', 50, 'main')", "ref_id"))
                .containsExactly("small-3", "small-2", "small-1");
    }

    @Test
    void aBigTenantsDeadLetterPageReadsOnlyThePage() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE letters_newest('big', 20, 'main')", MOST_BUFFERS);
        assertThat(column("EXECUTE letters_newest('big', 20, 'main')", "ref_id"))
                .hasSize(20).first().isEqualTo("big-" + BIG_TENANTS_ROWS);
        PlanBuffers.atMost(sql, "EXECUTE letters_after('big', 0, 20, 'main')", MOST_BUFFERS);
        assertThat(column("EXECUTE letters_after('big', 0, 20, 'main')", "ref_id")).hasSize(20).first().isEqualTo("big-1");
    }

    @Test
    void aSmallTenantsAuditPagesReadOnlyItsOwnEvents() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE events_after('small', 0, 50, NULL, NULL)", MOST_BUFFERS);
        PlanBuffers.atMost(sql, "EXECUTE events_before('small', " + Long.MAX_VALUE + ", 50, NULL, NULL, false)", MOST_BUFFERS);
        assertThat(column("EXECUTE events_after('small', 0, 50, NULL, NULL)", "reason"))
                .containsExactly("small-1", "small-2", "small-3");
        assertThat(column("EXECUTE events_before('small', " + Long.MAX_VALUE + ", 50, 'tool_call', 'main', false)", "reason"))
                .containsExactly("small-3", "small-2", "small-1");
    }

    @Test
    void aBigTenantsAuditPageReadsOnlyThePage() throws SQLException {
        PlanBuffers.atMost(sql, "EXECUTE events_before('big', " + Long.MAX_VALUE + ", 20, NULL, NULL, false)", MOST_BUFFERS);
        assertThat(column("EXECUTE events_before('big', " + Long.MAX_VALUE + ", 20, NULL, NULL, false)", "reason"))
                .hasSize(20).first().isEqualTo("big-" + BIG_TENANTS_ROWS);
        PlanBuffers.atMost(sql, "EXECUTE events_after('big', 0, 20, NULL, NULL)", MOST_BUFFERS);
    }

    @Test
    void aSmallTenantsUsageTotalsReadOnlyItsOwnCalls() throws SQLException {
        String totals = "EXECUTE usage_totals('small', now() - interval '1 day', now(), NULL, NULL, NULL)";
        PlanBuffers.atMost(sql, totals, MOST_BUFFERS);
        assertThat(column(totals, "input_tokens")).containsExactly("300");
    }

    @Test
    void anotherBotsOrAnotherTenantsNameFindsNothing() throws SQLException {
        assertThat(column("EXECUTE letters_after('small', 0, 50, 'other')", "ref_id")).isEmpty();
        assertThat(column("EXECUTE letters_newest('nobody', 50, 'main')", "ref_id")).isEmpty();
        assertThat(column("EXECUTE events_after('small', 0, 50, NULL, 'other')", "reason")).isEmpty();
        assertThat(column("EXECUTE events_after('nobody', 0, 50, NULL, NULL)", "reason")).isEmpty();
    }

    private List<String> column(String execute, String name) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement statement = sql.createStatement(); ResultSet rows = statement.executeQuery(execute)) {
            while (rows.next()) {
                out.add(rows.getString(name));
            }
        }
        return out;
    }
}
