package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a web chat user sees of their chat: their own messages (the inbox) and the bot's replies (the outbox), each
 * with its position in the chat, for the history on a fresh page and the catch-up after a reconnect.
 */
public final class WebChatStore {

    /**
     * One entry of a chat's history.
     *
     * @param role     {@code user} or {@code assistant}
     * @param seq      the message's position among the user's messages, or the reply's among the replies
     * @param clientId the id the widget gave the user's message, or, for a reply, that of the message it answers (null
     *                 for a reply to a scheduled task)
     */
    public record Entry(String role, long seq, String text, String clientId, OffsetDateTime at) {
    }

    /** Idempotency keys of web chat messages are the widget's message ids behind this prefix. */
    public static final String CLIENT_PREFIX = "c";

    private final Pool pool;

    public WebChatStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * The newest {@code limit} entries of a chat with a user message's seq above {@code afterUser} or a reply's above
     * {@code afterReply}, oldest first. Both kinds are read by the chat's own unique (chat, seq) indexes.
     */
    public Future<List<Entry>> history(BotRef bot, String channel, String chatKey, long afterUser, long afterReply, int limit) {
        return pool.preparedQuery("""
                        WITH c AS (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $2 AND channel = $3 AND chat_key = $4)
                        SELECT * FROM (
                          SELECT 'user' AS role, i.seq, i.text, substr(i.idempotency_key, 2) AS client_id, i.received_at AS at
                            FROM inbox i, c WHERE i.chat_id = c.id AND i.kind = 'user' AND i.seq > $5
                          UNION ALL
                          SELECT 'assistant', o.seq, o.text, substr(r.idempotency_key, 2), o.created_at
                            FROM outbox o JOIN c ON o.chat_id = c.id LEFT JOIN inbox r ON r.id = o.in_reply_to AND r.kind = 'user'
                           WHERE o.seq > $6
                        ) h ORDER BY at DESC, role ASC LIMIT $7""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), channel, chatKey, afterUser, afterReply, limit))
                .map(rows -> {
                    List<Entry> entries = new ArrayList<>();
                    for (Row row : rows) {
                        entries.add(new Entry(row.getString("role"), row.getLong("seq"), row.getString("text"),
                                row.getString("client_id"), row.getOffsetDateTime("at")));
                    }
                    return entries.reversed();
                });
    }
}
