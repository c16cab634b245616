package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Compaction and memory consolidation of a chat (seed 000 §5, seed 002): the messages not yet
 * folded away, and the one fenced statement that folds some of them: the summary and the
 * consolidation mark of the chat, the history log appended, the memory file rewritten and the
 * tokens spent, all or nothing. Messages stay stored (the record); they only leave the prompt.
 */
public final class CompactionStore {

    /** Longest history log kept; past it the oldest entries are cut (a file holds at most 1 MiB). */
    static final int HISTORY_KEEP_CHARS = 196_608;

    /** A stored message of a chat, with its id (the consolidation mark is an id). */
    public record StoredMessage(long id, String role, String senderId, String content) {
    }

    /**
     * What one compaction writes.
     *
     * @param previousThrough the chat's consolidation mark the compaction started from (compare-and-set)
     * @param through         the id of the last message folded away
     * @param historyEntry    text appended to {@code historyPath}, or null for none
     * @param memory          the new content of {@code memoryPath}, or null to leave it
     * @param memoryVersion   the version of {@code memoryPath} the new content was made from (0: there
     *                        was none); the memory is rewritten only if it is still at that version
     */
    public record Compaction(Fence fence, long chatId, long previousThrough, long through, String summary,
                             String historyPath, String historyEntry, String memoryPath, String memory,
                             long memoryVersion, List<TurnCommit.Usage> usage) {
    }

    /**
     * What a compaction wrote.
     *
     * @param applied      false when another compaction came first (then nothing was written)
     * @param memoryKept   the memory file changed since the model read it, so it was left as it is
     *                     (the rest of the compaction was written)
     * @param storageFull  the history entry and the memory would have grown the tenant's files past its
     *                     {@code storageBytes} limit, so neither was written (the rest of the compaction was)
     */
    public record Result(boolean applied, boolean memoryKept, boolean storageFull) {
    }

    private static final String COMMIT = """
            WITH fence AS (
              SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
            ), st AS (
              UPDATE conversation_state SET summary = $6, consolidated_through = $5, updated_at = now()
               WHERE chat_id = $4 AND consolidated_through = $7 AND EXISTS (SELECT 1 FROM fence)
                 AND ($20::boolean OR $9::text IS NULL AND $11::text IS NULL
                      OR NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = conversation_state.tenant_id AND t.limits ? 'storageBytes'))
              RETURNING tenant_id, (SELECT c.bot_id FROM chats c WHERE c.id = $4) AS bot_id
            ), hist AS (
              INSERT INTO workspace_files AS w (tenant_id, bot_id, path, content)
              SELECT tenant_id, bot_id, $8, $9 FROM st WHERE $9::text IS NOT NULL
              ON CONFLICT (tenant_id, bot_id, path) DO UPDATE
                SET content = CASE WHEN length(w.content) > $15 THEN '(older entries cut)' || E'\\n\\n' || right(w.content, $15)
                                   ELSE w.content END || E'\\n\\n' || EXCLUDED.content,
                    version = w.version + 1, updated_at = now()
            ), mem_created AS (
              INSERT INTO workspace_files (tenant_id, bot_id, path, content)
              SELECT tenant_id, bot_id, $10, $11 FROM st WHERE $11::text IS NOT NULL AND $17::bigint = 0
              ON CONFLICT (tenant_id, bot_id, path) DO NOTHING
              RETURNING 1
            ), mem_updated AS (
              UPDATE workspace_files w SET content = $11, version = w.version + 1, updated_at = now()
                FROM st
               WHERE w.tenant_id = st.tenant_id AND w.bot_id = st.bot_id AND w.path = $10 AND $11::text IS NOT NULL AND w.version = $17::bigint
              RETURNING 1
            ), usage AS (
              INSERT INTO llm_usage (tenant_id, bot_id, chat_id, provider, model, input_tokens, output_tokens, cached_tokens,
                                     cost_micros)
              SELECT st.tenant_id, st.bot_id, $4, u.provider, u.model, u.input_tokens, u.output_tokens, u.cached_tokens,
                     u.cost_micros
                FROM st, unnest($12::text[], $13::text[], $14::int[], $16::int[], $18::int[], $19::bigint[])
                       AS u(provider, model, input_tokens, output_tokens, cached_tokens, cost_micros)
            )
            SELECT (SELECT count(*) FROM fence) AS held, (SELECT count(*) FROM st) AS applied,
                   (SELECT count(*) FROM mem_created) + (SELECT count(*) FROM mem_updated) AS memory_written,
                   (SELECT count(*) FROM conversation_state s JOIN tenants t ON t.id = s.tenant_id
                     WHERE s.chat_id = $4 AND t.limits ? 'storageBytes') AS limited""";
    /** Room a history entry may take beyond its own bytes: the blank line before it, the mark of a cut. */
    private static final int HISTORY_OVERHEAD_BYTES = 32;

    private final Pool pool;

