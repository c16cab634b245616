package io.clawfleet.shared.store;

import io.clawfleet.shared.message.OutboundReply;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** Reads of the outbox for reply delivery; replies are written by the fenced turn commit. */
public final class OutboxStore {

    private static final String COLUMNS = """
            SELECT o.id, o.tenant_id, c.bot_id, c.channel, c.chat_key, o.chat_id, o.seq, o.in_reply_to, o.text, o.created_at
            FROM outbox o JOIN chats c ON c.id = o.chat_id""";

    private final Pool pool;

    public OutboxStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Replies of a chat with {@code seq > afterSeq}, oldest first. */
    public Future<List<OutboundReply>> repliesAfter(BotRef bot, String channel, String chatKey, long afterSeq,
                                                    int limit) {
        String sql = COLUMNS + """
                 WHERE c.tenant_id = $1 AND c.bot_id = $6 AND c.channel = $2 AND c.chat_key = $3 AND o.seq > $4
                ORDER BY o.seq LIMIT $5""";
        return pool.preparedQuery(sql).execute(Tuple.of(bot.tenantId(), channel, chatKey, afterSeq, limit, bot.botId()))
                .map(OutboxStore::replies);
    }

    /** The reply to one inbox message, if it has been committed. */
    public Future<Optional<OutboundReply>> replyTo(String tenantId, long inboxId) {
        String sql = COLUMNS + " WHERE o.in_reply_to = $1 AND o.tenant_id = $2";
        return pool.preparedQuery(sql).execute(Tuple.of(inboxId, tenantId))
                .map(rows -> replies(rows).stream().findFirst());
    }

    /**
     * The reply to one inbox message with the tokens its turn used (the sums {@link UsageStore#ofMessage} reads), in one
     * statement: the turn commit writes both at once, so they are read as one.
     */
    public Future<Optional<Map.Entry<OutboundReply, UsageStore.TurnTokens>>> replyWithTokens(String tenantId, long inboxId) {
        String sql = """
                SELECT o.id, o.tenant_id, c.bot_id, c.channel, c.chat_key, o.chat_id, o.seq, o.in_reply_to, o.text, o.created_at,
                       u.input, u.output
                  FROM outbox o JOIN chats c ON c.id = o.chat_id
                 CROSS JOIN LATERAL (SELECT coalesce(sum(input_tokens), 0) AS input, coalesce(sum(output_tokens), 0) AS output
                                       FROM llm_usage WHERE inbox_id = o.in_reply_to AND tenant_id = o.tenant_id) u
                 WHERE o.in_reply_to = $1 AND o.tenant_id = $2""";
        return pool.preparedQuery(sql).execute(Tuple.of(inboxId, tenantId)).map(rows -> {
            if (rows.size() == 0) {
                return Optional.empty();
            }
            Row row = rows.iterator().next();
            return Optional.of(Map.entry(replies(rows).get(0), new UsageStore.TurnTokens(row.getLong("input"), row.getLong("output"))));
        });
    }

    /** Marks a reply delivered over a connection-bound channel (the caller got it). */
    public Future<Void> markDelivered(String replyId) {
        return pool.preparedQuery("UPDATE outbox SET status = 'delivered', delivered_at = now() WHERE id = $1 AND status = 'pending'")
                .execute(Tuple.of(replyId)).mapEmpty();
    }

    /** {@link #markDelivered} for many replies in one statement (one commit). */
    public Future<Void> markAllDelivered(List<String> replyIds) {
        return pool.preparedQuery("UPDATE outbox SET status = 'delivered', delivered_at = now() WHERE id = ANY($1) AND status = 'pending'")
                .execute(Tuple.of(replyIds.toArray(String[]::new))).mapEmpty();
    }

    /** Puts an undeliverable reply back in the delivery queue; false if there is no such reply. */
    public Future<Boolean> requeue(String replyId) {
        return pool.preparedQuery("""
                        UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
                         WHERE id = $1""")
                .execute(Tuple.of(replyId)).map(rows -> rows.rowCount() == 1);
    }

    static List<OutboundReply> replies(RowSet<Row> rows) {
        List<OutboundReply> out = new ArrayList<>(rows.size());
        for (Row row : rows) {
            out.add(new OutboundReply(row.getString("id"), new BotRef(row.getString("tenant_id"), row.getString("bot_id")),
                    row.getString("channel"),
                    row.getString("chat_key"), row.getLong("chat_id"), row.getLong("seq"),
                    row.getLong("in_reply_to") == null ? 0 : row.getLong("in_reply_to"),
                    row.getString("text"), InboxStore.instant(row, "created_at")));
        }
        return out;
    }
}
