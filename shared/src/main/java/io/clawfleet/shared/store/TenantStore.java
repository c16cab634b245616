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
                  RETURNING id, name
                ), k AS (
                  INSERT INTO api_keys (key_hash, tenant_id) SELECT $3, id FROM t
                  ON CONFLICT (key_hash) DO NOTHING
                )
                SELECT id, name FROM t""";
        return pool.preparedQuery(sql).execute(Tuple.of(tenantId, name, hashKey(apiKey)))
                .map(rows -> tenant(rows.iterator().next()));
    }

    /**
     * Who acts with an API key: its tenant, the key's id and its name. The id is the start of the key's
     * SHA-256 digest: enough to tell keys apart in the audit trail, useless for guessing the key.
     */
    public record KeyOwner(Tenant tenant, String keyId, String keyName) {
    }

    /** Hex digits of a key's digest that make its id in the audit trail. */
    public static final int KEY_ID_LENGTH = 12;

    /** The owner of a (not revoked) API key. */
    public Future<Optional<KeyOwner>> findKeyOwner(String apiKey) {
        String hash = hashKey(apiKey);
        String sql = """
                SELECT t.id, t.name, k.name AS key_name FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
                WHERE k.key_hash = $1 AND k.revoked_at IS NULL""";
        return pool.preparedQuery(sql).execute(Tuple.of(hash)).map(rows -> {
            if (rows.size() == 0) {
                return Optional.empty();
            }
            Row row = rows.iterator().next();
            return Optional.of(new KeyOwner(tenant(row), hash.substring(0, KEY_ID_LENGTH), row.getString("key_name")));
        });
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
     * A tenant's own settings as stored.
     *
     * @param values   the JSON settings (autonomy, memory scope, ...); empty when none were set
     * @param timeZone the tenant's IANA time zone, the default of its cron tasks
     */
    public record Settings(JsonObject values, String timeZone) {
    }

    /** The tenant's settings (autonomy, ...) as stored; empty object when none were set. */
    public Future<JsonObject> settings(String tenantId) {
        return settingsAndZone(tenantId).map(Settings::values);
    }

    /** The tenant's settings and time zone; empty settings in UTC when the tenant is unknown. */
    public Future<Settings> settingsAndZone(String tenantId) {
        return pool.preparedQuery("SELECT settings, time_zone FROM tenants WHERE id = $1").execute(Tuple.of(tenantId))
                .map(rows -> rows.size() == 0 ? new Settings(new JsonObject(), "UTC") : settings(rows.iterator().next()));
    }

    /**
     * Merges {@code changes} into the tenant's settings and, unless {@code timeZone} is null, sets its
     * time zone, in one statement; returns the result. The zone must be checked (a canonical IANA id).
     */
    public Future<Settings> updateSettings(String tenantId, JsonObject changes, String timeZone) {
        String sql = """
                UPDATE tenants SET settings = settings || $2, time_zone = coalesce($3, time_zone)
                 WHERE id = $1 RETURNING settings, time_zone""";
        return pool.preparedQuery(sql).execute(Tuple.of(tenantId, changes, timeZone))
                .map(rows -> settings(rows.iterator().next()));
    }

    private static Settings settings(Row row) {
        Object raw = row.getValue("settings");
        JsonObject values = raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
        return new Settings(values, row.getString("time_zone"));
    }

    private static Tenant tenant(Row row) {
        return new Tenant(row.getString("id"), row.getString("name"));
    }
}
