package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.Optional;

/** Tenants and their API keys. Keys are kept only as SHA-256 digests. */
public final class TenantStore {

    private final Pool pool;

    public TenantStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public static String hashKey(String apiKey) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(apiKey.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    /** Creates the tenant if missing and makes {@code apiKey} one of its keys. Idempotent. */
    public Future<Tenant> ensure(String tenantId, String name, String apiKey) {
        String sql = """
                WITH t AS (
                  INSERT INTO tenants (id, name) VALUES ($1, $2)
                  ON CONFLICT (id) DO UPDATE SET name = tenants.name
                  RETURNING id, name
                ), k AS (
                  INSERT INTO api_keys (key_hash, tenant_id, id, prefix) SELECT $3, id, 'k' || substr($3, 1, 15), '(configured)' FROM t
                  ON CONFLICT (key_hash) DO NOTHING
                )
                SELECT id, name FROM t""";
        return pool.preparedQuery(sql).execute(Tuple.of(tenantId, name, hashKey(apiKey)))
                .map(rows -> tenant(rows.iterator().next()));
    }

    /**
     * Who acts with an API key, and what it may do: its tenant (and the tenant's status), the key's
     * public id and name, its scopes ({@code chat}, {@code read}, {@code admin}) and its expiry.
     *
     * @param expiresAt null when the key does not expire
     * @param botIds    the bots the key is limited to; null when it reaches every bot of the tenant
     * @param messagesPerMinute the tenant's limit {@code messagesPerMinute}; null when it has none
     * @param keyMessagesPerMinute the key's own {@code messagesPerMinute}; null when it has none
     * @param botRates the {@code messagesPerMinute} setting of each of the tenant's bots that has one (most have none)
     */
    public record KeyOwner(Tenant tenant, String keyId, String keyName, Set<String> scopes, String status,
                           Instant expiresAt, Set<String> botIds, Integer messagesPerMinute, Integer keyMessagesPerMinute,
                           Map<String, Integer> botRates) {

        public KeyOwner(Tenant tenant, String keyId, String keyName, Set<String> scopes, String status, Instant expiresAt,
                        Set<String> botIds) {
            this(tenant, keyId, keyName, scopes, status, expiresAt, botIds, null);
        }

        public KeyOwner(Tenant tenant, String keyId, String keyName, Set<String> scopes, String status, Instant expiresAt,
                        Set<String> botIds, Integer messagesPerMinute) {
            this(tenant, keyId, keyName, scopes, status, expiresAt, botIds, messagesPerMinute, null, Map.of());
        }

        public KeyOwner {
            scopes = Set.copyOf(scopes);
            botIds = botIds == null ? null : Set.copyOf(botIds);
            botRates = botRates == null ? Map.of() : Map.copyOf(botRates);
        }

        /** The bot's own {@code messagesPerMinute}; null when it has none. */
        public Integer botMessagesPerMinute(String botId) {
            return botRates.get(botId);
        }

        /** A key for all the tenant's bots, or this one among those it is limited to. */
        public boolean reaches(String botId) {
            return botIds == null || botIds.contains(botId);
        }

        /** The tenant is suspended: its keys are refused until it is resumed. */
        public boolean suspended() {
            return "suspended".equals(status);
        }

        /** The tenant is being deleted: its keys are refused for good. */
        public boolean deleting() {
            return "deleting".equals(status);
        }

        public boolean expired(Instant now) {
            return expiresAt != null && !expiresAt.isAfter(now);
        }
    }

    /**
     * The owner of a key that is not revoked (expired ones included: the caller says why it refuses).
     * One indexed statement, which also records that the key was used: the gateway asks only when its
     * cache has no answer, so last use is exact to the cache's lifetime, at no cost per request. It also reads the
     * message rates of the key and of the tenant's bots (a partial index finds only the bots that have one), so the
     * gateway checks them with no read of their own.
     */
    public Future<Optional<KeyOwner>> findKeyOwner(String apiKey) {
        String sql = """
                UPDATE api_keys k SET last_used_at = now()
                  FROM tenants t
                 WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND t.id = k.tenant_id
                RETURNING t.id, t.name, t.status, k.id AS key_id, k.name AS key_name, k.scopes, k.expires_at, k.bot_ids,
                          (t.limits ->> 'messagesPerMinute')::int AS messages_per_minute,
                          k.messages_per_minute AS key_messages_per_minute,
                          (SELECT jsonb_object_agg(b.id, b.settings -> 'messagesPerMinute') FROM bots b
                            WHERE b.tenant_id = t.id AND b.settings ? 'messagesPerMinute') AS bot_rates""";
        return pool.preparedQuery(sql).execute(Tuple.of(hashKey(apiKey))).map(rows -> {
            if (rows.size() == 0) {
                return Optional.empty();
            }
            Row row = rows.iterator().next();
            return Optional.of(new KeyOwner(tenant(row), row.getString("key_id"), row.getString("key_name"),
                    Set.of(row.getArrayOfStrings("scopes")), row.getString("status"),
                    InboxStore.instant(row, "expires_at"),
                    row.getArrayOfStrings("bot_ids") == null ? null : Set.of(row.getArrayOfStrings("bot_ids")),
                    row.getInteger("messages_per_minute"), row.getInteger("key_messages_per_minute"),
                    botRates(row.getValue("bot_rates"))));
        });
    }

    /** The bots' rates as read ({@code {"support": 2}}); a JSON null (a setting unset) counts as none. */
    private static Map<String, Integer> botRates(Object raw) {
        if (raw == null) {
            return Map.of();
        }
        JsonObject rates = raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
        Map<String, Integer> out = new HashMap<>();
        rates.forEach(entry -> {
            if (entry.getValue() instanceof Number rate) {
                out.put(entry.getKey(), rate.intValue());
            }
        });
        return out;
    }

    /** The tenant a (not revoked) API key belongs to. */
    public Future<Optional<Tenant>> findByKey(String apiKey) {
        String sql = """
                SELECT t.id, t.name FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = $1 AND k.revoked_at IS NULL""";
        return pool.preparedQuery(sql).execute(Tuple.of(hashKey(apiKey)))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(tenant(rows.iterator().next())));
    }

