package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Channel messages kept aside while their tenant is over a quota ({@code deferred_messages}, issue 14): stored as they
 * came, never sent to a model, until the tenant replays them into the inbox or they expire. A chat gets one notice
 * per quota period ({@code deferred_notices}), not one per message.
 */
public final class DeferredStore {

    /** How long a deferred message waits for a replay before it is dropped. */
    public static final Duration TTL = Duration.ofDays(7);

    /** One deferred message. */
    public record Deferred(long id, BotRef bot, String channel, String chatKey, String idempotencyKey, String senderId,
                           String text, String reason, Instant receivedAt) {

        public JsonObject toJson() {
            return new JsonObject().put("id", id).put("bot", bot.botId()).put("channel", channel).put("chatId", chatKey)
                    .put("senderId", senderId).put("reason", reason).put("receivedAt", receivedAt.toString())
                    .put("expiresAt", receivedAt.plus(TTL).toString());
        }
    }

    private final Pool pool;

    public DeferredStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Keeps a message aside; false when it was already kept (a poll that came again). */
    public Future<Boolean> defer(BotRef bot, String channel, String chatKey, String idempotencyKey, String senderId, String text,
                                 String reason) {
        return pool.preparedQuery("""
                        INSERT INTO deferred_messages (tenant_id, bot_id, channel, chat_key, idempotency_key, sender_id, text, reason)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), channel, chatKey, idempotencyKey, senderId, PgText.clean(text), reason))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Whether the chat is to be told now: true the first time in the quota period that ends at {@code periodEnd}. */
    public Future<Boolean> noticeOnce(BotRef bot, String channel, String chatKey, Instant periodEnd) {
        return pool.preparedQuery("""
                        INSERT INTO deferred_notices (tenant_id, bot_id, channel, chat_key, period_end)
                        VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), channel, chatKey, OffsetDateTime.ofInstant(periodEnd, ZoneOffset.UTC)))
                .map(rows -> rows.rowCount() == 1);
    }

    /** The bot's deferred messages, oldest first, after id {@code afterId}, at most {@code limit}. */
    public Future<List<Deferred>> list(BotRef bot, long afterId, int limit) {
        return pool.preparedQuery("""
                        SELECT id, channel, chat_key, idempotency_key, sender_id, text, reason, received_at FROM deferred_messages
                         WHERE tenant_id = $1 AND bot_id = $2 AND id > $3 ORDER BY id LIMIT $4""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), afterId, limit))
                .map(rows -> {
                    List<Deferred> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new Deferred(row.getLong("id"), bot, row.getString("channel"), row.getString("chat_key"),
                                row.getString("idempotency_key"), row.getString("sender_id"), row.getString("text"),
                                row.getString("reason"), InboxStore.instant(row, "received_at")));
                    }
                    return out;
                });
    }

    /** How many messages the bot has deferred. */
    public Future<Long> count(BotRef bot) {
        return pool.preparedQuery("SELECT count(*) FROM deferred_messages WHERE tenant_id = $1 AND bot_id = $2")
                .execute(Tuple.of(bot.tenantId(), bot.botId())).map(rows -> rows.iterator().next().getLong(0));
    }

    /** Removes one replayed message (it is in the inbox now). */
    public Future<Void> remove(BotRef bot, long id) {
        return pool.preparedQuery("DELETE FROM deferred_messages WHERE tenant_id = $1 AND bot_id = $2 AND id = $3")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), id)).mapEmpty();
    }

    /** Drops messages older than {@link #TTL} and notices of periods that ended; returns the messages dropped. */
    public Future<Integer> dropExpired(Instant now) {
        OffsetDateTime cutoff = OffsetDateTime.ofInstant(now.minus(TTL), ZoneOffset.UTC);
        return pool.preparedQuery("DELETE FROM deferred_messages WHERE received_at < $1").execute(Tuple.of(cutoff))
                .compose(dropped -> pool.preparedQuery("DELETE FROM deferred_notices WHERE period_end < $1")
                        .execute(Tuple.of(OffsetDateTime.ofInstant(now, ZoneOffset.UTC)))
                        .map(v -> dropped.rowCount()));
    }
}
