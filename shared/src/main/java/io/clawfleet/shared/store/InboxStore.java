package io.clawfleet.shared.store;

import io.clawfleet.shared.message.InboundMessage;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** The durable inbox: idempotent intake, and the reads a partition owner needs. */
public final class InboxStore {

    /** What intake did with a message. */
    public enum Outcome {
        /** Stored now. */
        CREATED,
        /** Its idempotency key was known: the earlier message is returned, nothing changed. */
        DUPLICATE,
        /** Refused: the chat already has its maximum of unanswered messages. Nothing changed. */
        BACKLOG_FULL
    }

    /**
     * A message to accept: its chat, its idempotency key in that chat, what it says, and how it is to
     * be answered.
     *
     * @param maxUnanswered refuse when the chat already has this many unanswered messages; 0 = no limit
     * @param modelRole     the model role asked for, or null for the default
     * @param contextMode   {@code group} or {@code isolated}, or null for group
     * @param apiKeyId      the id of the API key that sent the message, for usage per key; null when no key did
     *                      (a channel such as Telegram, a scheduled firing)
     * @param traceParent   the W3C {@code traceparent} of the intake's span, or null (tracing off)
     */
    public record Intake(String tenantId, String botId, String channel, String chatKey, int partition, String idempotencyKey,
                         String senderId, String kind, String text, String replyNode, int maxUnanswered, String modelRole,
                         String contextMode, String apiKeyId, String traceParent) {

        public Intake {
            botId = botId == null ? BotRef.MAIN : botId;
        }

        /** A message no API key sent. */
        public Intake(String tenantId, String botId, String channel, String chatKey, int partition, String idempotencyKey,
                      String senderId, String kind, String text, String replyNode, int maxUnanswered, String modelRole,
                      String contextMode) {
            this(tenantId, botId, channel, chatKey, partition, idempotencyKey, senderId, kind, text, replyNode, maxUnanswered,
                    modelRole, contextMode, null, null);
        }

        /** A message sent with an API key (or none), traced or not. */
        public Intake(String tenantId, String botId, String channel, String chatKey, int partition, String idempotencyKey,
                      String senderId, String kind, String text, String replyNode, int maxUnanswered, String modelRole,
                      String contextMode, String apiKeyId) {
            this(tenantId, botId, channel, chatKey, partition, idempotencyKey, senderId, kind, text, replyNode, maxUnanswered,
                    modelRole, contextMode, apiKeyId, null);
        }
    }

    /** The message as the inbox holds it after intake (null when refused). */
    public record Accepted(InboundMessage message, Outcome outcome) {

        public boolean created() {
            return outcome == Outcome.CREATED;
        }
    }

    // One round trip. The chat row is created or its in_seq bumped (the row lock orders a chat's
    // messages by commit), unless the idempotency key is already known, in which case the
    // existing row is returned and nothing changes, or the chat has $10 unanswered messages
    // already (in_seq - done_seq), in which case nothing is returned and nothing changes.
    //
    // The key lookup names the chat id through a scalar subquery rather than a join: a prepared
    // statement keeps its generic plan, and a join planned while the tables were empty (a new
    // database) scanned the whole inbox on every intake until the next ANALYZE (bench: 300
    // blocks and 2.5 ms per call).
    private static final String ACCEPT = """
            WITH existing AS (
              SELECT i.id, i.seq, i.chat_id, i.received_at FROM inbox i
              WHERE i.chat_id = (SELECT c.id FROM chats c
                                  WHERE c.tenant_id = $1 AND c.bot_id = $13 AND c.channel = $2 AND c.chat_key = $3)
                AND i.idempotency_key = $5
            ), chat AS (
              INSERT INTO chats AS c (tenant_id, bot_id, channel, chat_key, partition, in_seq) VALUES ($1, $13, $2, $3, $4, 1)
              ON CONFLICT (tenant_id, bot_id, channel, chat_key)
                DO UPDATE SET in_seq = c.in_seq + 1, last_message_at = now()
                WHERE NOT EXISTS (SELECT 1 FROM existing)
                  AND ($10 <= 0 OR c.in_seq - coalesce((SELECT s.done_seq FROM conversation_state s WHERE s.chat_id = c.id), 0) < $10)
              RETURNING id, in_seq, role = 'admin' AS admin_chat
            ), ins AS (
              INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, kind, text, reply_node, model_role,
                                 context_mode, api_key_id, trace_parent)
              SELECT $1, chat.id, $4, chat.in_seq, $5, $6, $7, $8, $9, $11, $12, $14, $15 FROM chat
              ON CONFLICT DO NOTHING
              RETURNING id, seq, chat_id, received_at
            )
            SELECT id, seq, chat_id, received_at, true AS created, (SELECT admin_chat FROM chat) AS admin_chat FROM ins
            UNION ALL
            SELECT id, seq, chat_id, received_at, false AS created, NULL::boolean AS admin_chat FROM existing""";

