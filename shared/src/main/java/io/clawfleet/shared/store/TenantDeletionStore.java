package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Deletion of a tenant, or of one of its bots (issue 13): the tenant (bot) is marked {@code deleting} (its keys,
 * channels and tasks stop),
 * then its rows go table by table in small batches, each batch one short transaction that also adds its
 * count to the deletion's row and renews the lease of the node doing it. The deletion's row
 * ({@code tenant_deletions}) outlives the tenant as its tombstone, with an audit row naming no tenant.
 */
public final class TenantDeletionStore {

    /** The tenant's chats, through the unique index (tenant_id, bot_id, channel, chat_key). */
    private static final String BY_CHAT = "chat_id IN (SELECT id FROM chats WHERE tenant_id = $1) AND tenant_id = $1";
    private static final String BY_TENANT = "tenant_id = $1";
    /** The chats of one bot ($3) of the tenant. */
    private static final String BY_BOT_CHAT = "chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $3) AND tenant_id = $1";
    private static final String BY_BOT = "tenant_id = $1 AND bot_id = $3";

    /**
     * One table to empty, and how its rows of a tenant ({@code where}) or of one bot ({@code whereBot}; null:
     * the table is the tenant's, a bot's deletion leaves it) are found through an index: tables keyed by chat
     * through their chat_id index (inbox, messages and outbox have no tenant_id index), the others by
     * tenant_id. turn_steps holds only the steps of turns under way, so a scan of it stays small.
     */
    public record Step(String table, String where, String whereBot) {
    }

    /** Children before parents; chats then cascade to whatever a turn still under way wrote after its table was done. */
    /**
     * Children before parents; chats then cascade to whatever a turn still under way wrote after its table was
     * done. A bot's deletion keeps the tenant's records: its usage (what the tenant is billed for) and audit.
     */
    public static final List<Step> STEPS = List.of(
            // before inbox: a bot's turn steps are found through its inbox rows
            new Step("turn_steps", BY_TENANT, """
                    inbox_id IN (SELECT i.id FROM inbox i
                                  WHERE i.chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $3))
                    AND tenant_id = $1"""),
            new Step("inbox", BY_CHAT, BY_BOT_CHAT),
            new Step("pending_approvals", BY_CHAT, BY_BOT_CHAT),
            new Step("chat_admins", BY_CHAT, BY_BOT_CHAT),
            new Step("conversation_state", BY_CHAT, BY_BOT_CHAT),
            new Step("task_runs", "task_id IN (SELECT id FROM tasks WHERE tenant_id = $1) AND tenant_id = $1",
                    "task_id IN (SELECT id FROM tasks WHERE " + BY_BOT_CHAT + ") AND tenant_id = $1"),
            new Step("tasks", BY_TENANT, BY_BOT_CHAT),
            new Step("messages", BY_CHAT, BY_BOT_CHAT),
            new Step("outbox", BY_CHAT, BY_BOT_CHAT),
            new Step("dead_letters", BY_TENANT, BY_BOT_CHAT),
            new Step("llm_usage", BY_TENANT, null),
            new Step("usage_messages_daily", BY_TENANT, null),
            new Step("usage_calls_daily", BY_TENANT, null),
            new Step("audit_events", BY_TENANT, null),
            new Step("workspace_files", BY_TENANT, BY_BOT),
            new Step("webhook_deliveries", BY_TENANT, BY_BOT),
            new Step("webhook_endpoints", BY_TENANT, BY_BOT),
            new Step("channel_senders", BY_TENANT, BY_BOT),
            // its rows would go with their account; taken first so that the counts say so
            new Step("channel_send_pacing", BY_TENANT,
                    "account_id IN (SELECT id FROM channel_bots WHERE tenant_id = $1 AND bot_id = $3) AND tenant_id = $1"),
            new Step("channel_bots", BY_TENANT, BY_BOT),
            new Step("bot_providers", BY_TENANT, BY_BOT),
            new Step("bot_mcp_servers", BY_TENANT, BY_BOT),
            new Step("deferred_messages", BY_TENANT, BY_BOT),
            new Step("deferred_notices", BY_TENANT, BY_BOT),
            new Step("mcp_streams", BY_TENANT, BY_BOT),
            new Step("mcp_sessions", BY_TENANT, BY_BOT),
            // after the secrets sealed with them
            new Step("tenant_data_keys", BY_TENANT, null),
            new Step("api_keys", BY_TENANT, null),
            new Step("tenant_rate_windows", BY_TENANT, null),
            new Step("tenant_turn_slots", BY_TENANT, null),
            new Step("chats", BY_TENANT, BY_BOT),
            new Step("bots", BY_TENANT, null));

