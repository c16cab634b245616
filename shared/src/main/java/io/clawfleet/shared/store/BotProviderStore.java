package io.clawfleet.shared.store;

import io.clawfleet.shared.db.DatabaseFailures;
import io.clawfleet.shared.provider.BotProviders;
import io.clawfleet.shared.security.TenantKeys;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * The model providers a tenant gives its bots ({@code bot_providers}, issue 14). The API keys are sealed with the
 * tenant's data key ({@link TenantKeys}) for this bot alone, before they leave the JVM; the rest is stored in the
 * clear with each key's hint, so listing a bot's providers opens nothing.
 */
public final class BotProviderStore {

    /** A bot's own providers as stored, and the version a change must name to replace them. */
    public record Stored(BotProviders providers, long version) {
    }

    /**
     * What a bot's model calls use: its own providers when it has them, and whether the tenant may use the
     * operator's when it has none.
     */
    public record Resolved(Optional<Stored> own, boolean operatorModels) {
    }

    /** A change raced another one: the caller reads again and retries, or says so. */
    public static final class Conflict extends RuntimeException {
        public Conflict(String message) {
            super(message, null, false, false);
        }
    }

    private static final String KEY_JOIN =
            " LEFT JOIN tenant_data_keys k ON k.tenant_id = p.tenant_id AND k.key_id = p.keys_key_id";

    private final Pool pool;
    private final TenantKeys keys;

    public BotProviderStore(Pool pool, TenantKeys keys) {
        this.pool = Objects.requireNonNull(pool);
        this.keys = Objects.requireNonNull(keys);
    }

    /** The purpose a bot's keys are sealed for: sealed keys copied to another bot or tenant do not open. */
    static String purpose(String botId) {
        return "bot_providers.keys/" + botId;
    }

    /**
     * The bot's providers and the tenant's operator-models switch, in one read; opens the keys.
     *
     * @throws io.clawfleet.shared.security.SecretException (as the failure) when the keys do not open
     */
    public Future<Resolved> resolve(BotRef bot) {
        return DatabaseFailures.marked(pool.preparedQuery("""
                        SELECT t.operator_models, p.config, p.keys_enc, p.keys_key_id, p.version, k.wrapped_key, k.master_key_id
                          FROM tenants t
                          LEFT JOIN bot_providers p ON p.tenant_id = t.id AND p.bot_id = $2""" + KEY_JOIN
                        + " WHERE t.id = $1")
                .execute(Tuple.of(bot.tenantId(), bot.botId())))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return new Resolved(Optional.empty(), false);
                    }
                    Row row = rows.iterator().next();
                    return new Resolved(Optional.ofNullable(stored(bot, row)), row.getBoolean("operator_models"));
                });
    }

    /** The bot's own providers (keys opened); empty when it has none. */
    public Future<Optional<Stored>> get(BotRef bot) {
        return pool.preparedQuery("""
                        SELECT p.config, p.keys_enc, p.keys_key_id, p.version, k.wrapped_key, k.master_key_id
                          FROM bot_providers p""" + KEY_JOIN + " WHERE p.tenant_id = $1 AND p.bot_id = $2")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(stored(bot, rows.iterator().next())));
    }

    /**
     * Replaces the bot's providers with what {@code change} makes of the current ones (null when it has none), sealing
     * the keys; fails with {@link Conflict} when another change landed in between.
     */
    public Future<Stored> put(BotRef bot, Function<BotProviders, BotProviders> change) {
        return get(bot).compose(current -> {
            BotProviders next = change.apply(current.map(Stored::providers).orElse(null));
            long expected = current.map(Stored::version).orElse(0L);
            JsonObject secret = next.keys();
            Future<TenantKeys.DataKey> dataKey = secret.isEmpty() ? Future.succeededFuture(null) : keys.current(bot.tenantId());
            return dataKey.compose(key -> pool.preparedQuery("""
                            INSERT INTO bot_providers AS p (tenant_id, bot_id, config, keys_enc, keys_key_id)
                            VALUES ($1, $2, $3, $4, $5)
                            ON CONFLICT (tenant_id, bot_id) DO UPDATE
                               SET config = EXCLUDED.config, keys_enc = EXCLUDED.keys_enc, keys_key_id = EXCLUDED.keys_key_id,
                                   version = p.version + 1, updated_at = now()
                             WHERE p.version = $6
                            RETURNING version""")
                    .execute(Tuple.of(bot.tenantId(), bot.botId(), next.config(),
                            key == null ? null : Buffer.buffer(keys.seal(key, purpose(bot.botId()), secret.encode())),
                            key == null ? null : key.keyId(), expected))
                    .map(rows -> {
                        if (rows.size() == 0) {
                            throw new Conflict("the bot's providers were changed by another request at the same time; "
                                    + "read them again and retry");
                        }
                        return new Stored(next, rows.iterator().next().getLong("version"));
                    }));
        });
    }

    /** The roles of the tenant's bots that have providers of their own, by bot id; reads no key. */
    public Future<java.util.Map<String, java.util.Set<String>>> roles(String tenantId) {
        return pool.preparedQuery("""
                        SELECT bot_id, array_agg(role ORDER BY role) AS roles
                          FROM bot_providers, jsonb_object_keys(config -> 'roles') AS role
                         WHERE tenant_id = $1 GROUP BY bot_id""")
                .execute(Tuple.of(tenantId))
                .map(rows -> {
                    java.util.Map<String, java.util.Set<String>> out = new java.util.HashMap<>();
                    for (Row row : rows) {
                        out.put(row.getString("bot_id"), new java.util.LinkedHashSet<>(List.of(row.getArrayOfStrings("roles"))));
                    }
                    return out;
                });
    }

    /** Removes the bot's own providers (it uses the operator's again, where allowed); false when it had none. */
    public Future<Boolean> delete(BotRef bot) {
        return pool.preparedQuery("DELETE FROM bot_providers WHERE tenant_id = $1 AND bot_id = $2")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .map(rows -> rows.rowCount() == 1);
    }

    private Stored stored(BotRef bot, Row row) {
        JsonObject config = (JsonObject) row.getValue("config");
        if (config == null) {
            return null;
        }
        JsonObject opened = null;
        Buffer sealed = row.getBuffer("keys_enc");
        if (sealed != null) {
            Buffer wrapped = row.getBuffer("wrapped_key");
            opened = new JsonObject(keys.open(bot.tenantId(), purpose(bot.botId()), row.getInteger("keys_key_id"),
                    wrapped == null ? null : wrapped.getBytes(), row.getString("master_key_id"), sealed.getBytes()));
        }
        return new Stored(BotProviders.stored(config, opened), row.getLong("version"));
    }
}
