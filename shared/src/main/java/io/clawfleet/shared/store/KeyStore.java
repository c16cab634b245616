package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * A tenant's API keys (issue 13): made with scopes and an optional expiry, listed without their
 * secrets, revoked, rotated with a grace period. Every statement names the tenant, so one tenant's
 * key ids mean nothing to another. A tenant always keeps one working admin key: revoking or rotating
 * away the last one is refused, so nobody locks a tenant out of its own administration.
 */
public final class KeyStore {

    /**
     * A key as lists show it: never its secret.
     *
     * @param botIds            the bots the key is limited to; null when it reaches every bot of the tenant
     * @param messagesPerMinute the key's own message rate, within its tenant's; null when it has none
     */
    public record Key(String id, String prefix, String name, Set<String> scopes, Instant createdAt, Instant lastUsedAt,
                      Instant expiresAt, Instant revokedAt, List<String> botIds, Integer messagesPerMinute) {

        public JsonObject toJson() {
            return new JsonObject().put("id", id).put("prefix", prefix).put("name", name)
                    .put("scopes", new JsonArray(List.copyOf(new TreeSet<>(scopes))))
                    .put("botIds", botIds == null ? null : new JsonArray(botIds)).put("createdAt", text(createdAt))
                    .put("lastUsedAt", text(lastUsedAt)).put("expiresAt", text(expiresAt)).put("revokedAt", text(revokedAt))
                    .put("messagesPerMinute", messagesPerMinute);
        }

        private static String text(Instant at) {
            return at == null ? null : at.toString();
        }
    }

    /** A key just made: as listed, plus its whole secret, shown this once. */
    public record Made(Key key, String secret) {

        public JsonObject toJson() {
            return key.toJson().put("key", secret);
        }

        @Override
        public String toString() {
            return "Made[" + key + ", secret=[redacted]]";
        }
    }

    /** Why a key was not revoked or rotated. */
    public enum Refusal {
        /** No such key of this tenant, or it is revoked already. */
        NOT_FOUND,
        /** It is the tenant's last working admin key. */
        LAST_ADMIN_KEY
    }

    /** The outcome of a revocation or rotation: the key (old or new) or why not. */
    public record Change(Optional<Key> key, Optional<Made> made, Refusal refusal) {
    }

    private static final String COLUMNS = "id, prefix, name, scopes, created_at, last_used_at, expires_at, revoked_at, bot_ids,"
            + " messages_per_minute";

    private final Pool pool;

