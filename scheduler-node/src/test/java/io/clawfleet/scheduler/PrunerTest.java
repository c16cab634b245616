package io.clawfleet.scheduler;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.store.RetentionStore;
import io.clawfleet.shared.store.RetentionStore.Kind;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Retention (issue 20): a pass prunes each tenant's finished work past its own days (its limit, else the node's),
 * in batches, and keeps what something still needs: unanswered messages, undelivered replies, dead ones whose dead
 * letter is there, steps of turns under way. One tenant's retention never touches another tenant's rows.
 */
class PrunerTest {

    /**
     * Node defaults: inbox 7, replies 7, usage 400 (each call's row 35), audit 365, dead letters 30 days, transcripts
     * kept; batches of 2 rows.
     */
    private static final ClawfleetConfig.Retention RETENTION = new ClawfleetConfig.Retention(7, 7, 400, 35, 365, 30, 0, 60_000, 2, 0);

    private Vertx vertx;
    private Database database;
    private Pruner pruner;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(4), 4, 5_000);
        pruner = new Pruner(vertx, "node-p", new RetentionStore(database.pool()), RETENTION, new MicrometerMetrics("node-p"));
    }

    @AfterEach
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    @Test
    void eachTenantLosesWhatIsPastItsOwnDaysAndKeepsWhatIsStillNeeded() {
        // given a tenant that keeps little and one that keeps much, with the same rows of the same ages
        tenant("brief", new JsonObject().put("inboxRetentionDays", 1).put("usageRetentionDays", 35)
                .put("deadLettersRetentionDays", 2).put("transcriptRetentionDays", 3));
        tenant("keeper", new JsonObject().put("inboxRetentionDays", 30).put("auditRetentionDays", 1000));
        for (String tenant : new String[] {"brief", "keeper"}) {
            long chat = chat(tenant);
            long pendingIn = inbox(tenant, chat, "in-40-pending", 40, "pending");
            inbox(tenant, chat, "in-2-done", 2, "done");
            inbox(tenant, chat, "in-10-done", 10, "done");
            long doneIn = inbox(tenant, chat, "in-40-done", 40, "done");
            long deadIn = inbox(tenant, chat, "in-40-dead-letter", 40, "dead");
            inbox(tenant, chat, "in-40-dead-no-letter", 40, "dead");
            deadLetter(tenant, "inbound", Long.toString(deadIn), "dl-1-inbound", 1);
            // replies of a push channel (Telegram, ...) wait for their delivery; a pull channel's (the API, the
            // OpenAI endpoint) are read by the client, so they stay 'pending' and are over once written
            outbox(tenant, chat, "out-3-delivered", 3, "delivered", true);
            outbox(tenant, chat, "out-10-delivered", 10, "delivered", true);
            outbox(tenant, chat, "out-10-pending", 10, "pending", true);
            outbox(tenant, chat, "out-10-dead-letter", 10, "dead", true);
            outbox(tenant, chat, "out-10-dead-no-letter", 10, "dead", true);
            outbox(tenant, chat, "out-3-pulled", 3, "pending", false);
            outbox(tenant, chat, "out-10-pulled", 10, "pending", false);
            deadLetter(tenant, "outbound", tenant + "-out-10-dead-letter", "dl-1-outbound", 1);
            deadLetter(tenant, "inbound", tenant + "-gone", "dl-5", 5);
            deadLetter(tenant, "inbound", tenant + "-gone-too", "dl-40", 40);
            usage(tenant, chat, "use-36", 36);
            usage(tenant, chat, "use-500", 500);
            audit(tenant, "audit-400", 400);
            audit(tenant, "audit-2000", 2000);
            step(tenant, pendingIn, 10);
            step(tenant, doneIn, 10);
            message(tenant, chat, "msg-1", 1);
            message(tenant, chat, "msg-5", 5);
            message(tenant, chat, "msg-40", 40);
        }
        audit(null, "audit-400", 400);
        audit(null, "audit-10", 10);
        step("keeper", 999_999_999L, 10);
        step("keeper", 999_999_998L, 1);

        // when one pass runs with batches of 2
        Map<Kind, Long> pruned = result(pruner.pass());

        // then each tenant keeps what its own days and the rows' use say
        assertThat(labels("SELECT idempotency_key AS l FROM inbox WHERE tenant_id = 'brief'"))
                .containsExactly("in-40-dead-letter", "in-40-pending");
        assertThat(labels("SELECT idempotency_key AS l FROM inbox WHERE tenant_id = 'keeper'"))
                .containsExactly("in-10-done", "in-2-done", "in-40-dead-letter", "in-40-pending");
        for (String tenant : new String[] {"brief", "keeper"}) {
            assertThat(labels("SELECT substr(id, length(tenant_id) + 2) AS l FROM outbox WHERE tenant_id = '" + tenant + "'"))
                    .as(tenant).containsExactly("out-10-dead-letter", "out-10-pending", "out-3-delivered", "out-3-pulled");
        }
        assertThat(labels("SELECT error AS l FROM dead_letters WHERE tenant_id = 'brief'"))
                .containsExactly("dl-1-inbound", "dl-1-outbound");
        assertThat(labels("SELECT error AS l FROM dead_letters WHERE tenant_id = 'keeper'"))
                .containsExactly("dl-1-inbound", "dl-1-outbound", "dl-5");
        // and each call's usage row went after the node's 35 days into its day's sums (days ago : model), which go
        // with the tenant's usage days (brief's 35) or the node's 400
        assertThat(labels("SELECT model AS l FROM llm_usage")).isEmpty();
        String callSums = "SELECT ((now() AT TIME ZONE 'UTC')::date - day) || ':' || model AS l FROM usage_calls_daily"
                + " WHERE tenant_id = ";
        assertThat(labels(callSums + "'brief'")).isEmpty();
        assertThat(labels(callSums + "'keeper'")).containsExactly("36:use-36");
        assertThat(labels("SELECT reason AS l FROM audit_events WHERE tenant_id = 'brief'")).isEmpty();
        assertThat(labels("SELECT reason AS l FROM audit_events WHERE tenant_id = 'keeper'")).containsExactly("audit-400");
        assertThat(labels("SELECT reason AS l FROM audit_events WHERE tenant_id IS NULL")).containsExactly("audit-10");
        // and the chat history goes after the tenant's own days, while the node keeps it for good by default
        assertThat(labels("SELECT content AS l FROM messages WHERE tenant_id = 'brief'")).containsExactly("msg-1");
        assertThat(labels("SELECT content AS l FROM messages WHERE tenant_id = 'keeper'"))
                .containsExactly("msg-1", "msg-40", "msg-5");
        // and steps go only with their turn: kept for the unanswered message and for a young orphan
        assertThat(labels("""
                SELECT coalesce(i.idempotency_key, 'orphan-' || extract(day FROM now() - s.created_at)::int) AS l
                  FROM turn_steps s LEFT JOIN inbox i ON i.id = s.inbox_id""")).containsExactly("in-40-pending", "in-40-pending", "orphan-1");
        // and the pruned inbox rows are counted on in usage's daily sums (days ago : messages), which go with the
        // tenant's usage days: brief's 35 took the sums of its 40-day-old messages in the same pass
        String sums = "SELECT ((now() AT TIME ZONE 'UTC')::date - day) || ':' || messages AS l FROM usage_messages_daily"
                + " WHERE tenant_id = ";
        assertThat(labels(sums + "'brief'")).containsExactly("10:1", "2:1");
        assertThat(labels(sums + "'keeper'")).containsExactly("40:2");
        // and the pass counted what it pruned
        assertThat(pruned).containsEntry(Kind.INBOX, 6L).containsEntry(Kind.REPLIES, 6L).containsEntry(Kind.USAGE, 4L)
                .containsEntry(Kind.AUDIT, 4L).containsEntry(Kind.DEAD_LETTERS, 3L).containsEntry(Kind.TRANSCRIPTS, 2L)
                .containsEntry(Kind.MESSAGE_SUMS, 1L).containsEntry(Kind.CALL_SUMS, 3L);

        // when a second pass runs, there is nothing left to prune
        assertThat(result(pruner.pass())).isEmpty();
    }

    @Test
    void usageRowsAreSummedPerDayModelAndKeyWithEachTurnCountedOnce() {
        // given a day 40 days ago with: a turn of three calls committed together (two models, one call unpriced), more
        // than a batch of 2; a turn of one call sent with a key; a compaction call of no turn; and a young call
        tenant("metered", new JsonObject());
        long chat = chat("metered");
        long first = inbox("metered", chat, "turn-1", 40, "done");
        long second = inbox("metered", chat, "turn-2", 40, "done");
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens,
                                       cached_tokens, cost_micros, created_at)
                SELECT 'metered', $1, $2, 'p', m, 10, 5, 2, c, now() - interval '40 days'
                  FROM unnest(ARRAY['big', 'big', 'small'], ARRAY[100, NULL, 7]::bigint[]) AS x(m, c)""",
                Tuple.of(chat, first));
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens,
                                       cost_micros, api_key_id, created_at)
                VALUES ('metered', $1, $2, 'p', 'small', 3, 4, 1, 'k1', now() - interval '40 days' + interval '1 second')""",
                Tuple.of(chat, second));
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, provider, model, input_tokens, output_tokens, created_at)
                VALUES ('metered', $1, 'p', 'small', 50, 6, now() - interval '40 days' + interval '2 seconds')""",
                Tuple.of(chat));
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens, created_at)
                VALUES ('metered', $1, $2, 'p', 'small', 1, 1, now() - interval '3 days')""", Tuple.of(chat, second));

        // when a pass runs with batches of 2
        Map<Kind, Long> pruned = result(pruner.pass());

        // then the old calls went into one sum per model and key: the three-call turn counts once (on its first call,
        // a 'big' one), the priced calls' cost adds up, and the unpriced one is counted as such
        assertThat(pruned).containsEntry(Kind.USAGE, 5L);
        assertThat(labels("""
                SELECT ((now() AT TIME ZONE 'UTC')::date - day) || ' ' || model || ' ' || key_id || ': ' || calls || ' calls, '
                       || turns || ' turns, ' || input_tokens || '/' || output_tokens || '/' || cached_tokens || ' tokens, '
                       || coalesce(cost_micros::text, 'no') || ' cost, ' || unpriced || ' unpriced' AS l
                  FROM usage_calls_daily WHERE tenant_id = 'metered'""")).containsExactly(
                "40 big : 2 calls, 1 turns, 20/10/4 tokens, 100 cost, 1 unpriced",
                "40 small : 2 calls, 0 turns, 60/11/2 tokens, 7 cost, 1 unpriced",
                "40 small k1: 1 calls, 1 turns, 3/4/0 tokens, 1 cost, 0 unpriced");
        assertThat(labels("SELECT created_at::date::text || ' ' || inbox_id AS l FROM llm_usage"))
                .containsExactly(java.time.LocalDate.now(java.time.ZoneOffset.UTC).minusDays(3) + " " + second);

        // when the same day's sums take more pruned calls later (a row written late, by a slow commit), they add up
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, provider, model, input_tokens, output_tokens, created_at)
                VALUES ('metered', $1, 'p', 'big', 1, 1, now() - interval '40 days')""", Tuple.of(chat));
        result(pruner.pass());
        assertThat(labels("""
                SELECT calls || ' ' || turns || ' ' || input_tokens || ' ' || coalesce(cost_micros::text, 'no') || ' '
                       || unpriced AS l FROM usage_calls_daily WHERE tenant_id = 'metered' AND model = 'big'"""))
                .containsExactly("3 1 21 100 2");
    }

    @Test
    void aTenantsUsageRowsArePrunedByOneNodeAtATime() {
        // given two tenants with old usage rows, and another node's batch of the first under way (its transaction
        // holds the tenant's usage lock), which could otherwise take part of a commit while this node took the rest
        for (String tenant : new String[] {"busy", "free"}) {
            tenant(tenant, new JsonObject());
            long chat = chat(tenant);
            usage(tenant, chat, "use-40", 40);
            usage(tenant, chat, "use-41", 41);
        }
        RetentionStore store = new RetentionStore(database.pool());
        io.vertx.sqlclient.SqlConnection other = result(database.pool().getConnection());
        try {
            io.vertx.sqlclient.Transaction batch = result(other.begin());
            result(other.preparedQuery("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .execute(Tuple.of(RetentionStore.USAGE_LOCK, "busy")));

            // when this node prunes both tenants' usage, then the busy one's is left to the other node, at once
            assertThat(result(store.pruneBatch(Kind.USAGE, "busy", 35, 10))).isZero();
            assertThat(result(store.pruneBatch(Kind.USAGE, "free", 35, 10))).isEqualTo(2);

            // when the other node's batch is over, then the next pass takes it
            result(batch.rollback());
            assertThat(result(store.pruneBatch(Kind.USAGE, "busy", 35, 10))).isEqualTo(2);
        } finally {
            result(other.close());
        }
    }

    @Test
    void aTenantWithoutLimitsKeepsTheNodeDefaultsAndAPassWalksManyBatches() {
        // given 25 answered messages 8 days old and 3 of 6 days, under the node's 7 days
        tenant("plain", new JsonObject());
        long chat = chat("plain");
        for (int i = 0; i < 25; i++) {
            inbox("plain", chat, "old-" + i, 8, "done");
        }
        for (int i = 0; i < 3; i++) {
            inbox("plain", chat, "young-" + i, 6, "done");
        }

        // when a pass runs with batches of 2, then all 25 old ones went in 13 batches and the young ones stay
        assertThat(result(pruner.pass())).containsExactly(Map.entry(Kind.INBOX, 25L));
        assertThat(labels("SELECT idempotency_key AS l FROM inbox")).containsExactly("young-0", "young-1", "young-2");
    }

    @Test
    void theNodeMayKeepFinishedWorkForFractionsOfADay() {
        // given a node that keeps answered messages, replies and history for 0.01 days (14.4 minutes)
        Pruner brief = new Pruner(vertx, "node-q", new RetentionStore(database.pool()),
                new ClawfleetConfig.Retention(0.01, 0.01, 400, 35, 365, 30, 0.01, 60_000, 100, 0), new MicrometerMetrics("node-q"));
        tenant("quick", new JsonObject());
        long chat = chat("quick");
        for (int minutes : new int[] {10, 20}) {
            sql("""
                    INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status, received_at)
                    VALUES ('quick', $1, 0, $2, $3, 'u', 'hi', 'done', now() - make_interval(mins => $2))""",
                    Tuple.of(chat, minutes, "in-" + minutes));
            sql("""
                    INSERT INTO outbox (id, tenant_id, chat_id, seq, text, status, created_at)
                    VALUES ($2, 'quick', $1, $3, 'hi', 'delivered', now() - make_interval(mins => $3))""",
                    Tuple.of(chat, "out-" + minutes, minutes));
            sql("""
                    INSERT INTO messages (tenant_id, chat_id, role, content, created_at)
                    VALUES ('quick', $1, 'user', $2, now() - make_interval(mins => $3))""",
                    Tuple.of(chat, "msg-" + minutes, minutes));
        }

        // when a pass runs, then what is 20 minutes old went and what is 10 minutes old stays
        assertThat(result(brief.pass())).containsEntry(Kind.INBOX, 1L).containsEntry(Kind.REPLIES, 1L)
                .containsEntry(Kind.TRANSCRIPTS, 1L);
        assertThat(labels("SELECT idempotency_key AS l FROM inbox")).containsExactly("in-10");
        assertThat(labels("SELECT id AS l FROM outbox")).containsExactly("out-10");
        assertThat(labels("SELECT content AS l FROM messages")).containsExactly("msg-10");
    }

    private void tenant(String id, JsonObject limits) {
        result(new TenantStore(database.pool()).ensure(id, id, "key-" + id + "-0123456789abcdef"));
        sql("UPDATE tenants SET limits = $2 WHERE id = $1", Tuple.of(id, limits));
    }

    private long chat(String tenant) {
        return one("INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ($1, 'api', 'c', 0) RETURNING id",
                Tuple.of(tenant)).getLong(0);
    }

    private long inbox(String tenant, long chat, String label, int days, String status) {
        return one("""
                INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status, received_at)
                VALUES ($1, $2, 0, (SELECT count(*) + 1 FROM inbox WHERE chat_id = $2), $3, 'u', 'hi', $4,
                        now() - make_interval(days => $5))
                RETURNING id""", Tuple.of(tenant, chat, label, status, days)).getLong(0);
    }

    private void outbox(String tenant, long chat, String label, int days, String status, boolean push) {
        sql("""
                INSERT INTO outbox (id, tenant_id, chat_id, seq, text, status, created_at, push)
                VALUES ($1 || '-' || $3, $1, $2, (SELECT count(*) + 1 FROM outbox WHERE chat_id = $2), 'hi', $4,
                        now() - make_interval(days => $5), $6)""", Tuple.of(tenant, chat, label, status, days, push));
    }

    private void deadLetter(String tenant, String kind, String ref, String label, int days) {
        sql("""
                INSERT INTO dead_letters (tenant_id, kind, ref_id, payload, error, created_at)
                VALUES ($1, $2, $3, '{}', $4, now() - make_interval(days => $5))""", Tuple.of(tenant, kind, ref, label, days));
    }

    private void usage(String tenant, long chat, String label, int days) {
        sql("""
                INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens, created_at)
                VALUES ($1, $2, $3, 1, 1, now() - make_interval(days => $4))""", Tuple.of(tenant, chat, label, days));
    }

    private void audit(String tenant, String label, int days) {
        sql("""
                INSERT INTO audit_events (tenant_id, event_type, reason, outcome, at)
                VALUES ($1, CASE WHEN $1::text IS NULL THEN 'tenant_deleted' ELSE 'tool_call' END, $2, 'success',
                        now() - make_interval(days => $3))""", Tuple.of(tenant, label, days));
    }

    private void message(String tenant, long chat, String label, int days) {
        sql("""
                INSERT INTO messages (tenant_id, chat_id, role, content, created_at)
                VALUES ($1, $2, 'user', $3, now() - make_interval(days => $4))""", Tuple.of(tenant, chat, label, days));
    }

    private void step(String tenant, long inboxId, int days) {
        sql("""
                INSERT INTO turn_steps (inbox_id, step, tenant_id, kind, payload, created_at)
                VALUES ($1, (SELECT count(*) FROM turn_steps WHERE inbox_id = $1), $2, 'model', '{}',
                        now() - make_interval(days => $3))""", Tuple.of(inboxId, tenant, days));
    }

    /** The labels of the rows the query gives, sorted. */
    private List<String> labels(String query) {
        List<String> labels = new ArrayList<>();
        for (Row row : result(database.pool().query(query).execute())) {
            labels.add(row.getString("l"));
        }
        Collections.sort(labels);
        return labels;
    }

    private Row one(String query, Tuple args) {
        return result(database.pool().preparedQuery(query).execute(args)).iterator().next();
    }

    private void sql(String query, Tuple args) {
        result(database.pool().preparedQuery(query).execute(args));
    }
}
