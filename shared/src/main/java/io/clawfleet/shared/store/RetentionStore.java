package io.clawfleet.shared.store;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Prunes finished work that is past its retention (issue 20), one tenant and one kind at a time, in batches of a
 * few rows, each batch its own statement and transaction. Every pruned table has a {@code (tenant_id, time)} index,
 * so a batch reads the tenant's oldest rows and nothing else. Rows something still needs are never pruned: an
 * unanswered message, a push channel's reply not yet delivered, a dead message or reply whose dead letter is still
 * there (its replay needs it). Rows other batches hold are skipped, so any number of scheduler nodes may prune at once.
 */
public final class RetentionStore {

    /**
     * The first key of the transaction-level advisory lock (two-int form) that a batch of a tenant's usage rows holds,
     * the second being the hash of the tenant's id.
     */
    public static final int USAGE_LOCK = 20_330;

    /** What is pruned: a table, its time column, what else a row must be to go, and the tenant limit of its days. */
    public enum Kind {
        INBOX("inbox", "received_at", """
                (y.status = 'done' OR y.status = 'dead'
                   AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.kind = 'inbound' AND d.ref_id = y.id::text))""",
                TenantLimits.INBOX_RETENTION_DAYS),
        /*
         * A pull channel's reply (the API, the OpenAI endpoint: push false) is read by its client and stays 'pending'
         * for good: it is over once written. A push channel's waits for its delivery.
         */
        REPLIES("outbox", "created_at", """
                (NOT y.push OR y.status = 'delivered' OR y.status = 'dead'
                   AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.kind = 'outbound' AND d.ref_id = y.id))""",
                TenantLimits.REPLIES_RETENTION_DAYS),
        /*
         * A model call's usage row, past retention.usageDetailDays (or the tenant's usage days, if fewer): the
         * statement that prunes it adds it to its day's sums (CALL_SUMS).
         */
        USAGE("llm_usage", "created_at", "true", TenantLimits.USAGE_RETENTION_DAYS),
        /* What the usage rows' pruning summed up: usage itself from then on, kept the usage days. */
        CALL_SUMS("usage_calls_daily", "day", "true", TenantLimits.USAGE_RETENTION_DAYS),
        /* What the inbox's pruning summed up for usage: kept as long as usage is. */
        MESSAGE_SUMS("usage_messages_daily", "day", "true", TenantLimits.USAGE_RETENTION_DAYS),
        AUDIT("audit_events", "at", "true", TenantLimits.AUDIT_RETENTION_DAYS),
        DEAD_LETTERS("dead_letters", "created_at", "true", TenantLimits.DEAD_LETTERS_RETENTION_DAYS),
        /*
         * A chat's history. The messages of one turn are written by one statement, so they share their created_at
         * and go together (the model never sees a tool result whose call was pruned, but for a batch boundary
         * inside a turn, which the next batch closes at once; ConversationStore drops such a head anyway).
         */
        TRANSCRIPTS("messages", "created_at", "true", TenantLimits.TRANSCRIPT_RETENTION_DAYS);

        private final String table;
        private final String limit;
        private final String sql;
        /** Audit events of no tenant (the tombstone of a deleted tenant) are kept for the default days. */
        private final String noTenantSql;

        Kind(String table, String column, String condition, String limit) {
            this.table = table;
            this.limit = limit;
            String old = " < now() - make_interval(secs => $2)";
            String select = "SELECT y.ctid FROM " + table + " y WHERE %1$s AND y." + column + old + " AND " + condition
                    + " ORDER BY y." + column + " LIMIT $3 FOR UPDATE OF y SKIP LOCKED";
            if ("llm_usage".equals(table)) {
                // Whole commits: a turn's calls share their commit's time, so the batch takes every row up to its last
                // row's time (a few more than $3 on a tie) and a turn is summed by one batch, counted once. Two
                // schedulers' batches of one tenant at once could each lock part of a commit (SKIP LOCKED), so a batch
                // runs only under the tenant's usage lock, held to its commit; one that cannot have it prunes nothing
                // (the other node is at it).
                select = "SELECT y.ctid FROM llm_usage y WHERE (SELECT pg_try_advisory_xact_lock(" + USAGE_LOCK
                        + ", hashtext($1))) AND %1$s AND y.created_at" + old
                        + " AND y.created_at <= coalesce((SELECT z.created_at FROM llm_usage z WHERE %2$s AND z.created_at"
                        + old + " ORDER BY z.created_at OFFSET $3 - 1 LIMIT 1), 'infinity')"
                        + " ORDER BY y.created_at FOR UPDATE OF y SKIP LOCKED";
            }
            this.sql = statement(table, select.formatted("y.tenant_id = $1", "z.tenant_id = $1"));
            this.noTenantSql = statement(table, select.formatted("y.tenant_id IS NULL AND $1::text IS NULL",
                    "z.tenant_id IS NULL"));
        }