    public KeyStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Makes a key for the tenant; empty when the tenant does not exist. Fails with {@link LimitReachedException}
     * when the tenant has as many keys (not revoked) as its limit {@code keys} allows; a rotation is not refused.
     *
     * @param botIds the bots the key is limited to (they must exist: see {@link #missingBots}); null for every bot
     */
    public Future<Optional<Made>> create(String tenantId, String name, Set<String> scopes, Instant expiresAt,
                                         List<String> botIds) {
        return create(tenantId, name, scopes, expiresAt, botIds, null);
    }

    /**
     * As {@link #create(String, String, Set, Instant, List)}, with the key's own message rate.
     *
     * @param messagesPerMinute the messages the key may send per minute, cluster-wide, within its tenant's; null for none
     */
    public Future<Optional<Made>> create(String tenantId, String name, Set<String> scopes, Instant expiresAt,
                                         List<String> botIds, Integer messagesPerMinute) {
        return pool.withTransaction(connection -> TenantLimits.check(connection, tenantId, TenantLimits.KEYS)
                .compose(v -> insert(connection, tenantId, name, scopes, expiresAt, botIds, messagesPerMinute)));
    }

    /** Those of {@code botIds} the tenant has no (active) bot of, in the order given. */
    public Future<List<String>> missingBots(String tenantId, List<String> botIds) {
        return pool.preparedQuery("""
                        SELECT b.id FROM unnest($2::text[]) WITH ORDINALITY AS b(id, ord)
                         WHERE NOT EXISTS (SELECT 1 FROM bots o WHERE o.tenant_id = $1 AND o.id = b.id AND o.status = 'active')
                         ORDER BY b.ord""")
                .execute(Tuple.tuple().addString(tenantId).addArrayOfString(botIds.toArray(String[]::new)))
                .map(rows -> {
                    List<String> out = new ArrayList<>();
                    rows.forEach(row -> out.add(row.getString("id")));
                    return out;
                });
    }

    private static Future<Optional<Made>> insert(SqlConnection connection, String tenantId, String name, Set<String> scopes,
                                                 Instant expiresAt, List<String> botIds, Integer messagesPerMinute) {
        ApiKeys.Generated generated = ApiKeys.generate();
        return connection.preparedQuery("""
                        INSERT INTO api_keys (key_hash, tenant_id, id, prefix, name, scopes, expires_at, bot_ids, messages_per_minute)
                        SELECT $2, t.id, $3, $4, $5, $6, $7, $8, $9 FROM tenants t WHERE t.id = $1
                        RETURNING """ + " " + COLUMNS)
                .execute(Tuple.tuple().addString(tenantId).addString(TenantStore.hashKey(generated.key()))
                        .addString(generated.id()).addString(generated.prefix()).addString(name)
                        .addArrayOfString(scopes.toArray(String[]::new)).addValue(utc(expiresAt))
                        .addArrayOfString(botIds == null ? null : botIds.toArray(String[]::new))
                        .addInteger(messagesPerMinute))
                .map(rows -> rows.size() == 0 ? Optional.empty()
                        : Optional.of(new Made(key(rows.iterator().next()), generated.key())));
    }

    /**
     * The tenant's keys that are not revoked, newest first (expired ones included, with their expiry);
     * empty when there is no such tenant (an existing tenant always has at least its admin key).
     */
    public Future<Optional<List<Key>>> list(String tenantId) {
        return pool.preparedQuery("SELECT t.id AS tenant, k.* FROM tenants t LEFT JOIN LATERAL (SELECT " + COLUMNS
                        + " FROM api_keys WHERE tenant_id = t.id AND revoked_at IS NULL) k ON true WHERE t.id = $1"
                        + " ORDER BY k.created_at DESC, k.id")
                .execute(Tuple.of(tenantId))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.empty();
                    }
                    List<Key> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> {
                        if (row.getString("id") != null) {
                            out.add(key(row));
                        }
                    });
                    return Optional.of(out);
                });
    }

    /** Revokes a key now, unless it is the tenant's last working admin key. */
    public Future<Change> revoke(String tenantId, String keyId) {
        return pool.withTransaction(connection -> lockAndCheck(connection, tenantId, keyId).compose(refusal -> refusal != null
                ? Future.succeededFuture(new Change(Optional.empty(), Optional.empty(), refusal))
                : connection.preparedQuery("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING "
                                + COLUMNS)
                        .execute(Tuple.of(tenantId, keyId))
                        .map(rows -> new Change(Optional.of(key(rows.iterator().next())), Optional.empty(), null))));
    }

    /**
     * Replaces a key with a new one of the same name, scopes, bots, message rate and expiry; the old one keeps working for
     * {@code graceSeconds} (0: revoked at once), so callers can switch without a gap.
     */
    public Future<Change> rotate(String tenantId, String keyId, long graceSeconds) {
        return pool.withTransaction(connection -> connection.preparedQuery("SELECT " + COLUMNS
                                + " FROM api_keys WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL FOR UPDATE")
                .execute(Tuple.of(tenantId, keyId))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return Future.succeededFuture(new Change(Optional.empty(), Optional.empty(), Refusal.NOT_FOUND));
                    }
                    Key old = key(rows.iterator().next());
                    return insert(connection, tenantId, old.name(), old.scopes(), old.expiresAt(), old.botIds(), old.messagesPerMinute())
                            .compose(made -> connection.preparedQuery(graceSeconds == 0
                                            ? "UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING " + COLUMNS
                                            : "UPDATE api_keys SET expires_at = least(coalesce(expires_at, 'infinity'), now() + $3 * interval '1 second') "
                                            + "WHERE tenant_id = $1 AND id = $2 RETURNING " + COLUMNS)
                                    .execute(graceSeconds == 0 ? Tuple.of(tenantId, keyId) : Tuple.of(tenantId, keyId, graceSeconds))
                                    .map(updated -> new Change(Optional.of(key(updated.iterator().next())), made, null)));
                }));
    }

    /**
     * Locks the tenant's working admin keys and says why {@code keyId} may not be revoked, or null. Only an admin
     * key for every bot counts: a key limited to some bots cannot manage keys.
     */
    private static Future<Refusal> lockAndCheck(SqlConnection connection, String tenantId, String keyId) {
        return connection.preparedQuery("""
                        SELECT id, 'admin' = ANY (scopes) AND bot_ids IS NULL AND (expires_at IS NULL OR expires_at > now())
                               AS working_admin
                          FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL FOR UPDATE""")
                .execute(Tuple.of(tenantId))
                .map(rows -> {
                    boolean found = false;
                    boolean targetIsAdmin = false;
                    int admins = 0;
                    for (Row row : rows) {
                        boolean admin = row.getBoolean("working_admin");
                        admins += admin ? 1 : 0;
                        if (row.getString("id").equals(keyId)) {
                            found = true;
                            targetIsAdmin = admin;
                        }
                    }
                    if (!found) {
                        return Refusal.NOT_FOUND;
                    }
                    return targetIsAdmin && admins == 1 ? Refusal.LAST_ADMIN_KEY : null;
                });
    }

    private static OffsetDateTime utc(Instant at) {
        return at == null ? null : at.atOffset(ZoneOffset.UTC);
    }

    private static Key key(Row row) {
        return new Key(row.getString("id"), row.getString("prefix"), row.getString("name"),
                Set.of(row.getArrayOfStrings("scopes")), InboxStore.instant(row, "created_at"),
                InboxStore.instant(row, "last_used_at"), InboxStore.instant(row, "expires_at"),
                InboxStore.instant(row, "revoked_at"),
                row.getArrayOfStrings("bot_ids") == null ? null : List.of(row.getArrayOfStrings("bot_ids")),
                row.getInteger("messages_per_minute"));
    }
}
