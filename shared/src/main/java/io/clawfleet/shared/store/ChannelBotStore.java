package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Push-channel bots, and the lease under which exactly one gateway polls each for updates. The
 * update offset only moves forward, and only by the lease holder, after the updates are in the inbox.
 */
public final class ChannelBotStore {

    private static final String COLUMNS = "SELECT id, tenant_id, channel, name, token, api_url, enabled, update_offset FROM channel_bots";

    private final Pool pool;

    public ChannelBotStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Registers a bot, or returns the one already registered with this token for this tenant. */
    public Future<ChannelBot> register(String tenantId, String channel, String name, String token, String apiUrl) {
        return pool.preparedQuery("""
                        INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url)
                        VALUES ($1, $2, $3, $4, $5, $6)
                        ON CONFLICT (token_hash) DO UPDATE SET name = EXCLUDED.name, api_url = EXCLUDED.api_url, enabled = true
                          WHERE channel_bots.tenant_id = EXCLUDED.tenant_id
                        RETURNING id, tenant_id, channel, name, token, api_url, enabled, update_offset""")
                .execute(Tuple.of(tenantId, channel, name, token, TenantStore.hashKey(token), apiUrl))
                .map(rows -> {
                    if (rows.size() == 0) {
                        throw new IllegalArgumentException("this bot token is registered by another tenant");
                    }
                    return bot(rows.iterator().next());
                });
    }

    public Future<List<ChannelBot>> list(String tenantId) {
        return pool.preparedQuery(COLUMNS + " WHERE tenant_id = $1 ORDER BY id").execute(Tuple.of(tenantId))
                .map(ChannelBotStore::bots);
    }

    public Future<Optional<ChannelBot>> get(long id) {
        return pool.preparedQuery(COLUMNS + " WHERE id = $1").execute(Tuple.of(id))
                .map(rows -> bots(rows).stream().findFirst());
    }

    /** Removes a tenant's bot; false if it has no such bot. */
    public Future<Boolean> delete(String tenantId, long id) {
        return pool.preparedQuery("DELETE FROM channel_bots WHERE tenant_id = $1 AND id = $2").execute(Tuple.of(tenantId, id))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * Takes (or keeps) the polling lease of every enabled bot nobody else holds, up to {@code limit}.
     *
     * @return the bots this node should poll now
     */
    public Future<List<ChannelBot>> claimPolling(String nodeId, long leaseMs, int limit) {
        return pool.preparedQuery("""
                        WITH free AS (
                          SELECT id FROM channel_bots
                           WHERE enabled AND (poller_until < now() OR poller_node = $1)
                             -- a suspended tenant's bots are not polled: the platform keeps their updates
                             AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = channel_bots.tenant_id AND t.status = 'active')
                           ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
                        )
                        UPDATE channel_bots b SET poller_node = $1, poller_until = now() + $2 * interval '1 millisecond'
                          FROM free WHERE b.id = free.id
                        RETURNING b.id, b.tenant_id, b.channel, b.name, b.token, b.api_url, b.enabled, b.update_offset""")
                .execute(Tuple.of(nodeId, leaseMs, limit)).map(ChannelBotStore::bots);
    }

    /**
     * Records that updates below {@code offset} are in the inbox, and renews the polling lease.
     *
     * @return false when this node no longer holds the lease (another gateway polls the bot now, or the bot's
     *         tenant was suspended: polling stops, and the updates not recorded are fetched again on resume)
     */
    public Future<Boolean> advance(long botId, String nodeId, long offset, long leaseMs) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET update_offset = GREATEST(update_offset, $3),
                               poller_until = now() + $4 * interval '1 millisecond'
                         WHERE id = $1 AND poller_node = $2 AND enabled
                           AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = channel_bots.tenant_id AND t.status = 'active')""")
                .execute(Tuple.of(botId, nodeId, offset, leaseMs)).map(rows -> rows.rowCount() == 1);
    }

    /** Lets the polling lease go (on shutdown), so another gateway takes over at once. */
    public Future<Void> release(long botId, String nodeId) {
        return pool.preparedQuery("UPDATE channel_bots SET poller_until = '-infinity' WHERE id = $1 AND poller_node = $2")
                .execute(Tuple.of(botId, nodeId)).mapEmpty();
    }

    private static List<ChannelBot> bots(RowSet<Row> rows) {
        List<ChannelBot> out = new ArrayList<>(rows.size());
        rows.forEach(row -> out.add(bot(row)));
        return out;
    }

    private static ChannelBot bot(Row row) {
        return new ChannelBot(row.getLong("id"), row.getString("tenant_id"), row.getString("channel"), row.getString("name"),
                row.getString("token"), row.getString("api_url"), row.getBoolean("enabled"), row.getLong("update_offset"));
    }
}