        /**
         * Deletes the rows {@code select} finds and answers how many went. Inbox rows are what usage counts messages
         * by: the statement that prunes them adds them to the daily sums, in key order, so that two batches update
         * shared sums in the same order and never deadlock.
         */
        private static String statement(String table, String select) {
            String delete = "WITH gone AS (DELETE FROM " + table + " WHERE ctid = ANY(ARRAY(" + select + "))";
            if ("llm_usage".equals(table)) {
                return delete + CALLS_SUMMED;
            }
            if (!"inbox".equals(table)) {
                return delete + " RETURNING 1) SELECT count(*) FROM gone";
            }
            return delete + """
                     RETURNING tenant_id, chat_id, received_at, api_key_id
                    ), summed AS (
                      INSERT INTO usage_messages_daily (tenant_id, day, bot_id, key_id, messages)
                      SELECT g.tenant_id, (g.received_at AT TIME ZONE 'UTC')::date, coalesce(c.bot_id, 'main'),
                             coalesce(g.api_key_id, ''), count(*)
                        FROM gone g LEFT JOIN chats c ON c.id = g.chat_id
                       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
                      ON CONFLICT (tenant_id, day, bot_id, key_id)
                      DO UPDATE SET messages = usage_messages_daily.messages + excluded.messages
                    )
                    SELECT count(*) FROM gone""";
        }

        /*
         * The model calls pruned, added to their day's sums in key order (as the inbox's messages). A turn counts on its
         * first call (whole commits go together, so the turn's other calls are in the same batch). A row from before V32
         * has no key of its own: its message's, while that is kept.
         */
        private static final String CALLS_SUMMED = """
                 RETURNING id, tenant_id, bot_id, inbox_id, provider, model, api_key_id, created_at, input_tokens,
                           output_tokens, cached_tokens, cost_micros
                ), firsts AS (
                  SELECT min(g.id) AS id FROM gone g WHERE g.inbox_id IS NOT NULL GROUP BY g.inbox_id
                ), summed AS (
                  INSERT INTO usage_calls_daily AS d (tenant_id, day, bot_id, provider, model, key_id, calls, turns,
                                                      input_tokens, output_tokens, cached_tokens, cost_micros, unpriced)
                  SELECT g.tenant_id, (g.created_at AT TIME ZONE 'UTC')::date, g.bot_id, coalesce(g.provider, ''), g.model,
                         coalesce(g.api_key_id, i.api_key_id, ''), count(*), count(f.id), sum(g.input_tokens),
                         sum(g.output_tokens), sum(g.cached_tokens), sum(g.cost_micros),
                         count(*) FILTER (WHERE g.cost_micros IS NULL)
                    FROM gone g LEFT JOIN firsts f ON f.id = g.id
                         LEFT JOIN inbox i ON i.id = g.inbox_id AND g.api_key_id IS NULL
                   GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
                  ON CONFLICT (tenant_id, day, bot_id, provider, model, key_id)
                  DO UPDATE SET calls = d.calls + excluded.calls, turns = d.turns + excluded.turns,
                                input_tokens = d.input_tokens + excluded.input_tokens,
                                output_tokens = d.output_tokens + excluded.output_tokens,
                                cached_tokens = d.cached_tokens + excluded.cached_tokens,
                                cost_micros = CASE WHEN d.cost_micros IS NULL AND excluded.cost_micros IS NULL THEN NULL
                                                   ELSE coalesce(d.cost_micros, 0) + coalesce(excluded.cost_micros, 0) END,
                                unpriced = d.unpriced + excluded.unpriced
                )
                SELECT count(*) FROM gone""";