    /** The row of the tenants table itself, deleted last by {@link #finish}. */
    public static final String TENANTS = "tenants";
    /** The row of the bots table of a bot's deletion, deleted last by {@link #finish}. */
    public static final String BOTS = "bots";
    /** The audit event of a bot's finished deletion (in its tenant's audit). */
    public static final String BOT_DELETED = "bot_deleted";
    /** The audit event of a finished deletion; it names no tenant_id (the tenant is in its metadata). */
    public static final String TENANT_DELETED = "tenant_deleted";

    /**
     * A deletion as the operator sees it.
     *
     * @param state   {@code running} or {@code done}
     * @param counts  rows deleted so far per table
     * @param node    the node working on it now (null when none holds it, or once done)
     * @param botId   the bot deleted; null when the whole tenant is
     */
    public record Deletion(long id, String tenantId, String tenantName, String requestedBy, Instant requestedAt,
                           String state, JsonObject counts, long batches, String node, Instant startedAt,
                           Instant updatedAt, Instant finishedAt, String botId) {

        public boolean done() {
            return "done".equals(state);
        }

        public long rowsDeleted() {
            return counts.fieldNames().stream().mapToLong(table -> counts.getLong(table, 0L)).sum();
        }

        public JsonObject toJson() {
            JsonObject json = new JsonObject().put("id", id).put("tenantId", tenantId);
            if (botId != null) {
                json.put("botId", botId);
            } else {
                json.put("tenantName", tenantName);
            }
            return json.put("state", state).put("requestedBy", requestedBy).put("requestedAt", text(requestedAt))
                    .put("startedAt", text(startedAt)).put("updatedAt", text(updatedAt))
                    .put("finishedAt", text(finishedAt)).put("node", node).put("batches", batches)
                    .put("rowsDeleted", rowsDeleted()).put("counts", counts.copy());
        }

        private static String text(Instant at) {
            return at == null ? null : at.toString();
        }
    }

    /** The node lost the deletion's lease (it was too slow, or paused): another node carries on. */
    public static final class LeaseLostException extends RuntimeException {
        public LeaseLostException(long deletionId, String nodeId) {
            super("deletion " + deletionId + " is no longer held by node " + nodeId);
        }
    }

    /**
     * A big tenant is a big share of inbox or messages, and the planner then prefers reading the table from
     * its start for a LIMIT; batch after batch that start fills with the rows already deleted, so each batch
     * would read more. Index scans stop at the LIMIT and skip what earlier batches deleted. (No bitmap scans
     * either: they read every match before the LIMIT.) Tables with no index on the way scan, as before.
     */
    static final String INDEXES_ONLY = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off";

    private static final String COLUMNS = """
            id, tenant_id, tenant_name, requested_by, requested_at, state, counts, batches, lease_node, started_at,
            updated_at, finished_at, bot_id""";

    private final Pool pool;