    /**
     * A tenant as the operator sees it.
     *
     * @param keys the tenant's keys that are not revoked
     */
    /** @param operatorModels whether the tenant's bots without providers of their own may use the operator's */
    public record Account(String id, String name, String status, String timeZone, Instant createdAt, Instant updatedAt,
                          long keys, JsonObject limits, boolean operatorModels) {

        public JsonObject toJson() {
            return new JsonObject().put("id", id).put("name", name).put("status", status).put("timeZone", timeZone)
                    .put("createdAt", createdAt.toString()).put("updatedAt", updatedAt.toString()).put("keys", keys)
                    .put("limits", limits.copy()).put("operatorModels", operatorModels);
        }
    }

    /** A tenant created with its first key, whose secret exists only in this answer. */
    public record Created(Account tenant, ApiKeys.Generated key) {
    }

    private static final String ACCOUNT = """
            SELECT t.id, t.name, t.status, t.time_zone, t.created_at, t.updated_at, t.limits, t.operator_models,
                   (SELECT count(*) FROM api_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL) AS keys
              FROM tenants t""";

    /**
     * Creates a tenant and its first key (scope admin) in one transaction; empty when the id is taken.
     * The key's secret is returned once and stored only as its hash.
     */
    public Future<Optional<Created>> create(String tenantId, String name) {
        return create(tenantId, name, new JsonObject());
    }

    /** {@link #create(String, String)} with the tenant's limits ({@link TenantLimits#parse}; nulls are dropped). */
    public Future<Optional<Created>> create(String tenantId, String name, JsonObject limits) {
        ApiKeys.Generated key = ApiKeys.generate();
        String sql = """
                WITH t AS (
                  INSERT INTO tenants (id, name, limits) VALUES ($1, $2, jsonb_strip_nulls($6)) ON CONFLICT (id) DO NOTHING
                  RETURNING id
                ), k AS (
                  INSERT INTO api_keys (key_hash, tenant_id, id, prefix, name, scopes)
                  SELECT $3, id, $4, $5, 'first key', '{admin}' FROM t
                )
                SELECT count(*) AS created FROM t""";
        return pool.preparedQuery(sql).execute(Tuple.of(tenantId, name, hashKey(key.key()), key.id(), key.prefix(), limits))
                .compose(rows -> rows.iterator().next().getLong("created") == 0
                        ? Future.succeededFuture(Optional.<Created>empty())
                        : find(tenantId).map(found -> found.map(account -> new Created(account, key))));
    }

    /** One tenant, as the operator sees it. */
    public Future<Optional<Account>> find(String tenantId) {
        return pool.preparedQuery(ACCOUNT + " WHERE t.id = $1").execute(Tuple.of(tenantId))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(account(rows.iterator().next())));
    }

    /** Tenants in id order after {@code afterId} (null: from the first), at most {@code limit}. */
    public Future<List<Account>> list(String afterId, int limit) {
        return pool.preparedQuery(ACCOUNT + " WHERE t.id > $1 ORDER BY t.id LIMIT $2")
                .execute(Tuple.of(afterId == null ? "" : afterId, limit))
                .map(rows -> {
                    List<Account> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(account(row)));
                    return out;
                });
    }

    /**
     * Changes a tenant's name and/or status (null: unchanged); empty when there is no such tenant. A tenant
     * being deleted is not changed: it comes back as it is, with status {@code deleting}.
     */
    public Future<Optional<Account>> update(String tenantId, String name, String status) {
        return update(tenantId, name, status, null);
    }

    /** As {@link #update(String, String, String)}, also merging {@code limits} (a null limit unsets it; null: unchanged). */
    public Future<Optional<Account>> update(String tenantId, String name, String status, JsonObject limits) {
        return update(tenantId, name, status, limits, null);
    }

    /**
     * As {@link #update(String, String, String, JsonObject)}, also setting whether the tenant may use the operator's
     * models ({@code operatorModels}; null: unchanged).
     */
    public Future<Optional<Account>> update(String tenantId, String name, String status, JsonObject limits,
                                            Boolean operatorModels) {
        return pool.preparedQuery("""
                        UPDATE tenants SET name = coalesce($2, name), status = coalesce($3, status),
                               limits = jsonb_strip_nulls(limits || coalesce($4, '{}'::jsonb)),
                               operator_models = coalesce($5, operator_models), updated_at = now()
                         WHERE id = $1 AND status <> 'deleting'""")
                .execute(Tuple.of(tenantId, name, status, limits, operatorModels))
                .compose(rows -> find(tenantId));
    }

    private static Account account(Row row) {
        return new Account(row.getString("id"), row.getString("name"), row.getString("status"), row.getString("time_zone"),
                InboxStore.instant(row, "created_at"), InboxStore.instant(row, "updated_at"), row.getLong("keys"),
                row.getValue("limits") instanceof JsonObject limits ? limits : new JsonObject(String.valueOf(row.getValue("limits"))),
                row.getBoolean("operator_models"));
    }

    private static Tenant tenant(Row row) {
        return new Tenant(row.getString("id"), row.getString("name"));
    }
}
