package io.clawfleet.shared.store;

import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.security.TenantKeys;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A bot's signed webhook endpoints, and the deliveries of its events to them (docs/CHANNELS.md#signed-webhooks). The
 * deliveries are written by triggers in the transaction of what they tell of (V36); this store lets a gateway claim the
 * due ones, and records what each try got. An endpoint's signing secret is sealed with the tenant's data key.
 */
public final class WebhookStore {

    /** The events an endpoint may subscribe to. */
    public static final Set<String> EVENTS = Set.of("message.received", "reply.sent", "task.fired", "dead_letter.created");
    /** Endpoints a bot may have. */
    public static final int MAX_ENDPOINTS = 16;
    /** The audit event of an endpoint turned off because its deliveries kept failing. */
    public static final String ENDPOINT_DISABLED = "webhook_endpoint_disabled";
    static final String SECRET_PURPOSE = "webhook_endpoints.secret";
    private static final String ENDPOINT_COLUMNS = "id, tenant_id, bot_id, url, events, description, secret_hint, enabled, "
            + "disabled_reason, failing_since, created_at";

    /** An endpoint as its owner sees it (never its secret). */
    public record Endpoint(long id, String tenantId, String botId, String url, List<String> events, String description,
                           String secretHint, boolean enabled, String disabledReason, Instant failingSince, Instant createdAt) {
    }

    /** A delivery as its owner sees it. */
    public record Delivery(String id, long endpointId, String eventType, String status, int attempts, Instant nextAttemptAt,
                           Integer lastStatus, String lastError, Instant createdAt, Instant finishedAt, String payload) {
    }

    /** A delivery claimed for a try: what to send, where, and with which secret. */
    public record Due(String id, String tenantId, String botId, long endpointId, String url, String secret, String payload,
                      int attempts, String claimedBy) {
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WebhookStore.class);

    private final Pool pool;
    private final TenantKeys keys;

    public WebhookStore(Pool pool, TenantKeys keys) {
        this.pool = Objects.requireNonNull(pool);
        this.keys = Objects.requireNonNull(keys);
    }

    /**
     * Adds an endpoint to a bot, its secret sealed.
     *
     * @throws IllegalStateException (failed future) when the bot has {@link #MAX_ENDPOINTS} already
     */
    public Future<Endpoint> create(BotRef owner, String url, List<String> events, String description, String secret) {
        String tenantId = owner.tenantId();
        // the bot's row locked first: two creations at once take turns, so the count is exact
        return keys.current(tenantId).compose(key -> pool.withTransaction(conn -> conn.preparedQuery(
                        "SELECT 1 FROM bots WHERE tenant_id = $1 AND id = $2 FOR UPDATE")
                .execute(Tuple.of(tenantId, owner.botId()))
                .compose(locked -> conn.preparedQuery("SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1 AND bot_id = $2")
                        .execute(Tuple.of(tenantId, owner.botId())))
                .compose(count -> {
                    if (count.iterator().next().getLong(0) >= MAX_ENDPOINTS) {
                        return Future.failedFuture(new IllegalStateException("a bot has at most " + MAX_ENDPOINTS
                                + " webhook endpoints; remove one first"));
                    }
                    return conn.preparedQuery("""
                                    INSERT INTO webhook_endpoints (tenant_id, bot_id, url, events, description, secret_enc, secret_key_id,
                                                                   secret_hint)
                                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING\s""" + ENDPOINT_COLUMNS)
                            .execute(Tuple.of(tenantId, owner.botId(), url, events.toArray(String[]::new), description,
                                    Buffer.buffer(keys.seal(key, SECRET_PURPOSE, secret)), key.keyId(), hint(secret)));
                })
                .map(rows -> endpoint(rows.iterator().next()))));
    }

    public Future<List<Endpoint>> list(BotRef owner) {
        return pool.preparedQuery("SELECT " + ENDPOINT_COLUMNS + " FROM webhook_endpoints WHERE tenant_id = $1 AND bot_id = $2 ORDER BY id")
                .execute(Tuple.of(owner.tenantId(), owner.botId())).map(WebhookStore::endpoints);
    }

