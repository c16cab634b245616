package io.clawfleet.shared.security;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import io.vertx.core.buffer.Buffer;

import javax.crypto.SecretKey;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Envelope encryption of tenant secrets: each tenant has a random 256-bit data key, stored in
 * {@code tenant_data_keys} wrapped (AES-256-GCM) by a master key whose id is kept next to it; a secret is sealed
 * with its tenant's data key and associated data naming the tenant, the purpose and the data key. Unwrapped data
 * keys are cached, so sealing or opening a secret costs microseconds and no round trip.
 */
public final class TenantKeys {

    /** A tenant's data key, unwrapped. */
    public record DataKey(String tenantId, int keyId, SecretKey key) {
        @Override
        public String toString() {
            return "DataKey[tenant=" + tenantId + ", keyId=" + keyId + "]";
        }
    }

    private record Unwrapped(byte[] wrapped, String masterKeyId, SecretKey key) {
    }

    private static final int CACHE_LIMIT = 100_000;

    private final Pool pool;
    private final MasterKeys masters;
    private final Map<String, Unwrapped> unwrapped = new ConcurrentHashMap<>();

    public TenantKeys(Pool pool, MasterKeys masters) {
        this.pool = Objects.requireNonNull(pool);
        this.masters = Objects.requireNonNull(masters);
    }

    public MasterKeys masters() {
        return masters;
    }

    /**
     * The data key new secrets of the tenant are sealed with; made (and stored wrapped) on first use. Not cached:
     * it is needed only when a secret is written, and a tenant deleted and made again gets a new one.
     */
    public Future<DataKey> current(String tenantId) {
        MasterKeys.MasterKey master;
        try {
            master = masters.current();
        } catch (SecretException e) {
            return Future.failedFuture(e);
        }
        byte[] raw = SecretBox.newKey();
        byte[] wrapped = wrap(master, tenantId, 1, raw);
        Arrays.fill(raw, (byte) 0);
        // Racing gateways: the first insert wins and every one reads the row that won.
        return pool.preparedQuery("""
                        INSERT INTO tenant_data_keys (tenant_id, key_id, wrapped_key, master_key_id)
                        VALUES ($1, 1, $2, $3) ON CONFLICT (tenant_id, key_id) DO NOTHING""")
                .execute(Tuple.of(tenantId, Buffer.buffer(wrapped), master.id()))
                .compose(v -> pool.preparedQuery("""
                                SELECT key_id, wrapped_key, master_key_id FROM tenant_data_keys
                                 WHERE tenant_id = $1 ORDER BY key_id DESC LIMIT 1""")
                        .execute(Tuple.of(tenantId)))
                .map(rows -> {
                    Row row = rows.iterator().next();
                    int keyId = row.getInteger("key_id");
                    DataKey key = new DataKey(tenantId, keyId,
                            unwrap(tenantId, keyId, row.getBuffer("wrapped_key").getBytes(), row.getString("master_key_id")));
                    return key;
                });
    }

    /** Seals a tenant's secret for one purpose (such as {@code channel_bots.token}). */
    public byte[] seal(DataKey key, String purpose, String secret) {
        return SecretBox.seal(key.key(), secret.getBytes(StandardCharsets.UTF_8), secretAad(key.tenantId(), purpose, key.keyId()));
    }

    /**
     * Opens a tenant's secret, given the row of its data key ({@code tenant_data_keys} joined by tenant and key id).
     *
     * @throws SecretException when it cannot be opened, naming the tenant and the master key
     */
    public String open(String tenantId, String purpose, int keyId, byte[] wrappedKey, String masterKeyId, byte[] sealed) {
        if (wrappedKey == null) {
            throw new SecretException("the data key " + keyId + " of tenant " + tenantId + " is missing");
        }
        SecretKey key = unwrap(tenantId, keyId, wrappedKey, masterKeyId);
        try {
            return new String(SecretBox.open(key, sealed, secretAad(tenantId, purpose, keyId)), StandardCharsets.UTF_8);
        } catch (SecretException e) {
            throw new SecretException("a secret (" + purpose + ") of tenant " + tenantId + " does not open with its data key: "
                    + "the row was changed or moved from another tenant or field");
        }
    }