    public TenantDeletionStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Marks the tenant {@code deleting} and records its deletion, in one transaction; a tenant already
     * being deleted gets its running deletion back. A tenant that is gone gets its latest deletion; an
     * id never deleted nor known is empty.
     */
    public Future<Optional<Deletion>> request(String tenantId, String requestedBy) {
        JsonObject zero = new JsonObject();
        STEPS.forEach(step -> zero.put(step.table(), 0L));
        zero.put(TENANTS, 0L);
        return pool.withTransaction(conn -> conn.preparedQuery("SELECT name, status FROM tenants WHERE id = $1 FOR UPDATE")
                .execute(Tuple.of(tenantId))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return latest(conn, tenantId);
                    }
                    String name = rows.iterator().next().getString("name");
                    return conn.preparedQuery("UPDATE tenants SET status = 'deleting', updated_at = now() WHERE id = $1")
                            .execute(Tuple.of(tenantId))
                            .compose(v -> conn.preparedQuery("""
                                            INSERT INTO tenant_deletions (tenant_id, tenant_name, requested_by, counts)
                                            VALUES ($1, $2, $3, $4)
                                            ON CONFLICT (tenant_id, coalesce(bot_id, '')) WHERE state = 'running' DO NOTHING""")
                                    .execute(Tuple.of(tenantId, name, requestedBy, zero)))
                            .compose(v -> conn.preparedQuery("SELECT " + COLUMNS
                                            + " FROM tenant_deletions WHERE tenant_id = $1 AND bot_id IS NULL AND state = 'running'")
                                    .execute(Tuple.of(tenantId)))
                            .map(found -> Optional.of(deletion(found.iterator().next())));
                }));
    }

    /** The tenant's latest deletion, running or done; empty when it was never deleted. */
    public Future<Optional<Deletion>> latest(String tenantId) {
        return pool.withConnection(conn -> latest(conn, tenantId));
    }

    private static Future<Optional<Deletion>> latest(SqlConnection conn, String tenantId) {
        return conn.preparedQuery("SELECT " + COLUMNS
                        + " FROM tenant_deletions WHERE tenant_id = $1 AND bot_id IS NULL ORDER BY id DESC LIMIT 1")
                .execute(Tuple.of(tenantId))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(deletion(rows.iterator().next())));
    }

    /**
     * Takes the oldest running deletion whose lease ran out (or that this node held before a restart)
     * and holds it for {@code leaseMs}. SKIP LOCKED: two nodes asking at once take different ones.
     */
    public Future<Optional<Deletion>> claim(String nodeId, long leaseMs) {
        return pool.preparedQuery("""
                        UPDATE tenant_deletions d SET lease_node = $1, lease_until = now() + $2 * interval '1 millisecond',
                               started_at = coalesce(started_at, now()), updated_at = now()
                         WHERE d.id = (SELECT id FROM tenant_deletions
                                        WHERE state = 'running' AND (lease_until < now() OR lease_node = $1)
                                        ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                        RETURNING\s""" + COLUMNS)
                .execute(Tuple.of(nodeId, leaseMs))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(deletion(rows.iterator().next())));
    }

    /**
     * Deletes at most {@code batchSize} rows of the tenant from the step's table, adds their number to
     * the deletion's counts and renews this node's lease, in one short transaction. Fails with
     * {@link LeaseLostException} (and deletes nothing) when this node no longer holds the deletion.
     *
     * @return the rows deleted; 0 when the table holds none of the tenant's rows any more
     */
    public Future<Integer> deleteBatch(Deletion deletion, Step step, String nodeId, int batchSize, long leaseMs) {
        boolean bot = deletion.botId() != null;
        if (bot && step.whereBot() == null) {
            return Future.succeededFuture(0);
        }
        String delete = "DELETE FROM " + step.table() + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + step.table()
                + " WHERE " + (bot ? step.whereBot() : step.where()) + " LIMIT $2))";
        Tuple params = bot ? Tuple.of(deletion.tenantId(), batchSize, deletion.botId()) : Tuple.of(deletion.tenantId(), batchSize);
        return pool.withTransaction(conn -> conn.query(INDEXES_ONLY).execute()
                .compose(v -> conn.preparedQuery(delete).execute(params))
                .compose(deleted -> conn.preparedQuery("""
                                UPDATE tenant_deletions
                                   SET counts = jsonb_set(counts, ARRAY[$3::text],
                                                          to_jsonb(coalesce((counts ->> $3)::bigint, 0) + $4)),
                                       batches = batches + 1, updated_at = now(),
                                       lease_until = now() + $5 * interval '1 millisecond'
                                 WHERE id = $1 AND lease_node = $2 AND state = 'running'""")
                        .execute(Tuple.of(deletion.id(), nodeId, step.table(), (long) deleted.rowCount(), leaseMs))
                        .compose(held -> held.rowCount() == 1 ? Future.succeededFuture(deleted.rowCount())
                                : Future.failedFuture(new LeaseLostException(deletion.id(), nodeId)))));
    }

    /**
     * Deletes the tenant's own row, marks the deletion done and writes its audit tombstone, in one
     * transaction; call it once every step deletes nothing. Fails with {@link LeaseLostException} when
     * this node no longer holds the deletion.
     */
    public Future<Deletion> finish(Deletion deletion, String nodeId) {
        if (deletion.botId() != null) {
            return finishBot(deletion, nodeId);
        }
        return pool.withTransaction(conn -> held(conn, deletion, nodeId)
                        .compose(v -> conn.preparedQuery("DELETE FROM tenants WHERE id = $1 AND status = 'deleting'")
                                .execute(Tuple.of(deletion.tenantId())))
                        .compose(deleted -> markDone(conn, deletion, TENANTS, deleted.rowCount()))
                        .compose(done -> conn.preparedQuery("""
                                        INSERT INTO audit_events (tenant_id, event_type, outcome, actor_role, reason, metadata_json)
                                        VALUES (NULL, $1, 'success', 'operator', $2, $3)""")
                                .execute(Tuple.of(TENANT_DELETED, "tenant " + done.tenantId() + " deleted",
                                        new JsonObject().put("tenantId", done.tenantId()).put("tenantName", done.tenantName())
                                                .put("deletionId", done.id()).put("requestedBy", done.requestedBy())
                                                .put("requestedAt", done.requestedAt().toString())
                                                .put("finishedAt", done.finishedAt().toString())
                                                .put("rowsDeleted", done.rowsDeleted()).put("counts", done.counts())))
                                .map(done)));
    }

    /**
     * Marks the bot {@code deleting} and records its deletion, in one transaction; a bot already being deleted gets
     * its running deletion back. Empty when the tenant has no such bot (and never had one deleted under that id).
     * The default bot {@link BotRef#MAIN} is not deleted this way (the caller refuses it).
     */
    public Future<Optional<Deletion>> requestBot(BotRef bot, String requestedBy) {
        JsonObject zero = new JsonObject();
        STEPS.stream().filter(step -> step.whereBot() != null).forEach(step -> zero.put(step.table(), 0L));
        zero.put(BOTS, 0L);
        return pool.withTransaction(conn -> conn.preparedQuery("""
                        SELECT t.name FROM bots b JOIN tenants t ON t.id = b.tenant_id
                         WHERE b.tenant_id = $1 AND b.id = $2 FOR UPDATE OF b""")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return latestBot(conn, bot);
                    }
                    String tenantName = rows.iterator().next().getString("name");
                    return conn.preparedQuery("UPDATE bots SET status = 'deleting', updated_at = now() WHERE tenant_id = $1 AND id = $2")
                            .execute(Tuple.of(bot.tenantId(), bot.botId()))
                            .compose(v -> conn.preparedQuery("""
                                            INSERT INTO tenant_deletions (tenant_id, bot_id, tenant_name, requested_by, counts)
                                            VALUES ($1, $2, $3, $4, $5)
                                            ON CONFLICT (tenant_id, coalesce(bot_id, '')) WHERE state = 'running' DO NOTHING""")
                                    .execute(Tuple.of(bot.tenantId(), bot.botId(), tenantName, requestedBy, zero)))
                            .compose(v -> latestBot(conn, bot));
                }));
    }

    /** The bot's latest deletion, running or done; empty when it was never deleted. */
    public Future<Optional<Deletion>> latestBot(BotRef bot) {
        return pool.withConnection(conn -> latestBot(conn, bot));
    }

    private static Future<Optional<Deletion>> latestBot(SqlConnection conn, BotRef bot) {
        return conn.preparedQuery("SELECT " + COLUMNS
                        + " FROM tenant_deletions WHERE tenant_id = $1 AND bot_id = $2 ORDER BY id DESC LIMIT 1")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(deletion(rows.iterator().next())));
    }

    /**
     * Deletes the bot's own row, takes it off the keys limited to it (a key limited to it alone is revoked: it
     * must not come to reach every bot), marks the deletion done and writes an audit row, in one transaction.
     */
    private Future<Deletion> finishBot(Deletion deletion, String nodeId) {
        return pool.withTransaction(conn -> held(conn, deletion, nodeId)
                        .compose(v -> conn.preparedQuery("""
                                        UPDATE api_keys
                                           SET revoked_at = CASE WHEN bot_ids = ARRAY[$2]::text[] THEN coalesce(revoked_at, now())
                                                                 ELSE revoked_at END,
                                               bot_ids = CASE WHEN bot_ids = ARRAY[$2]::text[] THEN bot_ids
                                                              ELSE array_remove(bot_ids, $2) END
                                         WHERE tenant_id = $1 AND $2 = ANY (bot_ids)""")
                                .execute(Tuple.of(deletion.tenantId(), deletion.botId())))
                        .compose(v -> conn.preparedQuery("DELETE FROM bots WHERE tenant_id = $1 AND id = $2 AND status = 'deleting'")
                                .execute(Tuple.of(deletion.tenantId(), deletion.botId())))
                        .compose(deleted -> markDone(conn, deletion, BOTS, deleted.rowCount()))
                        .compose(done -> conn.preparedQuery("""
                                        INSERT INTO audit_events (tenant_id, event_type, outcome, actor_role, reason, metadata_json,
                                                                  bot_id)
                                        VALUES ($1, $2, 'success', 'admin', $3, $4, $5)""")
                                .execute(Tuple.of(done.tenantId(), BOT_DELETED, "bot " + done.botId() + " deleted",
                                        new JsonObject().put("botId", done.botId()).put("deletionId", done.id())
                                                .put("requestedBy", done.requestedBy())
                                                .put("rowsDeleted", done.rowsDeleted()).put("counts", done.counts()),
                                        done.botId()))
                                .map(done)));
    }

    /** Locks the deletion's row; fails with {@link LeaseLostException} when this node no longer holds it. */
    private static Future<Void> held(SqlConnection conn, Deletion deletion, String nodeId) {
        return conn.preparedQuery("SELECT 1 FROM tenant_deletions WHERE id = $1 AND lease_node = $2 AND state = 'running' FOR UPDATE")
                .execute(Tuple.of(deletion.id(), nodeId))
                .compose(held -> held.size() == 1 ? Future.succeededFuture()
                        : Future.failedFuture(new LeaseLostException(deletion.id(), nodeId)));
    }

    /** Marks the deletion done, adding the count of its last table ({@code tenants} or {@code bots}). */
    private static Future<Deletion> markDone(SqlConnection conn, Deletion deletion, String lastTable, int deleted) {
        return conn.preparedQuery("""
                        UPDATE tenant_deletions
                           SET counts = counts || jsonb_build_object($3::text, $2::bigint), state = 'done',
                               finished_at = now(), updated_at = now(), lease_node = NULL, lease_until = '-infinity'
                         WHERE id = $1 RETURNING\s""" + COLUMNS)
                .execute(Tuple.of(deletion.id(), (long) deleted, lastTable))
                .map(rows -> deletion(rows.iterator().next()));
    }

    private static Deletion deletion(Row row) {
        Object raw = row.getValue("counts");
        JsonObject counts = raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
        return new Deletion(row.getLong("id"), row.getString("tenant_id"), row.getString("tenant_name"),
                row.getString("requested_by"), InboxStore.instant(row, "requested_at"), row.getString("state"), counts,
                row.getLong("batches"), row.getString("lease_node"), InboxStore.instant(row, "started_at"),
                InboxStore.instant(row, "updated_at"), InboxStore.instant(row, "finished_at"), row.getString("bot_id"));
    }
}
