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
import java.util.Set;

/**
 * Conversation state of the worker that owns a chat's partition: loading it, and committing a turn
 * in one fenced statement (history, inbox row done, reply in the outbox).
 */
public final class ConversationStore {

    /**
     * What a worker needs to run a chat's next turn.
     *
     * @param admin              the chat has the admin role
     * @param disabledSkills     skills this chat switched off
     * @param alwaysAllowed      tools this chat answered /always for
     * @param pending            a tool call waiting for this chat's approval, or null
     * @param storedMessages     messages stored for the chat and not compacted yet
     * @param consolidatedThrough id of the last message folded into long-term memory
     */
    public record ChatState(long doneSeq, String summary, List<HistoryEntry> history, boolean admin,
                            Set<String> disabledSkills, Set<String> alwaysAllowed, TurnCommit.PendingApproval pending,
                            long storedMessages, long consolidatedThrough) {

        public ChatState(long doneSeq, String summary, List<HistoryEntry> history) {
            this(doneSeq, summary, history, false, Set.of(), Set.of(), null, history.size(), 0);
        }
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
            SELECT s.done_seq, s.summary, s.disabled_skills, s.always_allowed, s.consolidated_through,
                   c.role,
                   (SELECT count(*) FROM messages m WHERE m.chat_id = $1 AND m.id > coalesce(s.consolidated_through, 0)) AS stored,
                   (SELECT json_build_object('tool', p.tool, 'callId', p.call_id, 'arguments', p.arguments, 'state', p.state)
                      FROM pending_approvals p WHERE p.chat_id = $1) AS pending,
                   (SELECT coalesce(json_agg(json_build_object('role', h.role, 'sender_id', h.sender_id,
                                'content', h.content, 'tool_calls', h.tool_calls::text, 'tool_call_id', h.tool_call_id)
                                ORDER BY h.id), '[]'::json)
                      FROM (SELECT id, role, sender_id, content, tool_calls, tool_call_id FROM messages
                             WHERE chat_id = $1 AND id > coalesce(s.consolidated_through, 0)
                             ORDER BY id DESC LIMIT $2) h) AS history
              FROM (SELECT 1) one
              LEFT JOIN conversation_state s ON s.chat_id = $1
              LEFT JOIN chats c ON c.id = $1""";

    // One statement, one round trip, one transaction. The lease row is share-locked, so a steal
    // (an UPDATE of that row) waits for this commit or makes it see the new epoch and write nothing.
    // "status NOT IN (done, dead)" is "pending" (the column's check allows only these three), written
    // so that the partial index on pending rows cannot serve it: a generic plan made while the inbox
    // was empty chose that index and walked every entry it ever had (dead ones included) per commit.
    private static final String COMMIT = """
            WITH fence AS (
              SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
            ), done AS (
              UPDATE inbox SET status = 'done', done_at = now(), attempts = attempts + 1
               WHERE id = $4 AND status NOT IN ('done', 'dead') AND EXISTS (SELECT 1 FROM fence)
              RETURNING id, tenant_id, chat_id, seq
            ), st AS (
              INSERT INTO conversation_state AS s (chat_id, tenant_id, done_seq, reply_seq, always_allowed)
              SELECT chat_id, tenant_id, seq, 1, CASE WHEN $20::text IS NULL THEN '[]'::jsonb ELSE jsonb_build_array($20::text) END
                FROM done
              ON CONFLICT (chat_id) DO UPDATE
                SET done_seq = EXCLUDED.done_seq, reply_seq = s.reply_seq + 1, updated_at = now(),
                    always_allowed = CASE WHEN $20::text IS NULL OR s.always_allowed ? $20::text THEN s.always_allowed
                                          ELSE s.always_allowed || jsonb_build_array($20::text) END
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
            ), usage AS (
              INSERT INTO llm_usage (tenant_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens)
              SELECT d.tenant_id, d.chat_id, d.id, u.provider, u.model, u.input_tokens, u.output_tokens
                FROM done d, unnest($15::text[], $16::text[], $17::int[], $18::int[]) AS u(provider, model, input_tokens, output_tokens)
            ), task_run AS (
              -- a scheduled task's firing: the turn that answers it finishes its run
              UPDATE task_runs r SET status = CASE WHEN $12::text IS NULL THEN 'success' ELSE 'error' END, error = $12,
                     result_preview = left($11, 200),
                     duration_ms = greatest(0, (extract(epoch FROM now() - r.started_at) * 1000)::int)
                FROM done d WHERE r.inbox_id = d.id
            ), steps AS (
              DELETE FROM turn_steps WHERE inbox_id = $4 AND EXISTS (SELECT 1 FROM done)
            ), unpend AS (
              -- a new pending call replaces the old one through the upsert below, never both on one row
              DELETE FROM pending_approvals p USING done d WHERE p.chat_id = d.chat_id AND $19 AND $21::jsonb IS NULL
            ), pend AS (
              INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state)
              SELECT d.chat_id, d.tenant_id, d.id, $21::jsonb ->> 'tool', $21::jsonb ->> 'callId', $21::jsonb -> 'arguments',
                     $21::jsonb -> 'state'
                FROM done d WHERE $21::jsonb IS NOT NULL
              ON CONFLICT (chat_id) DO UPDATE SET inbox_id = EXCLUDED.inbox_id, tool = EXCLUDED.tool,
                    call_id = EXCLUDED.call_id, arguments = EXCLUDED.arguments, state = EXCLUDED.state, created_at = now()
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
            JsonArray items = jsonArray(row.getValue("history"));
            for (int i = 0; i < items.size(); i++) {
                JsonObject item = items.getJsonObject(i);
                history.add(new HistoryEntry(item.getString("role"), item.getString("sender_id"),
                        item.getString("content"), item.getString("tool_calls"), item.getString("tool_call_id")));
            }
            Object rawPending = row.getValue("pending");
            TurnCommit.PendingApproval pending = null;
            if (rawPending != null) {
                JsonObject p = rawPending instanceof JsonObject json ? json : new JsonObject(String.valueOf(rawPending));
                pending = new TurnCommit.PendingApproval(p.getString("tool"), p.getString("callId"),
                        p.getJsonObject("arguments"), p.getJsonObject("state"));
            }
            Long consolidated = row.getLong("consolidated_through");
            return new ChatState(doneSeq == null ? 0 : doneSeq, row.getString("summary"), history,
                    "admin".equals(row.getString("role")), strings(row.getValue("disabled_skills")),
                    strings(row.getValue("always_allowed")), pending, row.getLong("stored"),
                    consolidated == null ? 0 : consolidated);
        });
    }

    private static JsonArray jsonArray(Object raw) {
        return raw == null ? new JsonArray() : raw instanceof JsonArray array ? array : new JsonArray(String.valueOf(raw));
    }

    private static Set<String> strings(Object raw) {
        Set<String> out = new java.util.LinkedHashSet<>();
        jsonArray(raw).forEach(value -> out.add(String.valueOf(value)));
        return out;
    }

    /** Commits a plain turn (no tools, no approvals): see {@link #commit(TurnCommit)}. */
    public Future<CommitResult> commitTurn(Fence fence, InboundMessage message, List<HistoryEntry> history,
                                           String replyText, String deadLetterError) {
        return commit(new TurnCommit(fence, message, history, replyText, deadLetterError, List.of(), null, false, null));
    }

    /**
     * Commits a turn in one statement: appends its history, marks the message done, puts the reply
     * in the outbox, records token usage, drops the turn's ledger steps, and sets or clears the
     * chat's pending approval; all only if the fence still holds and the message is still pending.
     *
     * @return the commit result; fails with {@link PartitionLostException} when fenced off
     */
    public Future<CommitResult> commit(TurnCommit turn) {
        List<HistoryEntry> history = turn.history();
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
            contents[i] = PgText.clean(entry.content());
            toolCalls[i] = PgText.cleanJson(entry.toolCalls());
            toolCallIds[i] = entry.toolCallId();
        }
        int u = turn.usage().size();
        String[] providers = new String[u];
        String[] models = new String[u];
        Integer[] inputs = new Integer[u];
        Integer[] outputs = new Integer[u];
        for (int i = 0; i < u; i++) {
            TurnCommit.Usage usage = turn.usage().get(i);
            providers[i] = usage.provider();
            models[i] = usage.model() == null ? "unknown" : usage.model();
            inputs[i] = usage.inputTokens();
            outputs[i] = usage.outputTokens();
        }
        InboundMessage message = turn.message();
        Fence fence = turn.fence();
        String replyId = replyId(message.id());
        JsonObject pending = turn.pending() == null ? null : new JsonObject().put("tool", turn.pending().tool())
                .put("callId", turn.pending().callId()).put("arguments", turn.pending().arguments())
                .put("state", turn.pending().state());
        Tuple params = Tuple.tuple()
                .addInteger(fence.partition()).addString(fence.nodeId()).addLong(fence.epoch())
                .addLong(message.id())
                .addArrayOfString(roles).addArrayOfString(senders).addArrayOfString(contents)
                .addArrayOfString(toolCalls).addArrayOfString(toolCallIds)
                .addString(replyId).addString(PgText.clean(turn.replyText()))
                .addString(turn.deadLetterError())
                .addString(turn.deadLetterError() == null ? null : Json.toString(message))
                .addBoolean(Channels.isPush(message.channel()))
                .addArrayOfString(providers).addArrayOfString(models).addArrayOfInteger(inputs).addArrayOfInteger(outputs)
                .addBoolean(turn.clearPending())
                .addString(turn.alwaysAllow())
                .addValue(pending);
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
                    message.chatKey(), message.chatId(), seq, message.id(), turn.replyText(),
                    row.getOffsetDateTime("created_at").toInstant()));
        });
    }
}