    // Many messages of different chats in one statement and one commit: the gateway's intake under
    // load. Per row it does what ACCEPT does. Chats are locked in key order, so two batches running
    // at once (two gateways) wait for each other instead of deadlocking. A row it cannot settle (the
    // chat's backlog is full, or a concurrent send of the same key won) returns nothing; the caller
    // settles it with ACCEPT. Rows must be of distinct chats.
    private static final String ACCEPT_MANY = """
            WITH input AS (
              SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
                                   $8::text[], $9::text[], $10::text[], $11::text[], $13::text[], $14::text[], $15::text[])
                WITH ORDINALITY AS t(tenant_id, channel, chat_key, partition, idem, sender_id, kind, text, reply_node,
                                     model_role, context_mode, bot_id, api_key_id, trace_parent, ord)
            ), existing AS (
              SELECT t.ord, i.id, i.seq, i.chat_id, i.received_at
                FROM input t
                JOIN chats c ON c.tenant_id = t.tenant_id AND c.bot_id = t.bot_id AND c.channel = t.channel
                            AND c.chat_key = t.chat_key
                JOIN inbox i ON i.chat_id = c.id AND i.idempotency_key = t.idem
            ), chat AS (
              INSERT INTO chats AS c (tenant_id, bot_id, channel, chat_key, partition, in_seq)
              SELECT t.tenant_id, t.bot_id, t.channel, t.chat_key, t.partition, 1 FROM input t
               WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.ord = t.ord)
               ORDER BY t.tenant_id, t.bot_id, t.channel, t.chat_key
              ON CONFLICT (tenant_id, bot_id, channel, chat_key)
                DO UPDATE SET in_seq = c.in_seq + 1, last_message_at = now()
                WHERE $12 <= 0 OR c.in_seq - coalesce((SELECT s.done_seq FROM conversation_state s WHERE s.chat_id = c.id), 0) < $12
              RETURNING c.id, c.in_seq, c.tenant_id, c.bot_id, c.channel, c.chat_key, c.role = 'admin' AS admin_chat
            ), placed AS (
              SELECT t.*, chat.id AS chat_id, chat.in_seq, chat.admin_chat
                FROM input t JOIN chat ON chat.tenant_id = t.tenant_id AND chat.bot_id = t.bot_id AND chat.channel = t.channel
                                      AND chat.chat_key = t.chat_key
            ), ins AS (
              INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, kind, text, reply_node, model_role,
                                 context_mode, api_key_id, trace_parent)
              SELECT tenant_id, chat_id, partition, in_seq, idem, sender_id, kind, text, reply_node, model_role, context_mode,
                     api_key_id, trace_parent
                FROM placed
              ON CONFLICT DO NOTHING
              RETURNING id, seq, chat_id, received_at
            )
            SELECT p.ord, ins.id, ins.seq, ins.chat_id, ins.received_at, true AS created, p.admin_chat
              FROM ins JOIN placed p ON p.chat_id = ins.chat_id
            UNION ALL
            SELECT ord, id, seq, chat_id, received_at, false AS created, NULL::boolean AS admin_chat FROM existing""";

    private static final String FIND_BY_KEY = """
            SELECT i.id, i.seq, i.chat_id, i.received_at, false AS created, NULL::boolean AS admin_chat FROM inbox i
            WHERE i.chat_id = (SELECT c.id FROM chats c
                                WHERE c.tenant_id = $1 AND c.bot_id = $5 AND c.channel = $2 AND c.chat_key = $3)
              AND i.idempotency_key = $4""";

    private static final String COLUMNS = """
            SELECT i.id, i.tenant_id, c.bot_id, c.channel, c.chat_key, i.chat_id, i.partition, i.seq, i.sender_id, i.text,
                   i.kind, i.received_at, i.reply_node, i.model_role, i.context_mode, i.trace_parent,
                   c.role = 'admin' AS admin_chat
            FROM inbox i JOIN chats c ON c.id = i.chat_id""";

    private final Pool pool;

