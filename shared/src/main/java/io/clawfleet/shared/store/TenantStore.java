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
import java.util.Objects;
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
                  RETURNING id, name, time_zone
                ), k AS (
                  INSERT INTO api_keys (key_hash, tenant_id) SELECT $3, id FROM t
                  ON CONFLICT (key_hash) DO NOTHING
                )
                SELECT id, name, time_zone FROM t""";
        return pool.preparedQuery(sql).execute(Tuple.of(tenantId, name, hashKey(apiKey)))
                .map(rows -> tenant(rows.iterator().next()));
    }

    /** The tenant a (not revoked) API key belongs to. */
    public Future<Optional<Tenant>> findByKey(String apiKey) {
        String sql = """
                SELECT t.id, t.name, t.time_zone FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = $1 AND k.revoked_at IS NULL""";
        return pool.preparedQuery(sql).execute(Tuple.of(hashKey(apiKey)))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(tenant(rows.iterator().next())));
    }

    /** The tenant's settings (autonomy, ...) as stored; empty object when none were set. */
    public Future<JsonObject> settings(String tenantId) {
        return pool.preparedQuery("SELECT settings FROM tenants WHERE id = $1").execute(Tuple.of(tenantId))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return new JsonObject();
                    }
                    Object raw = rows.iterator().next().getValue("settings");
                    return raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
                });
    }

    /** Merges {@code changes} into the tenant's settings; returns the result. */
    public Future<JsonObject> updateSettings(String tenantId, JsonObject changes) {
        return pool.preparedQuery("UPDATE tenants SET settings = settings || $2 WHERE id = $1 RETURNING settings")
                .execute(Tuple.of(tenantId, changes))
                .map(rows -> {
                    Object raw = rows.iterator().next().getValue("settings");
                    return raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
                });
    }

    private static Tenant tenant(Row row) {
        return new Tenant(row.getString("id"), row.getString("name"), row.getString("time_zone"));
    }
}