    public Future<Optional<Endpoint>> find(BotRef owner, long id) {
        return pool.preparedQuery("SELECT " + ENDPOINT_COLUMNS + " FROM webhook_endpoints WHERE tenant_id = $1 AND bot_id = $2 AND id = $3")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id)).map(rows -> endpoints(rows).stream().findFirst());
    }

    /**
     * Changes an endpoint: any of {@code url}, {@code events}, {@code description} (null: unchanged) and {@code enabled}
     * (null: unchanged; true also forgets why it was turned off and since when it failed).
     */
    public Future<Optional<Endpoint>> update(BotRef owner, long id, String url, List<String> events, String description,
                                             Boolean enabled) {
        return pool.preparedQuery("""
                        UPDATE webhook_endpoints SET url = coalesce($4, url), events = coalesce($5, events),
                               description = coalesce($6, description), enabled = coalesce($7, enabled),
                               disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END,
                               failing_since = CASE WHEN $7 THEN NULL ELSE failing_since END
                         WHERE tenant_id = $1 AND bot_id = $2 AND id = $3
                        RETURNING\s""" + ENDPOINT_COLUMNS)
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id, url, events == null ? null : events.toArray(String[]::new),
                        description, enabled))
                .map(rows -> endpoints(rows).stream().findFirst());
    }

    /** Removes an endpoint and its deliveries; false when the bot has no such endpoint. */
    public Future<Boolean> delete(BotRef owner, long id) {
        return pool.preparedQuery("DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND bot_id = $2 AND id = $3")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id)).map(rows -> rows.rowCount() == 1);
    }

    /** An endpoint's latest deliveries, newest first; empty when the bot has no such endpoint. */
    public Future<Optional<List<Delivery>>> deliveries(BotRef owner, long endpointId, int limit) {
        return find(owner, endpointId).compose(found -> found.isEmpty() ? Future.succeededFuture(Optional.empty())
                : pool.preparedQuery("""
                                SELECT id, endpoint_id, event_type, status, attempts, next_attempt_at, last_status, last_error,
                                       created_at, finished_at, payload
                                  FROM webhook_deliveries WHERE tenant_id = $1 AND endpoint_id = $2
                                 ORDER BY created_at DESC, id DESC LIMIT $3""")
                        .execute(Tuple.of(owner.tenantId(), endpointId, limit))
                        .map(rows -> {
                            List<Delivery> out = new ArrayList<>(rows.size());
                            rows.forEach(row -> out.add(new Delivery(row.getString("id"), row.getLong("endpoint_id"),
                                    row.getString("event_type"), row.getString("status"), row.getInteger("attempts"),
                                    instant(row, "next_attempt_at"), row.getInteger("last_status"), row.getString("last_error"),
                                    instant(row, "created_at"), instant(row, "finished_at"), row.getString("payload"))));
                            return Optional.of(out);
                        }));
    }

    /** Sends a delivery again (a failed one, or a pending one now rather than later); false when there is no such one. */
    public Future<Boolean> retry(BotRef owner, long endpointId, String deliveryId) {
        return pool.preparedQuery("""
                        UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), finished_at = NULL
                         WHERE tenant_id = $1 AND bot_id = $2 AND endpoint_id = $3 AND id = $4 AND status <> 'delivered'""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), endpointId, deliveryId)).map(rows -> rows.rowCount() == 1);
    }

    /**
     * Claims up to {@code limit} due deliveries of enabled endpoints for {@code leaseMs}, oldest first: another gateway
     * takes one over only once its claim has run out (this one died mid-try). A delivery whose secret does not open is
     * left to the operator's log by the caller.
     */
    public Future<List<Due>> claimDue(String nodeId, long leaseMs, int limit) {
        return pool.preparedQuery("""
                        WITH due AS (
                          SELECT d.id FROM webhook_deliveries d
                            JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled
                           WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND d.claimed_until < now()
                           ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED
                        ), claimed AS (
                          UPDATE webhook_deliveries d SET claimed_by = $1, claimed_until = now() + $2 * interval '1 millisecond'
                            FROM due WHERE d.id = due.id
                          RETURNING d.id, d.tenant_id, d.bot_id, d.endpoint_id, d.payload, d.attempts, d.next_attempt_at
                        )
                        SELECT c.*, e.url, e.secret_enc, e.secret_key_id, k.wrapped_key, k.master_key_id
                          FROM claimed c
                          JOIN webhook_endpoints e ON e.id = c.endpoint_id
                          JOIN tenant_data_keys k ON k.tenant_id = e.tenant_id AND k.key_id = e.secret_key_id
                         ORDER BY c.next_attempt_at""")
                .execute(Tuple.of(nodeId, leaseMs, limit))
                .map(rows -> {
                    List<Due> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        String tenantId = row.getString("tenant_id");
                        String secret;
                        try {
                            secret = keys.open(tenantId, SECRET_PURPOSE, row.getInteger("secret_key_id"),
                                    row.getBuffer("wrapped_key").getBytes(), row.getString("master_key_id"),
                                    row.getBuffer("secret_enc").getBytes());
                        } catch (SecretException e) {
                            // left claimed: tried again once the claim runs out (the operator fixes the master keys);
                            // it must not stop the deliveries of the others
                            LOG.error("a webhook delivery is not sent, its endpoint's secret does not open [tenant: {}, "
                                    + "endpoint: {}]: {}", tenantId, row.getLong("endpoint_id"), e.getMessage());
                            continue;
                        }
                        out.add(new Due(row.getString("id"), tenantId, row.getString("bot_id"), row.getLong("endpoint_id"),
                                row.getString("url"), secret, row.getString("payload"), row.getInteger("attempts"), nodeId));
                    }
                    return out;
                });
    }

    /**
     * A try got a 2xx: the delivery is done, and its endpoint no longer failing. Recorded only while this node's claim
     * stands (a node whose claim ran out while it waited records nothing: the one that took it over does).
     */
    public Future<Void> delivered(Due due, int status) {
        return pool.preparedQuery("""
                        WITH d AS (
                          UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = $3,
                                 last_error = NULL, finished_at = now(), claimed_until = '-infinity'
                           WHERE id = $1 AND claimed_by = $2 AND status = 'pending' RETURNING endpoint_id)
                        UPDATE webhook_endpoints SET failing_since = NULL FROM d
                         WHERE webhook_endpoints.id = d.endpoint_id AND failing_since IS NOT NULL""")
                .execute(Tuple.of(due.id(), due.claimedBy(), status)).mapEmpty();
    }

    /**
     * A try failed. {@code retryInMs} &lt; 0: out of tries, the delivery failed for good. The endpoint is failing since
     * its first failure after a success; once that is {@code disableAfterMs} ago it is turned off, with an audit entry in
     * its tenant's log, in the same statement. Recorded only while this node's claim stands.
     *
     * @return whether this failure turned the endpoint off
     */
    public Future<Boolean> failed(Due due, Integer status, String error, long retryInMs, long disableAfterMs) {
        return pool.preparedQuery("""
                        WITH d AS (
                          UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $3, last_error = $4,
                                 status = CASE WHEN $5 < 0 THEN 'failed' ELSE 'pending' END,
                                 next_attempt_at = CASE WHEN $5 < 0 THEN next_attempt_at ELSE now() + $5 * interval '1 millisecond' END,
                                 finished_at = CASE WHEN $5 < 0 THEN now() END, claimed_until = '-infinity'
                           WHERE id = $1 AND claimed_by = $2 AND status = 'pending' RETURNING endpoint_id
                        ), old AS (
                          SELECT w.id, w.enabled, coalesce(w.failing_since, now()) AS since
                            FROM webhook_endpoints w JOIN d ON w.id = d.endpoint_id
                        ), e AS (
                          -- one update of the row (a statement cannot change a row twice); only while it is enabled,
                          -- so two failures at once turn it off, and audit it, once
                          UPDATE webhook_endpoints w SET failing_since = old.since,
                                 enabled = old.since > now() - $6 * interval '1 millisecond',
                                 disabled_reason = CASE WHEN old.since <= now() - $6 * interval '1 millisecond'
                                                        THEN 'every delivery failed since ' || webhook_timestamp(old.since) END
                            FROM old WHERE w.id = old.id AND w.enabled
                          RETURNING w.id, w.tenant_id, w.bot_id, w.url, w.disabled_reason, NOT w.enabled AS turned_off
                        ), audited AS (
                          INSERT INTO audit_events (tenant_id, event_type, outcome, reason, metadata_json, bot_id)
                          SELECT tenant_id, $7, 'error', disabled_reason,
                                 json_build_object('endpointId', id, 'url', url, 'lastError', $4::text)::jsonb, bot_id
                            FROM e WHERE turned_off
                        )
                        SELECT count(*) FROM e WHERE turned_off""")
                .execute(Tuple.of(due.id(), due.claimedBy(), status, PgText.clean(error), retryInMs, disableAfterMs)
                        .addString(ENDPOINT_DISABLED))
                .map(rows -> rows.iterator().next().getLong(0) > 0);
    }

    /** Forgets finished deliveries older than {@code days}, a batch at a time; how many. */
    public Future<Integer> pruneFinished(double days, int batch) {
        return pool.preparedQuery("""
                        DELETE FROM webhook_deliveries WHERE id IN (
                          SELECT id FROM webhook_deliveries WHERE status <> 'pending'
                             AND finished_at < now() - $1 * interval '1 day' LIMIT $2)""")
                .execute(Tuple.of(days, batch)).map(RowSet::rowCount);
    }

    /** What the API shows of a secret: its prefix and last four characters. */
    static String hint(String secret) {
        return secret.substring(0, Math.min(6, secret.length())) + "…" + secret.substring(Math.max(0, secret.length() - 4));
    }

    private static List<Endpoint> endpoints(RowSet<Row> rows) {
        List<Endpoint> out = new ArrayList<>(rows.size());
        rows.forEach(row -> out.add(endpoint(row)));
        return out;
    }

    private static Endpoint endpoint(Row row) {
        return new Endpoint(row.getLong("id"), row.getString("tenant_id"), row.getString("bot_id"), row.getString("url"),
                List.of(row.getArrayOfStrings("events")), row.getString("description"), row.getString("secret_hint"),
                row.getBoolean("enabled"), row.getString("disabled_reason"), instant(row, "failing_since"), instant(row, "created_at"));
    }

    private static Instant instant(Row row, String column) {
        OffsetDateTime at = row.getOffsetDateTime(column);
        return at == null ? null : at.toInstant();
    }
}