    public CompactionStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** The chat's messages after {@code after} (its consolidation mark), oldest first, at most {@code limit}. */
    public Future<List<StoredMessage>> unconsolidated(long chatId, long after, int limit) {
        return pool.preparedQuery("SELECT id, role, sender_id, content FROM messages WHERE chat_id = $1 AND id > $2 "
                        + "ORDER BY id LIMIT $3")
                .execute(Tuple.of(chatId, after, limit))
                .map(rows -> {
                    List<StoredMessage> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new StoredMessage(row.getLong("id"), row.getString("role"), row.getString("sender_id"),
                                row.getString("content")));
                    }
                    return out;
                });
    }

    /**
     * Writes a compaction if this node still owns the partition and nobody compacted the chat since
     * {@code previousThrough}. The memory file is compare-and-set on its version: compaction runs
     * beside the chat's later turns, and a memory written since the model read it (by a tool, an
     * operator) is newer than what the model made of the old one, so it is kept.
     *
     * <p>A tenant with a storage limit is held back by that statement and written by {@link #limited}: without
     * the limit, a compaction costs no lock on the tenant.
     *
     * @throws PartitionLostException (failed future) when the fence no longer holds
     */
    public Future<Result> commit(Compaction c) {
        return pool.preparedQuery(COMMIT).execute(params(c, false)).compose(rows -> {
            Row row = rows.iterator().next();
            boolean writes = c.historyEntry() != null || c.memory() != null;
            return row.getLong("applied") == 0 && row.getLong("held") == 1 && writes && row.getLong("limited") == 1
                    ? limited(c) : Future.succeededFuture(result(c, row, false));
        });
    }

    /**
     * Writes a compaction under the lock of the tenant's storage limit: when the history entry and the memory could
     * grow its files past the limit (the entry counted whole, as a cut of the log is not foreseen here), neither is
     * written; the summary, the mark and the tokens are, so the chat's prompt still shrinks.
     */
    private Future<Result> limited(Compaction c) {
        return pool.withTransaction(conn -> conn.preparedQuery("SELECT tenant_id, bot_id FROM chats WHERE id = $1")
                .execute(Tuple.of(c.chatId()))
                .compose(chat -> chat.size() == 0 ? Future.succeededFuture((WorkspaceStore.Storage) null)
                        : WorkspaceStore.storage(conn, new BotRef(chat.iterator().next().getString("tenant_id"),
                                chat.iterator().next().getString("bot_id")), c.memoryPath()))
                .compose(storage -> {
                    boolean full = storage != null && storage.used() + growth(c, storage.old()) > storage.limit()
                            && growth(c, storage.old()) > 0;
                    Compaction written = full ? new Compaction(c.fence(), c.chatId(), c.previousThrough(), c.through(),
                            c.summary(), c.historyPath(), null, c.memoryPath(), null, c.memoryVersion(), c.usage()) : c;
                    return conn.preparedQuery(COMMIT).execute(params(written, true))
                            .map(rows -> result(c, rows.iterator().next(), full));
                }));
    }

    /** The most bytes a compaction may add to the tenant's files, given the memory file's bytes now. */
    private static long growth(Compaction c, long memoryBytes) {
        long history = c.historyEntry() == null ? 0
                : WorkspaceStore.checkContent(c.historyPath(), c.historyEntry()) + HISTORY_OVERHEAD_BYTES;
        long memory = c.memory() == null ? 0 : WorkspaceStore.checkContent(c.memoryPath(), c.memory()) - memoryBytes;
        return history + memory;
    }

    private static Result result(Compaction c, Row row, boolean storageFull) {
        if (row.getLong("held") == 0) {
            throw new PartitionLostException(c.fence());
        }
        boolean applied = row.getLong("applied") == 1;
        return new Result(applied, applied && !storageFull && c.memory() != null && row.getLong("memory_written") == 0,
                storageFull && applied);
    }

    private static Tuple params(Compaction c, boolean storageChecked) {
        int n = c.usage().size();
        String[] providers = new String[n];
        String[] models = new String[n];
        Integer[] inputs = new Integer[n];
        Integer[] outputs = new Integer[n];
        Integer[] cached = new Integer[n];
        Long[] costs = new Long[n];
        for (int i = 0; i < n; i++) {
            TurnCommit.Usage usage = c.usage().get(i);
            providers[i] = usage.provider();
            models[i] = usage.model() == null ? "unknown" : usage.model();
            inputs[i] = usage.inputTokens();
            outputs[i] = usage.outputTokens();
            cached[i] = usage.cachedTokens();
            costs[i] = usage.costMicros();
        }
        return Tuple.tuple()
                .addInteger(c.fence().partition()).addString(c.fence().nodeId()).addLong(c.fence().epoch())
                .addLong(c.chatId()).addLong(c.through()).addString(c.summary()).addLong(c.previousThrough())
                .addString(c.historyPath()).addString(c.historyEntry())
                .addString(c.memoryPath()).addString(c.memory())
                .addArrayOfString(providers).addArrayOfString(models).addArrayOfInteger(inputs)
                .addInteger(HISTORY_KEEP_CHARS).addArrayOfInteger(outputs).addLong(c.memoryVersion())
                .addArrayOfInteger(cached).addArrayOfLong(costs).addBoolean(storageChecked);
    }
}
