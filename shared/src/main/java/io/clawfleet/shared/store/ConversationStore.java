package io.clawfleet.shared.store;

import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.db.GroupCommit;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
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

    static final String LOAD = """
            SELECT s.done_seq, s.summary, s.disabled_skills, s.always_allowed, s.consolidated_through,
                   c.role,
                   (SELECT count(*) FROM messages m WHERE m.chat_id = $1 AND m.id > coalesce(s.consolidated_through, 0)) AS stored,
                   (SELECT json_build_object('tool', p.tool, 'callId', p.call_id, 'arguments', p.arguments, 'state', p.state,
                                            'approvalId', p.approval_id, 'argsHash', p.args_hash, 'requestedBy', p.requested_by,
                                            'expiresAt', (extract(epoch FROM p.expires_at) * 1000)::bigint,
                                            'decision', p.decision, 'decidedBy', p.decided_by)
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
              RETURNING id, tenant_id, chat_id, seq, api_key_id
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
              INSERT INTO llm_usage (tenant_id, bot_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens,
                                     cached_tokens, cost_micros, api_key_id)
              SELECT d.tenant_id, (SELECT c.bot_id FROM chats c WHERE c.id = d.chat_id), d.chat_id, d.id, u.provider, u.model,
                     u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_micros, d.api_key_id
                FROM done d, unnest($15::text[], $16::text[], $17::int[], $18::int[], $22::int[], $23::bigint[])
                       AS u(provider, model, input_tokens, output_tokens, cached_tokens, cost_micros)
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
              INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,
                                             args_hash, requested_by, expires_at)
              SELECT d.chat_id, d.tenant_id, d.id, $21::jsonb ->> 'tool', $21::jsonb ->> 'callId', $21::jsonb -> 'arguments',
                     $21::jsonb -> 'state', $21::jsonb ->> 'approvalId', $21::jsonb ->> 'argsHash',
                     $21::jsonb ->> 'requestedBy', to_timestamp(($21::jsonb ->> 'expiresAt')::bigint / 1000.0)
                FROM done d WHERE $21::jsonb IS NOT NULL
              ON CONFLICT (chat_id) DO UPDATE SET inbox_id = EXCLUDED.inbox_id, tool = EXCLUDED.tool,
                    call_id = EXCLUDED.call_id, arguments = EXCLUDED.arguments, state = EXCLUDED.state, created_at = now(),
                    approval_id = EXCLUDED.approval_id, args_hash = EXCLUDED.args_hash,
                    requested_by = EXCLUDED.requested_by, expires_at = EXCLUDED.expires_at,
                    decision = NULL, decided_by = NULL, decided_at = NULL
            )
            SELECT (SELECT count(*) FROM fence) AS held, out.seq, out.created_at
              FROM (SELECT 1) one LEFT JOIN out ON true""";

    // The turns of many chats in one statement and one transaction, each as COMMIT does it alone:
    // per turn arrays ($1-$12), history rows ($13-$18) and usage rows ($19-$25) carry the number
    // (1-based) of their turn. Lease rows are share-locked in partition order, as the lease store
    // locks them, so a commit group and a renewal or claim wait for each other rather than deadlock.
    // A turn whose fence does not hold writes nothing and comes back with held = false.
    private static final String COMMIT_MANY = """
            WITH t AS (
              SELECT * FROM unnest($1::int[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[],
                                   $8::text[], $9::bool[], $10::bool[], $11::text[], $12::text[])
                WITH ORDINALITY AS t(partition, node, epoch, inbox_id, reply_id, reply_text, dead_error, dead_payload,
                                     push, clear_pending, always_allow, pending, ord)
            ), fence AS (
              SELECT l.partition FROM partition_leases l
               WHERE (l.partition, l.owner_node, l.epoch) IN (SELECT partition, node, epoch FROM t)
               ORDER BY l.partition
               FOR SHARE
            ), done AS (
              UPDATE inbox i SET status = 'done', done_at = now(), attempts = i.attempts + 1
                FROM t
               WHERE i.id = t.inbox_id AND i.status NOT IN ('done', 'dead') AND t.partition IN (SELECT partition FROM fence)
              RETURNING i.id, i.tenant_id, i.chat_id, i.seq, i.api_key_id, t.ord
            ), st AS (
              INSERT INTO conversation_state AS s (chat_id, tenant_id, done_seq, reply_seq, always_allowed)
              SELECT d.chat_id, d.tenant_id, d.seq, 1,
                     CASE WHEN t.always_allow IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(t.always_allow) END
                FROM done d JOIN t ON t.ord = d.ord
              ON CONFLICT (chat_id) DO UPDATE
                SET done_seq = EXCLUDED.done_seq, reply_seq = s.reply_seq + 1, updated_at = now(),
                    always_allowed = CASE WHEN s.always_allowed @> EXCLUDED.always_allowed THEN s.always_allowed
                                          ELSE s.always_allowed || EXCLUDED.always_allowed END
              RETURNING chat_id, reply_seq
            ), hist AS (
              INSERT INTO messages (tenant_id, chat_id, inbox_id, role, sender_id, content, tool_calls, tool_call_id)
              SELECT d.tenant_id, d.chat_id, d.id, h.role, h.sender_id, h.content, h.tool_calls::jsonb, h.tool_call_id
                FROM unnest($13::int[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[])
                       WITH ORDINALITY AS h(turn, role, sender_id, content, tool_calls, tool_call_id, ord)
                JOIN done d ON d.ord = h.turn
               ORDER BY h.ord
            ), out AS (
              INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text, push, next_attempt_at)
              SELECT t.reply_id, d.tenant_id, d.chat_id, st.reply_seq, d.id, t.reply_text, t.push, now()
                FROM done d JOIN t ON t.ord = d.ord JOIN st ON st.chat_id = d.chat_id
              RETURNING id, seq, created_at
            ), dead AS (
              INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error, attempts)
              SELECT d.tenant_id, 'inbound', d.id::text, d.chat_id, t.dead_payload::jsonb, t.dead_error, 1
                FROM done d JOIN t ON t.ord = d.ord WHERE t.dead_error IS NOT NULL
              ON CONFLICT (kind, ref_id) DO NOTHING
            ), usage AS (
              INSERT INTO llm_usage (tenant_id, bot_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens,
                                     cached_tokens, cost_micros, api_key_id)
              SELECT d.tenant_id, (SELECT c.bot_id FROM chats c WHERE c.id = d.chat_id), d.chat_id, d.id, u.provider, u.model,
                     u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_micros, d.api_key_id
                FROM unnest($19::int[], $20::text[], $21::text[], $22::int[], $23::int[], $24::int[], $25::bigint[])
                       AS u(turn, provider, model, input_tokens, output_tokens, cached_tokens, cost_micros)
                JOIN done d ON d.ord = u.turn
            ), task_run AS (
              UPDATE task_runs r SET status = CASE WHEN t.dead_error IS NULL THEN 'success' ELSE 'error' END,
                     error = t.dead_error, result_preview = left(t.reply_text, 200),
                     duration_ms = greatest(0, (extract(epoch FROM now() - r.started_at) * 1000)::int)
                FROM done d JOIN t ON t.ord = d.ord WHERE r.inbox_id = d.id
            ), steps AS (
              DELETE FROM turn_steps s USING done d WHERE s.inbox_id = d.id
            ), unpend AS (
              DELETE FROM pending_approvals p USING done d JOIN t ON t.ord = d.ord
               WHERE p.chat_id = d.chat_id AND t.clear_pending AND t.pending IS NULL
            ), pend AS (
              INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,
                                             args_hash, requested_by, expires_at)
              SELECT d.chat_id, d.tenant_id, d.id, t.pending::jsonb ->> 'tool', t.pending::jsonb ->> 'callId',
                     t.pending::jsonb -> 'arguments', t.pending::jsonb -> 'state', t.pending::jsonb ->> 'approvalId',
                     t.pending::jsonb ->> 'argsHash', t.pending::jsonb ->> 'requestedBy',
                     to_timestamp((t.pending::jsonb ->> 'expiresAt')::bigint / 1000.0)
                FROM done d JOIN t ON t.ord = d.ord WHERE t.pending IS NOT NULL
              ON CONFLICT (chat_id) DO UPDATE SET inbox_id = EXCLUDED.inbox_id, tool = EXCLUDED.tool,
                    call_id = EXCLUDED.call_id, arguments = EXCLUDED.arguments, state = EXCLUDED.state, created_at = now(),
                    approval_id = EXCLUDED.approval_id, args_hash = EXCLUDED.args_hash,
                    requested_by = EXCLUDED.requested_by, expires_at = EXCLUDED.expires_at,
                    decision = NULL, decided_by = NULL, decided_at = NULL
            )
            SELECT t.ord, t.partition IN (SELECT partition FROM fence) AS held, out.seq, out.created_at
              FROM t LEFT JOIN out ON out.id = t.reply_id""";

    private final Pool pool;
    /** Commits turns of many chats together when set ({@link #grouped}); null: each alone. */
    private GroupCommit<TurnCommit, CommitResult> group;

    public ConversationStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * A store whose {@link #commit(TurnCommit)} commits the turns that finish while earlier ones are
     * being committed together ({@link GroupCommit}), at most {@code maxGroup} per statement.
     */
    public static ConversationStore grouped(Vertx vertx, Pool pool, int maxGroup, int maxInFlight) {
        ConversationStore store = new ConversationStore(pool);
        store.group = new GroupCommit<>(vertx, store::commitAlone, store::commitAll, turn -> turn.message().chatId(),
                turn -> Boolean.TRUE, maxGroup, maxInFlight);
        return store;
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
            // A history must not open with tool results whose call is not in it: the model's API refuses them.
            // The window (LIMIT) or a retention batch can cut a turn there.
            while (!history.isEmpty() && "tool".equals(history.getFirst().role())) {
                history.removeFirst();
            }
            Object rawPending = row.getValue("pending");
            TurnCommit.PendingApproval pending = null;
            if (rawPending != null) {
                JsonObject p = rawPending instanceof JsonObject json ? json : new JsonObject(String.valueOf(rawPending));
                Long expires = p.getLong("expiresAt");
                pending = new TurnCommit.PendingApproval(p.getString("tool"), p.getString("callId"),
                        p.getJsonObject("arguments"), p.getJsonObject("state"), p.getString("approvalId"),
                        p.getString("argsHash"), p.getString("requestedBy"),
                        expires == null ? java.time.Instant.EPOCH : java.time.Instant.ofEpochMilli(expires),
                        p.getString("decision"), p.getString("decidedBy"));
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
        return group == null ? commitAlone(turn) : group.submit(turn);
    }

    /** Turn commit statements issued so far (grouped or alone); 0 when this store does not group. */
    public long commitStatements() {
        return group == null ? 0 : group.commits();
    }

    private Future<CommitResult> commitAlone(TurnCommit turn) {
        History history = new History(List.of(turn));
        InboundMessage message = turn.message();
        Fence fence = turn.fence();
        String replyId = replyId(message.id());
        Tuple params = Tuple.tuple()
                .addInteger(fence.partition()).addString(fence.nodeId()).addLong(fence.epoch())
                .addLong(message.id())
                .addArrayOfString(history.roles).addArrayOfString(history.senders).addArrayOfString(history.contents)
                .addArrayOfString(history.toolCalls).addArrayOfString(history.toolCallIds)
                .addString(replyId).addString(PgText.clean(turn.replyText()))
                .addString(turn.deadLetterError())
                .addString(deadPayload(turn))
                .addBoolean(Channels.isPush(message.channel()))
                .addArrayOfString(history.providers).addArrayOfString(history.models)
                .addArrayOfInteger(history.inputs).addArrayOfInteger(history.outputs)
                .addBoolean(turn.clearPending())
                .addString(turn.alwaysAllow())
                .addValue(pending(turn))
                .addArrayOfInteger(history.cached).addArrayOfLong(history.costs);
        return pool.preparedQuery(COMMIT).execute(params).map(rows -> {
            Row row = rows.iterator().next();
            if (row.getLong("held") == 0) {
                throw new PartitionLostException(fence);
            }
            Long seq = row.getLong("seq");
            if (seq == null) {
                return new CommitResult.AlreadyDone();
            }
            return new CommitResult.Committed(new OutboundReply(replyId, message.bot(), message.channel(),
                    message.chatKey(), message.chatId(), seq, message.id(), PgText.clean(turn.replyText()),
                    row.getOffsetDateTime("created_at").toInstant(), tokens(turn)));
        });
    }

    /**
     * Commits turns of distinct chats in one statement; per turn, in order, what committing it alone
     * would give: its result, or a failure with {@link PartitionLostException} when its fence did not hold.
     */
    public Future<List<Future<CommitResult>>> commitAll(List<TurnCommit> turns) {
        int n = turns.size();
        Integer[] partitions = new Integer[n];
        String[] nodes = new String[n];
        Long[] epochs = new Long[n];
        Long[] inboxIds = new Long[n];
        String[] replyIds = new String[n];
        String[] replyTexts = new String[n];
        String[] deadErrors = new String[n];
        String[] deadPayloads = new String[n];
        Boolean[] push = new Boolean[n];
        Boolean[] clearPending = new Boolean[n];
        String[] alwaysAllow = new String[n];
        String[] pending = new String[n];
        for (int i = 0; i < n; i++) {
            TurnCommit turn = turns.get(i);
            partitions[i] = turn.fence().partition();
            nodes[i] = turn.fence().nodeId();
            epochs[i] = turn.fence().epoch();
            inboxIds[i] = turn.message().id();
            replyIds[i] = replyId(turn.message().id());
            replyTexts[i] = PgText.clean(turn.replyText());
            deadErrors[i] = turn.deadLetterError();
            deadPayloads[i] = deadPayload(turn);
            push[i] = Channels.isPush(turn.message().channel());
            clearPending[i] = turn.clearPending();
            alwaysAllow[i] = turn.alwaysAllow();
            JsonObject waiting = pending(turn);
            pending[i] = waiting == null ? null : waiting.encode();
        }
        History history = new History(turns);
        Tuple params = Tuple.tuple()
                .addArrayOfInteger(partitions).addArrayOfString(nodes).addArrayOfLong(epochs).addArrayOfLong(inboxIds)
                .addArrayOfString(replyIds).addArrayOfString(replyTexts).addArrayOfString(deadErrors)
                .addArrayOfString(deadPayloads).addArrayOfBoolean(push).addArrayOfBoolean(clearPending)
                .addArrayOfString(alwaysAllow).addArrayOfString(pending)
                .addArrayOfInteger(history.historyTurns).addArrayOfString(history.roles).addArrayOfString(history.senders)
                .addArrayOfString(history.contents).addArrayOfString(history.toolCalls).addArrayOfString(history.toolCallIds)
                .addArrayOfInteger(history.usageTurns).addArrayOfString(history.providers).addArrayOfString(history.models)
                .addArrayOfInteger(history.inputs).addArrayOfInteger(history.outputs)
                .addArrayOfInteger(history.cached).addArrayOfLong(history.costs);
        return pool.preparedQuery(COMMIT_MANY).execute(params).map(rows -> {
            List<Future<CommitResult>> out = new ArrayList<>(java.util.Collections.nCopies(n, null));
            for (Row row : rows) {
                int i = row.getLong("ord").intValue() - 1;
                TurnCommit turn = turns.get(i);
                InboundMessage message = turn.message();
                Long seq = row.getLong("seq");
                out.set(i, !row.getBoolean("held") ? Future.failedFuture(new PartitionLostException(turn.fence()))
                        : seq == null ? Future.succeededFuture(new CommitResult.AlreadyDone())
                        : Future.succeededFuture(new CommitResult.Committed(new OutboundReply(replyIds[i],
                                message.bot(), message.channel(), message.chatKey(), message.chatId(), seq,
                                message.id(), replyTexts[i], row.getOffsetDateTime("created_at").toInstant(),
                                tokens(turn)))));
            }
            return out;
        });
    }

    /**
     * The tokens a committed turn used, as {@link OutboxStore#replyWithTokens} sums them: its usage rows are the only
     * rows with its message's inbox id (they are written with the message marked done, which happens once).
     */
    private static UsageStore.TurnTokens tokens(TurnCommit turn) {
        long input = 0;
        long output = 0;
        for (TurnCommit.Usage call : turn.usage()) {
            input += call.inputTokens();
            output += call.outputTokens();
        }
        return new UsageStore.TurnTokens(input, output);
    }

    private static String deadPayload(TurnCommit turn) {
        return turn.deadLetterError() == null ? null : Json.toString(turn.message());
    }

    private static JsonObject pending(TurnCommit turn) {
        return turn.pending() == null ? null : new JsonObject().put("tool", turn.pending().tool())
                .put("callId", turn.pending().callId()).put("arguments", turn.pending().arguments())
                .put("state", turn.pending().state()).put("approvalId", turn.pending().approvalId())
                .put("argsHash", turn.pending().argsHash()).put("requestedBy", turn.pending().requestedBy())
                .put("expiresAt", turn.pending().expiresAt().toEpochMilli());
    }

    /** The history and usage rows of some turns as statement arrays, each row with its turn's number (1-based). */
    private static final class History {
        final Integer[] historyTurns;
        final String[] roles;
        final String[] senders;
        final String[] contents;
        final String[] toolCalls;
        final String[] toolCallIds;
        final Integer[] usageTurns;
        final String[] providers;
        final String[] models;
        final Integer[] inputs;
        final Integer[] outputs;
        final Integer[] cached;
        final Long[] costs;

        History(List<TurnCommit> turns) {
            int h = turns.stream().mapToInt(t -> t.history().size()).sum();
            int u = turns.stream().mapToInt(t -> t.usage().size()).sum();
            historyTurns = new Integer[h];
            roles = new String[h];
            senders = new String[h];
            contents = new String[h];
            toolCalls = new String[h];
            toolCallIds = new String[h];
            usageTurns = new Integer[u];
            providers = new String[u];
            models = new String[u];
            inputs = new Integer[u];
            outputs = new Integer[u];
            cached = new Integer[u];
            costs = new Long[u];
            int hi = 0;
            int ui = 0;
            for (int t = 0; t < turns.size(); t++) {
                for (HistoryEntry entry : turns.get(t).history()) {
                    historyTurns[hi] = t + 1;
                    roles[hi] = entry.role();
                    senders[hi] = entry.senderId();
                    contents[hi] = PgText.clean(entry.content());
                    toolCalls[hi] = PgText.cleanJson(entry.toolCalls());
                    toolCallIds[hi] = entry.toolCallId();
                    hi++;
                }
                for (TurnCommit.Usage usage : turns.get(t).usage()) {
                    usageTurns[ui] = t + 1;
                    providers[ui] = usage.provider();
                    models[ui] = usage.model() == null ? "unknown" : usage.model();
                    inputs[ui] = usage.inputTokens();
                    outputs[ui] = usage.outputTokens();
                    cached[ui] = usage.cachedTokens();
                    costs[ui] = usage.costMicros();
                    ui++;
                }
            }
        }
    }
}
