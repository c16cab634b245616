package io.clawfleet.shared.store;

import io.clawfleet.shared.security.TenantKeys;
import io.clawfleet.shared.workspace.RemoteMcpServers;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * The remote MCP servers a tenant gives its bots ({@code bot_mcp_servers}, issue 16). Their headers are sealed with
 * the tenant's data key ({@link TenantKeys}) for this bot alone, before they leave the JVM; the rest is stored in the
 * clear with each header's hint, as {@link BotProviderStore} does with provider keys.
 */
public final class BotMcpServerStore {

    /** A bot's servers as stored, and the version a change replaced. */
    public record Stored(RemoteMcpServers servers, long version) {
    }

    private final Pool pool;
    private final TenantKeys keys;

    public BotMcpServerStore(Pool pool, TenantKeys keys) {
        this.pool = Objects.requireNonNull(pool);
        this.keys = Objects.requireNonNull(keys);
    }

    /** The purpose a bot's headers are sealed for: sealed headers copied to another bot or tenant do not open. */
    static String purpose(String botId) {
        return "bot_mcp_servers.secrets/" + botId;
    }

    /**
     * The bot's servers with their headers opened; empty when it has none.
     *
     * @throws io.clawfleet.shared.security.SecretException (as the failure) when the headers do not open
     */
    public Future<Optional<Stored>> get(BotRef bot) {
        return pool.preparedQuery("""
                        SELECT s.config, s.secrets_enc, s.secrets_key_id, s.version, k.wrapped_key, k.master_key_id
                          FROM bot_mcp_servers s
                          LEFT JOIN tenant_data_keys k ON k.tenant_id = s.tenant_id AND k.key_id = s.secrets_key_id
                         WHERE s.tenant_id = $1 AND s.bot_id = $2""")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(stored(bot, rows.iterator().next())));
    }

    /**
     * Replaces the bot's servers with what {@code change} makes of the current ones (null when it has none), sealing
     * the headers; fails with {@link BotProviderStore.Conflict} when another change landed in between.
     */
    public Future<Stored> put(BotRef bot, Function<RemoteMcpServers, RemoteMcpServers> change) {
        return get(bot).compose(current -> {
            RemoteMcpServers next = change.apply(current.map(Stored::servers).orElse(null));
            long expected = current.map(Stored::version).orElse(0L);
            JsonObject secrets = next.secrets();
            Future<TenantKeys.DataKey> dataKey = secrets.isEmpty() ? Future.succeededFuture(null) : keys.current(bot.tenantId());
            return dataKey.compose(key -> pool.preparedQuery("""
                            INSERT INTO bot_mcp_servers AS s (tenant_id, bot_id, config, secrets_enc, secrets_key_id)
                            VALUES ($1, $2, $3, $4, $5)
                            ON CONFLICT (tenant_id, bot_id) DO UPDATE
                               SET config = EXCLUDED.config, secrets_enc = EXCLUDED.secrets_enc,
                                   secrets_key_id = EXCLUDED.secrets_key_id, version = s.version + 1, updated_at = now()
                             WHERE s.version = $6
                            RETURNING version""")
                    .execute(Tuple.of(bot.tenantId(), bot.botId(), next.config(),
                            key == null ? null : Buffer.buffer(keys.seal(key, purpose(bot.botId()), secrets.encode())),
                            key == null ? null : key.keyId(), expected))
                    .map(rows -> {
                        if (rows.size() == 0) {
                            throw new BotProviderStore.Conflict("the bot's MCP servers were changed by another request at the "
                                    + "same time; read them again and retry");
                        }
                        return new Stored(next, rows.iterator().next().getLong("version"));
                    }));
        });
    }

    /** Removes the bot's remote servers; false when it had none. */
    public Future<Boolean> delete(BotRef bot) {
        return pool.preparedQuery("DELETE FROM bot_mcp_servers WHERE tenant_id = $1 AND bot_id = $2")
                .execute(Tuple.of(bot.tenantId(), bot.botId()))
                .map(rows -> rows.rowCount() == 1);
    }

    private Stored stored(BotRef bot, Row row) {
        JsonObject opened = null;
        Buffer sealed = row.getBuffer("secrets_enc");
        if (sealed != null) {
            Buffer wrapped = row.getBuffer("wrapped_key");
            opened = new JsonObject(keys.open(bot.tenantId(), purpose(bot.botId()), row.getInteger("secrets_key_id"),
                    wrapped == null ? null : wrapped.getBytes(), row.getString("master_key_id"), sealed.getBytes()));
        }
        return new Stored(RemoteMcpServers.stored((JsonObject) row.getValue("config"), opened), row.getLong("version"));
    }
}