    /** A data key, unwrapped with the master key named, from the cache when the stored bytes are the same. */
    public SecretKey unwrap(String tenantId, int keyId, byte[] wrapped, String masterKeyId) {
        String cacheKey = tenantId + '/' + keyId;
        Unwrapped hit = unwrapped.get(cacheKey);
        if (hit != null && hit.masterKeyId().equals(masterKeyId) && Arrays.equals(hit.wrapped(), wrapped)) {
            return hit.key();
        }
        MasterKeys.MasterKey master = masters.byId(masterKeyId).orElseThrow(() -> new SecretException(
                "the data key of tenant " + tenantId + " is wrapped by master key " + masterKeyId + ", which this node does "
                        + "not have (it has " + (masters.isEmpty() ? "none" : masters.ids()) + "); set CLAWFLEET_MASTER_KEY, "
                        + "CLAWFLEET_MASTER_KEY_FILE or CLAWFLEET_MASTER_KEY_PREVIOUS to it"));
        SecretKey key = unwrapWith(master, tenantId, keyId, wrapped);
        bound(unwrapped).put(cacheKey, new Unwrapped(wrapped.clone(), masterKeyId, key));
        return key;
    }

    /**
     * Checks at start that every master key the stored data keys name is here and opens them (one data key per
     * master key is unwrapped). Fails naming what is missing; reads only, never writes.
     */
    public Future<Void> verify() {
        return pool.query("""
                        SELECT DISTINCT ON (master_key_id) tenant_id, key_id, wrapped_key, master_key_id
                          FROM tenant_data_keys ORDER BY master_key_id, tenant_id, key_id""").execute()
                .compose(rows -> {
                    try {
                        for (Row row : rows) {
                            String masterKeyId = row.getString("master_key_id");
                            if (masters.isEmpty()) {
                                throw new SecretException("tenant secrets in the database are encrypted (data keys wrapped by "
                                        + "master key " + masterKeyId + ") but no master key is configured: set "
                                        + "CLAWFLEET_MASTER_KEY or CLAWFLEET_MASTER_KEY_FILE");
                            }
                            unwrap(row.getString("tenant_id"), row.getInteger("key_id"),
                                    row.getBuffer("wrapped_key").getBytes(), masterKeyId);
                        }
                        return Future.<Void>succeededFuture();
                    } catch (SecretException e) {
                        return Future.failedFuture(e);
                    }
                });
    }

    /** Wraps a raw data key under a master key, bound to its tenant, data key id and master key id. */
    public static byte[] wrap(MasterKeys.MasterKey master, String tenantId, int keyId, byte[] raw) {
        return SecretBox.seal(master.key(), raw, wrapAad(tenantId, keyId, master.id()));
    }

    /** Unwraps a data key with the given master key; a wrong key fails naming it. */
    public static SecretKey unwrapWith(MasterKeys.MasterKey master, String tenantId, int keyId, byte[] wrapped) {
        try {
            byte[] raw = SecretBox.open(master.key(), wrapped, wrapAad(tenantId, keyId, master.id()));
            SecretKey key = SecretBox.key(raw);
            Arrays.fill(raw, (byte) 0);
            return key;
        } catch (SecretException e) {
            throw new SecretException("master key " + master.id() + " cannot unwrap the data key " + keyId + " of tenant "
                    + tenantId + ": the stored key was changed or moved; nothing was decrypted");
        }
    }

    private static byte[] wrapAad(String tenantId, int keyId, String masterKeyId) {
        return SecretBox.aad("clawfleet/data-key/v1", tenantId, Integer.toString(keyId), masterKeyId);
    }

    private static byte[] secretAad(String tenantId, String purpose, int keyId) {
        return SecretBox.aad("clawfleet/secret/v1", tenantId, purpose, Integer.toString(keyId));
    }

    private static <K, V> Map<K, V> bound(Map<K, V> cache) {
        if (cache.size() >= CACHE_LIMIT) {
            cache.clear(); // rare: each entry is cheap to make again
        }
        return cache;
    }
}