    public InboxStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Accepts a message without a backlog limit; see {@link #accept(String, String, String, int, String, String, String, String, String, int)}. */
    public Future<Accepted> accept(String tenantId, String channel, String chatKey, int partition,
                                   String idempotencyKey, String senderId, String kind, String text,
                                   String replyNode) {
        return accept(tenantId, channel, chatKey, partition, idempotencyKey, senderId, kind, text, replyNode, 0, null);
    }

    /**
     * Accepts a message, idempotently on (chat, idempotencyKey). Returns once the row is committed.
     *
     * @param maxUnanswered refuse when the chat already has this many unanswered messages; 0 = no limit
     * @param modelRole     the model role asked for, or null for the default
     */
    public Future<Accepted> accept(String tenantId, String channel, String chatKey, int partition,
                                   String idempotencyKey, String senderId, String kind, String text,
                                   String replyNode, int maxUnanswered, String modelRole) {
        return accept(pool, new Intake(tenantId, BotRef.MAIN, channel, chatKey, partition, idempotencyKey, senderId, kind, text,
                replyNode, maxUnanswered, modelRole, null));
    }

    /** Accepts a message, idempotently on (chat, idempotencyKey). Returns once the row is committed. */
    public Future<Accepted> accept(Intake intake) {
        return accept(pool, intake);
    }

    /**
     * Accepts a message through {@code client}: a pool (committed on return) or a connection in a
     * transaction of the caller's (committed with it).
     */
    public static Future<Accepted> accept(SqlClient client, Intake in) {
        Tuple params = Tuple.tuple().addString(in.tenantId()).addString(in.channel()).addString(in.chatKey())
                .addInteger(in.partition()).addString(in.idempotencyKey()).addString(in.senderId()).addString(in.kind())
                .addString(in.text()).addString(in.replyNode()).addInteger(in.maxUnanswered()).addString(in.modelRole())
                .addString(in.contextMode()).addString(in.botId()).addString(in.apiKeyId()).addString(in.traceParent());
        return client.preparedQuery(ACCEPT).execute(params).compose(rows -> {
            if (rows.size() > 0) {
                return Future.succeededFuture(rows.iterator().next());
            }
            // Either a concurrent send of the same key won (read what it stored), or the backlog is full.
            return client.preparedQuery(FIND_BY_KEY).execute(Tuple.of(in.tenantId(), in.channel(), in.chatKey(), in.idempotencyKey(), in.botId()))
                    .map(again -> again.size() == 0 ? null : again.iterator().next());
        }).map(row -> row == null ? new Accepted(null, Outcome.BACKLOG_FULL) : accepted(in, row));
    }

    private static Accepted accepted(Intake in, Row row) {
        return new Accepted(new InboundMessage(row.getLong("id"), new BotRef(in.tenantId(), in.botId()), in.channel(), in.chatKey(),
                row.getLong("chat_id"), in.partition(), row.getLong("seq"), in.senderId(), in.text(), in.kind(),
                instant(row, "received_at"), in.replyNode(), in.modelRole(), in.contextMode(), in.traceParent())
                .withAdminChat(row.getBoolean("admin_chat")),
                row.getBoolean("created") ? Outcome.CREATED : Outcome.DUPLICATE);
    }

    /**
     * Accepts messages of distinct chats in one statement and one commit, each idempotently on
     * (chat, idempotencyKey) as {@link #accept(Intake)} does. Returns one entry per intake, in order:
     * the accepted message, or null where the batch could not settle it (the chat's backlog is full,
     * or a concurrent send of the same key won); settle those with {@link #accept(Intake)}.
     *
     * @param maxUnanswered the backlog limit of every intake of the batch (0 = none); their own is ignored
     */
    public Future<List<Accepted>> acceptAll(List<Intake> intakes, int maxUnanswered) {
        int n = intakes.size();
        String[] tenants = new String[n];
        String[] channels = new String[n];
        String[] chatKeys = new String[n];
        Integer[] partitions = new Integer[n];
        String[] keys = new String[n];
        String[] senders = new String[n];
        String[] kinds = new String[n];
        String[] texts = new String[n];
        String[] replyNodes = new String[n];
        String[] modelRoles = new String[n];
        String[] contextModes = new String[n];
        String[] bots = new String[n];
        String[] apiKeys = new String[n];
        String[] traces = new String[n];
        for (int i = 0; i < n; i++) {
            Intake in = intakes.get(i);
            tenants[i] = in.tenantId();
            channels[i] = in.channel();
            chatKeys[i] = in.chatKey();
            partitions[i] = in.partition();
            keys[i] = in.idempotencyKey();
            senders[i] = in.senderId();
            kinds[i] = in.kind();
            texts[i] = in.text();
            replyNodes[i] = in.replyNode();
            modelRoles[i] = in.modelRole();
            contextModes[i] = in.contextMode();
            bots[i] = in.botId();
            apiKeys[i] = in.apiKeyId();
            traces[i] = in.traceParent();
        }
        Tuple params = Tuple.tuple().addArrayOfString(tenants).addArrayOfString(channels).addArrayOfString(chatKeys)
                .addArrayOfInteger(partitions).addArrayOfString(keys).addArrayOfString(senders).addArrayOfString(kinds)
                .addArrayOfString(texts).addArrayOfString(replyNodes).addArrayOfString(modelRoles)
                .addArrayOfString(contextModes).addInteger(maxUnanswered).addArrayOfString(bots)
                .addArrayOfString(apiKeys).addArrayOfString(traces);
        return pool.preparedQuery(ACCEPT_MANY).execute(params).map(rows -> {
            Accepted[] out = new Accepted[n];
            for (Row row : rows) {
                int i = row.getLong("ord").intValue() - 1;
                out[i] = accepted(intakes.get(i), row);
            }
            return java.util.Arrays.asList(out);
        });
    }

    /**
     * The highest inbox id committed so far (0 for none). A message with a higher id was inserted
     * after this read, hence committed after whatever committed before it (a lease claim, say).
     */
    public Future<Long> highestId() {
        return pool.preparedQuery("SELECT coalesce(max(id), 0) AS id FROM inbox").execute()
                .map(rows -> rows.iterator().next().getLong("id"));
    }

    /** Pending messages of a partition in (chat, seq) order, after the given position (keyset paging). */
    public Future<List<InboundMessage>> pendingInPartition(int partition, long afterChatId, long afterSeq, int limit) {
        String sql = COLUMNS + """
                 WHERE i.partition = $1 AND i.status = 'pending' AND (i.chat_id, i.seq) > ($2, $3)
                ORDER BY i.chat_id, i.seq LIMIT $4""";
        return pool.preparedQuery(sql).execute(Tuple.of(partition, afterChatId, afterSeq, limit)).map(InboxStore::messages);
    }

    /** Pending messages of one chat after {@code afterSeq}, in order. */
    public Future<List<InboundMessage>> pendingInChat(long chatId, long afterSeq, int limit) {
        String sql = COLUMNS + """
                 WHERE i.chat_id = $1 AND i.status = 'pending' AND i.seq > $2
                ORDER BY i.seq LIMIT $3""";
        return pool.preparedQuery(sql).execute(Tuple.of(chatId, afterSeq, limit)).map(InboxStore::messages);
    }

    /** Pending messages older than {@code olderThanMs} in the given partitions: the safety net for lost wake-ups. */
    public Future<List<InboundMessage>> stalePending(int[] partitions, long olderThanMs, int limit) {
        String sql = COLUMNS + """
                 WHERE i.partition = ANY($1) AND i.status = 'pending'
                  AND i.received_at < now() - $2 * interval '1 millisecond'
                ORDER BY i.chat_id, i.seq LIMIT $3""";
        Integer[] boxed = java.util.Arrays.stream(partitions).boxed().toArray(Integer[]::new);
        return pool.preparedQuery(sql).execute(Tuple.tuple().addArrayOfInteger(boxed).addLong(olderThanMs).addInteger(limit))
                .map(InboxStore::messages);
    }

    static List<InboundMessage> messages(RowSet<Row> rows) {
        List<InboundMessage> out = new ArrayList<>(rows.size());
        for (Row row : rows) {
            out.add(new InboundMessage(row.getLong("id"), new BotRef(row.getString("tenant_id"), row.getString("bot_id")),
                    row.getString("channel"),
                    row.getString("chat_key"), row.getLong("chat_id"), row.getInteger("partition"),
                    row.getLong("seq"), row.getString("sender_id"), row.getString("text"), row.getString("kind"),
                    instant(row, "received_at"), row.getString("reply_node"), row.getString("model_role"),
                    row.getString("context_mode"), row.getString("trace_parent")).withAdminChat(row.getBoolean("admin_chat")));
        }
        return out;
    }

    static Instant instant(Row row, String column) {
        OffsetDateTime value = row.getOffsetDateTime(column);
        return value == null ? null : value.toInstant();
    }
}
