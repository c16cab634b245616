package io.clawfleet.shared.store;

import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.OutboundReply;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.Objects;
import java.util.Optional;

/**
 * Chats as the agent's tools see them: roles (granted by the operator or an admin chat), registration,
 * and messages sent into a chat from a turn.
 */
public final class ChatStore {

    private final Pool pool;

    public ChatStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** A chat of a bot by channel and key, with its role. */
    public record Chat(long id, String tenantId, String botId, String channel, String chatKey, String role,
                       boolean registered) {

        public BotRef bot() {
            return new BotRef(tenantId, botId);
        }
    }

    /** A chat as a list of a bot's chats shows it. */
    public record Listed(String channel, String chatKey, String displayName, long messages, java.time.Instant lastMessageAt) {
    }

    /** One line of a chat's history: what a user said or the bot answered (tool steps left out). */
    public record Line(String role, String senderId, String text, java.time.Instant at) {
    }

    /** A bot's chats, the most recently active first, at most {@code limit}; {@code before} pages on (null: from the newest). */
    public Future<java.util.List<Listed>> list(BotRef bot, int limit, java.time.Instant before) {
        return pool.preparedQuery("""
                        SELECT channel, chat_key, display_name, in_seq, last_message_at FROM chats
                         WHERE tenant_id = $1 AND bot_id = $2 AND ($3::timestamptz IS NULL OR last_message_at < $3)
                         ORDER BY last_message_at DESC, id DESC LIMIT $4""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(),
                        before == null ? null : java.time.OffsetDateTime.ofInstant(before, java.time.ZoneOffset.UTC), limit))
                .map(rows -> {
                    java.util.List<Listed> chats = new java.util.ArrayList<>();
                    for (Row row : rows) {
                        chats.add(new Listed(row.getString(0), row.getString(1), row.getString(2), row.getLong(3),
                                row.getOffsetDateTime(4).toInstant()));
                    }
                    return chats;
                });
    }

    // The chat is looked up first (one row at most: chats_identity), so the plan reads that chat's messages through
    // messages_chat. As a join, the generic plan walked messages_pkey backwards over the whole table for a chat whose
    // lines are old or few (ChatReadPlanTest).
    static final String HISTORY = """
            SELECT role, sender_id, content, created_at FROM (
              SELECT m.id, m.role, m.sender_id, m.content, m.created_at FROM messages m
               WHERE m.chat_id = (SELECT c.id FROM chats c
                                   WHERE c.tenant_id = $1 AND c.bot_id = $2 AND c.channel = $3 AND c.chat_key = $4)
                 AND m.tenant_id = $1 AND m.role IN ('user', 'assistant') AND m.content IS NOT NULL
                 AND m.content <> ''
               ORDER BY m.id DESC LIMIT $5) last ORDER BY id""";

    /** The last {@code limit} user and assistant lines of a chat of the bot, oldest first; empty when no such chat. */
    public Future<java.util.List<Line>> history(BotRef bot, String channel, String chatKey, int limit) {
        return pool.preparedQuery(HISTORY)
                .execute(Tuple.of(bot.tenantId(), bot.botId(), channel, chatKey, limit))
                .map(rows -> {
                    java.util.List<Line> lines = new java.util.ArrayList<>();
                    for (Row row : rows) {
                        lines.add(new Line(row.getString(0), row.getString(1), row.getString(2), row.getOffsetDateTime(3).toInstant()));
                    }
                    return lines;
                });
    }

    public Future<Optional<Chat>> find(BotRef bot, String channel, String chatKey) {
        return pool.preparedQuery("SELECT id, tenant_id, bot_id, channel, chat_key, role, registered FROM chats "
                        + "WHERE tenant_id = $1 AND bot_id = $4 AND channel = $2 AND chat_key = $3")
                .execute(Tuple.of(bot.tenantId(), channel, chatKey, bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(chat(rows.iterator().next())));
    }

    /**
     * Whether a sender acts as admin in a chat now: the chat has the admin role and either names its
     * admin senders and this is one of them, or names none and is one person's chat. A group chat
     * ({@link Channels#isGroup}) with the admin role and no senders named makes nobody admin.
     */
    public Future<Boolean> isAdmin(long chatId, String senderId) {
        return pool.preparedQuery("""
                        SELECT c.channel, c.chat_key, c.role = 'admin' AS admin,
                               EXISTS (SELECT 1 FROM chat_admins a WHERE a.chat_id = c.id AND a.sender_id = $2) AS named,
                               EXISTS (SELECT 1 FROM chat_admins a WHERE a.chat_id = c.id) AS any_named
                          FROM chats c WHERE c.id = $1""")
                .execute(Tuple.of(chatId, senderId))
                .map(rows -> {
                    if (rows.size() != 1) {
                        return false;
                    }
                    Row row = rows.iterator().next();
                    if (!row.getBoolean("admin")) {
                        return false;
                    }
                    return row.getBoolean("any_named") ? row.getBoolean("named")
                            : !Channels.isGroup(row.getString("channel"), row.getString("chat_key"));
                });
    }

    /** {@link #setRole(String, String, String, String, java.util.List)} naming no senders. */
    public Future<Boolean> setRole(BotRef bot, String channel, String chatKey, String role) {
        return setRole(bot, channel, chatKey, role, java.util.List.of());
    }

    /**
     * Sets a chat's role and, for the admin role, the senders who act as admins in it (none: every
     * sender of a one-person chat). The chat's earlier admin senders are replaced. False when the
     * bot has no such chat.
     */
    public Future<Boolean> setRole(BotRef bot, String channel, String chatKey, String role,
                                   java.util.List<String> senders) {
        return pool.preparedQuery("""
                        WITH c AS (
                          UPDATE chats SET role = $4, registered = true
                           WHERE tenant_id = $1 AND bot_id = $6 AND channel = $2 AND chat_key = $3 RETURNING id, tenant_id
                        ), cleared AS (
                          -- those kept are not deleted: a row deleted and inserted again in one statement would be lost
                          DELETE FROM chat_admins a USING c
                           WHERE a.chat_id = c.id AND ($4 <> 'admin' OR NOT a.sender_id = ANY ($5::text[]))
                        ), named AS (
                          INSERT INTO chat_admins (chat_id, tenant_id, sender_id)
                          SELECT c.id, c.tenant_id, s FROM c, unnest($5::text[]) AS s WHERE $4 = 'admin'
                          ON CONFLICT (chat_id, sender_id) DO NOTHING
                        )
                        SELECT count(*) AS n FROM c""")
                .execute(Tuple.of(bot.tenantId(), channel, chatKey, role, senders.toArray(String[]::new), bot.botId()))
                .map(rows -> rows.iterator().next().getLong("n") == 1);
    }

    public Future<Void> register(long chatId) {
        return pool.preparedQuery("UPDATE chats SET registered = true WHERE id = $1").execute(Tuple.of(chatId)).mapEmpty();
    }

    /** The skills switched off in a chat (skills_disable), by name. */
    public Future<java.util.Set<String>> disabledSkills(long chatId) {
        return pool.preparedQuery("SELECT disabled_skills FROM conversation_state WHERE chat_id = $1")
                .execute(Tuple.of(chatId))
                .map(rows -> {
                    java.util.Set<String> out = new java.util.TreeSet<>();
                    if (rows.size() == 1) {
                        Object raw = rows.iterator().next().getValue("disabled_skills");
                        io.vertx.core.json.JsonArray names = raw instanceof io.vertx.core.json.JsonArray array ? array
                                : new io.vertx.core.json.JsonArray(String.valueOf(raw));
                        names.forEach(name -> out.add(String.valueOf(name)));
                    }
                    return out;
                });
    }

    /** Switches a skill off or on again in one chat; idempotent, so a replayed call changes nothing more. */
    public Future<Void> setSkillDisabled(long chatId, String tenantId, String skill, boolean disabled) {
        return pool.preparedQuery("""
                        INSERT INTO conversation_state AS s (chat_id, tenant_id, disabled_skills)
                        VALUES ($1, $2, CASE WHEN $4 THEN jsonb_build_array($3::text) ELSE '[]'::jsonb END)
                        ON CONFLICT (chat_id) DO UPDATE SET updated_at = now(), disabled_skills =
                          CASE WHEN NOT $4 THEN s.disabled_skills - $3::text
                               WHEN s.disabled_skills ? $3::text THEN s.disabled_skills
                               ELSE s.disabled_skills || jsonb_build_array($3::text) END""")
                .execute(Tuple.of(chatId, tenantId, skill, disabled)).mapEmpty();
    }

    /**
     * Puts a message from the bot into a chat (its history and its outbox) under a deterministic
     * id: sending again with the same id (a re-run turn) changes nothing and returns empty.
     */
    public Future<Optional<OutboundReply>> send(Chat target, String messageId, String text) {
        return pool.preparedQuery("""
                        WITH st AS (
                          INSERT INTO conversation_state AS s (chat_id, tenant_id, reply_seq) VALUES ($1, $2, 1)
                          ON CONFLICT (chat_id) DO UPDATE SET reply_seq = s.reply_seq + 1, updated_at = now()
                          WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE id = $3)
                          RETURNING reply_seq
                        ), hist AS (
                          INSERT INTO messages (tenant_id, chat_id, role, content) SELECT $2, $1, 'assistant', $4 FROM st
                        )
                        INSERT INTO outbox (id, tenant_id, chat_id, seq, text, push, next_attempt_at)
                        SELECT $3, $2, $1, st.reply_seq, $4, $5, now() FROM st
                        ON CONFLICT (id) DO NOTHING
                        RETURNING seq, created_at""")
                .execute(Tuple.of(target.id(), target.tenantId(), messageId, text, Channels.isPush(target.channel())))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(new OutboundReply(messageId, target.bot(),
                        target.channel(), target.chatKey(), target.id(), rows.iterator().next().getLong("seq"), 0, text,
                        rows.iterator().next().getOffsetDateTime("created_at").toInstant())));
    }

    private static Chat chat(Row row) {
        return new Chat(row.getLong("id"), row.getString("tenant_id"), row.getString("bot_id"), row.getString("channel"),
                row.getString("chat_key"), row.getString("role"), row.getBoolean("registered"));
    }
}