        public String table() {
            return table;
        }

        /** The tenant limit ({@link TenantLimits}) that overrides the node's days for this kind. */
        public String limit() {
            return limit;
        }

        /** The node's default days for this kind; 0 (transcripts only) keeps rows for good. */
        public double defaultDays(ClawfleetConfig.Retention retention) {
            return switch (this) {
                case INBOX -> retention.inboxDays();
                case REPLIES -> retention.repliesDays();
                case USAGE -> retention.usageDetailDays();
                case CALL_SUMS, MESSAGE_SUMS -> retention.usageDays();
                case AUDIT -> retention.auditDays();
                case DEAD_LETTERS -> retention.deadLettersDays();
                case TRANSCRIPTS -> retention.transcriptDays();
            };
        }
    }

    /** A tenant and its own limits (its retention overrides among them); a null id stands for rows of no tenant. */
    public record Tenant(String id, JsonObject limits) {

        /** The days this tenant keeps rows of that kind: its own limit, else the node's; 0 is for good. */
        public double days(Kind kind, ClawfleetConfig.Retention retention) {
            Integer own = TenantLimits.of(limits, kind.limit());
            if (kind == Kind.USAGE) {
                // the rows are summed past the node's detail days, sooner if the tenant keeps its usage for fewer
                return own != null ? Math.min(own, kind.defaultDays(retention)) : kind.defaultDays(retention);
            }
            return own != null ? own : kind.defaultDays(retention);
        }
    }

    /** Turn steps are deleted when their turn commits; these are the steps of turns that never will. */
    private static final String ORPHAN_STEPS = """
            DELETE FROM turn_steps WHERE ctid = ANY(ARRAY(
              SELECT s.ctid FROM turn_steps s
               WHERE s.created_at < now() - make_interval(secs => $1)
                 AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.id = s.inbox_id AND i.status <> 'done')
               LIMIT $2 FOR UPDATE OF s SKIP LOCKED))""";

    private final Pool pool;

    public RetentionStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Every tenant with its limits, then one for the rows of no tenant. */
    public Future<List<Tenant>> tenants() {
        return pool.query("SELECT id, limits FROM tenants ORDER BY id").execute().map(rows -> {
            List<Tenant> tenants = new ArrayList<>(rows.size() + 1);
            for (Row row : rows) {
                tenants.add(new Tenant(row.getString("id"), row.getJsonObject("limits")));
            }
            tenants.add(new Tenant(null, new JsonObject()));
            return tenants;
        });
    }

    /**
     * Deletes at most {@code batchSize} of the tenant's oldest rows of that kind older than {@code days}, and returns
     * how many went. Fewer than {@code batchSize} means none is left to prune now (or other nodes hold the rest).
     */
    public Future<Integer> pruneBatch(Kind kind, String tenantId, double days, int batchSize) {
        if (!(days >= ClawfleetConfig.Retention.LEAST_DAYS) || batchSize < 1) {
            throw new IllegalArgumentException("days must be at least " + ClawfleetConfig.Retention.LEAST_DAYS
                    + " and batchSize at least 1, got " + days + " and " + batchSize);
        }
        return pool.preparedQuery(tenantId == null ? kind.noTenantSql : kind.sql)
                .execute(Tuple.of(tenantId, seconds(days), batchSize))
                .map(rows -> rows.iterator().next().getLong(0).intValue());
    }

    /** Deletes at most {@code batchSize} steps older than {@code days} whose turn is over (answered, or gone). */
    public Future<Integer> pruneOrphanSteps(double days, int batchSize) {
        return pool.preparedQuery(ORPHAN_STEPS).execute(Tuple.of(seconds(days), batchSize)).map(rows -> rows.rowCount());
    }

    private static double seconds(double days) {
        return days * 86_400;
    }
}
