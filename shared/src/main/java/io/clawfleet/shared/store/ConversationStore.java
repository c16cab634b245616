package io.clawfleet.shared.store;

import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Conversation state of the worker that owns a chat's partition: loading it, and committing a turn
 * in one fenced statement (history, inbox row done, reply in the outbox).
 */
public final class ConversationStore {

    /** What a worker needs to run a chat's next turn. */
    public record ChatState(long doneSeq, String summary, List<HistoryEntry> history) {
    }

    /** Outcome of a commit that was not fenced off. */
    public sealed interface CommitResult {
        /** The turn is recorded and its reply is in the outbox. */
        record Committed(OutboundReply reply) implements CommitResult {
        }

        /** The message had been answered already (by an earlier owner); nothing was written. */
        record AlreadyDone() implements CommitResult {
        }
    }

    private static final String LOAD = """
            SELECT s.done_seq, s.summary,
                   (SELECT coalesce(json_agg(json_build_object('role', h.role, 'sender_id', h.sender_id,
                                'content', h.content, 'tool_calls', h.tool_calls::text, 'tool_call_id', h.tool_call_id)
                                ORDER BY h.id), '[]'::json)
                      FROM (SELECT id, role, sender_id, content, tool_calls, tool_call_id FROM messages
                             WHERE chat_id = $1 ORDER BY id DESC LIMIT $2) h) AS history
              FROM (SELECT 1) one LEFT JOIN conversation_state s ON s.chat_id = $1""";

    // One statement, one round trip, one transaction. The lease row is share-locked, so a steal
    // (an UPDATE of that row) waits for this commit or makes it see the new epoch and write nothing.
    private static final String COMMIT = """
            WITH fence AS (
              SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
            ), done AS (
              UPDATE inbox SET status = 'done', done_at = now(), attempts = attempts + 1
               WHERE id = $4 AND status = 'pending' AND EXISTS (SELECT 1 FROM fence)
              RETURNING id, tenant_id, chat_id, seq
            ), st AS (
              INSERT INTO conversation_state AS s (chat_id, tenant_id, done_seq, reply_seq)
              SELECT chat_id, tenant_id, seq, 1 FROM done
              ON CONFLICT (chat_id) DO UPDATE
                SET done_seq = EXCLUDED.done_seq, reply_seq = s.reply_seq + 1, updated_at = now()
              RETURNING reply_seq
            ), hist AS (
              INSERT INTO messages (tenant_id, chat_id, inbox_id, role, sender_id, content, tool_calls, tool_call_id)
              SELECT d.tenant_id, d.chat_id, d.id, m.role, m.sender_id, m.content, m.tool_calls::jsonb, m.tool_call_id
                FROM done d,
                     unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
                       WITH ORDINALITY AS m(role, sender_id, content, tool_calls, tool_call_id, ord)
               ORDER BY m.ord
            ), out AS (
              INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text, push, next_attempt_at)
              SELECT $10, d.tenant_id, d.chat_id, st.reply_seq, d.id, $11, $14, now() FROM done d, st
              RETURNING seq, created_at
            ), dead AS (
              INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error, attempts)
              SELECT d.tenant_id, 'inbound', d.id::text, d.chat_id, $13::jsonb, $12, 1 FROM done d WHERE $12::text IS NOT NULL
              ON CONFLICT (kind, ref_id) DO NOTHING
            )
            SELECT (SELECT count(*) FROM fence) AS held, out.seq, out.created_at
              FROM (SELECT 1) one LEFT JOIN out ON true""";

    private final Pool pool;

    public ConversationStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Deterministic id of the reply to an inbound message: a re-run cannot make a second one. */
    public static String replyId(long inboxId) {
        return "r-" + inboxId;
    }

    public Future<ChatState> load(long chatId, int historyLimit) {
        return pool.preparedQuery(LOAD).execute(Tuple.of(chatId, historyLimit)).map(rows -> {
            Row row = rows.iterator().next();
            Long doneSeq = row.getLong("done_seq");
            List<HistoryEntry> history = new ArrayList<>();
            Object raw = row.getValue("history");
            JsonArray items = raw instanceof JsonArray array ? array : new JsonArray(String.valueOf(raw));
            for (int i = 0; i < items.size(); i++) {
                JsonObject item = items.getJsonObject(i);
                history.add(new HistoryEntry(item.getString("role"), item.getString("sender_id"),
                        item.getString("content"), item.getString("tool_calls"), item.getString("tool_call_id")));
            }
            return new ChatState(doneSeq == null ? 0 : doneSeq, row.getString("summary"), history);
        });
    }

    /**
     * Commits a turn: appends {@code history}, marks the message done and puts {@code replyText} in
     * the outbox, all only if the fence still holds and the message is still pending.
     *
     * @param deadLetterError when not null, the turn failed for good: the reply explains, and a dead
     *                        letter with this error is recorded in the same transaction
     * @return the commit result; fails with {@link PartitionLostException} when fenced off
     */
    public Future<CommitResult> commitTurn(Fence fence, InboundMessage message, List<HistoryEntry> history,
                                           String replyText, String deadLetterError) {
        int n = history.size();
        String[] roles = new String[n];
        String[] senders = new String[n];
        String[] contents = new String[n];
        String[] toolCalls = new String[n];
        String[] toolCallIds = new String[n];
        for (int i = 0; i < n; i++) {
            HistoryEntry entry = history.get(i);
            roles[i] = entry.role();
            senders[i] = entry.senderId();
            contents[i] = entry.content();
            toolCalls[i] = entry.toolCalls();
            toolCallIds[i] = entry.toolCallId();
        }
        String replyId = replyId(message.id());
        Tuple params = Tuple.tuple()
                .addInteger(fence.partition()).addString(fence.nodeId()).addLong(fence.epoch())
                .addLong(message.id())
                .addArrayOfString(roles).addArrayOfString(senders).addArrayOfString(contents)
                .addArrayOfString(toolCalls).addArrayOfString(toolCallIds)
                .addString(replyId).addString(replyText)
                .addString(deadLetterError)
                .addString(deadLetterError == null ? null : Json.toString(message))
                .addBoolean(Channels.isPush(message.channel()));
        return pool.preparedQuery(COMMIT).execute(params).map(rows -> {
            Row row = rows.iterator().next();
            if (row.getLong("held") == 0) {
                throw new PartitionLostException(fence);
            }
            Long seq = row.getLong("seq");
            if (seq == null) {
                return new CommitResult.AlreadyDone();
            }
            return new CommitResult.Committed(new OutboundReply(replyId, message.tenantId(), message.channel(),
                    message.chatKey(), message.chatId(), seq, message.id(), replyText,
                    row.getOffsetDateTime("created_at").toInstant()));
        });
    }
}
