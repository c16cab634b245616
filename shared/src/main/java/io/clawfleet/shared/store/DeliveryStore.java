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
 * The delivery queue of push-channel replies, kept in the outbox itself. A gateway claims a reply
 * for a while (status {@code sending}); a claim that runs out (the gateway died) can be taken by
 * another. A reply is claimable only when every earlier reply of its chat is delivered or dead,
 * so a chat's replies go out in order.
 */
public final class DeliveryStore {

    /**
     * A reply claimed for sending; {@code attempts} counts this one; {@code partsSent} parts of a long reply are out
     * already (a retry starts after them); {@code traceParent} is the trace of the message it answers (null: untraced).
     */
    public record Claimed(String id, String tenantId, long chatId, String channel, String chatKey, long seq, String text,
                          int attempts, int partsSent, String traceParent) {

        public Claimed(String id, String tenantId, long chatId, String channel, String chatKey, long seq, String text,
                       int attempts, int partsSent) {
            this(id, tenantId, chatId, channel, chatKey, seq, text, attempts, partsSent, null);
        }
    }

    private static final String CLAIMABLE = """
            o.push AND ((o.status = 'pending' AND o.next_attempt_at <= now())
                        OR (o.status = 'sending' AND o.claimed_until < now()))
            AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.seq < o.seq AND e.push
                            AND e.status IN ('pending', 'sending'))""";

    private static final String CLAIM = """
            WITH due AS (
              SELECT o.id FROM outbox o WHERE %s %s
               ORDER BY o.next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED
            )
            UPDATE outbox o
               SET status = 'sending', claimed_by = $1, claimed_until = now() + $2 * interval '1 millisecond',
                   attempts = o.attempts + 1
              FROM due, chats c
             WHERE o.id = due.id AND c.id = o.chat_id
            RETURNING o.id, o.tenant_id, o.chat_id, c.channel, c.chat_key, o.seq, o.text, o.attempts, o.parts_sent,
                      (SELECT i.trace_parent FROM inbox i WHERE i.id = o.in_reply_to) AS trace_parent""";

    private final Pool pool;

    public DeliveryStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Claims up to {@code limit} replies that are due, oldest first. */
    public Future<List<Claimed>> claimDue(String nodeId, long claimMs, int limit) {
        return pool.preparedQuery(CLAIM.formatted(CLAIMABLE, "")).execute(Tuple.of(nodeId, claimMs, limit))
                .map(DeliveryStore::claimed);
    }

    /** Claims one reply if it is due now (its chat's earlier replies are out). */
    public Future<Optional<Claimed>> claim(String nodeId, String replyId, long claimMs) {
        return pool.preparedQuery(CLAIM.formatted(CLAIMABLE, "AND o.id = $4")).execute(Tuple.of(nodeId, claimMs, 1, replyId))
                .map(rows -> claimed(rows).stream().findFirst());
    }

    /** Claims the next reply of a chat, if due: after one is sent, the next goes at once. */
    public Future<Optional<Claimed>> claimNextInChat(String nodeId, long chatId, long claimMs) {
        return pool.preparedQuery(CLAIM.formatted(CLAIMABLE, "AND o.chat_id = $4")).execute(Tuple.of(nodeId, claimMs, 1, chatId))
                .map(rows -> claimed(rows).stream().findFirst());
    }

    public Future<Boolean> delivered(String replyId, String nodeId) {
        return pool.preparedQuery("""
                        UPDATE outbox SET status = 'delivered', delivered_at = now(), claimed_by = NULL, last_error = NULL
                         WHERE id = $1 AND claimed_by = $2 AND status = 'sending'""")
                .execute(Tuple.of(replyId, nodeId)).map(rows -> rows.rowCount() == 1);
    }

    /** Records that the first {@code parts} parts of a claimed reply are out (a retry skips them). */
    public Future<Boolean> partsSent(String replyId, String nodeId, int parts) {
        return pool.preparedQuery("UPDATE outbox SET parts_sent = $3 WHERE id = $1 AND claimed_by = $2 AND status = 'sending'")
                .execute(Tuple.of(replyId, nodeId, parts)).map(rows -> rows.rowCount() == 1);
    }

    /**
     * Gives a claimed reply back to the queue, due again after {@code delayMs}.
     *
     * @param attempted false when nothing was tried (held back by pacing): the claim's attempt is given back
     */
    public Future<Void> retryLater(String replyId, String nodeId, long delayMs, String error, boolean attempted) {
        return pool.preparedQuery("""
                        UPDATE outbox SET status = 'pending', claimed_by = NULL, last_error = $4,
                               next_attempt_at = now() + $3 * interval '1 millisecond',
                               attempts = CASE WHEN $5 THEN attempts ELSE greatest(attempts - 1, 0) END
                         WHERE id = $1 AND claimed_by = $2 AND status = 'sending'""")
                .execute(Tuple.of(replyId, nodeId, delayMs, error, attempted)).mapEmpty();
    }

    /** Gives up on a reply: it becomes a dead letter (kind outbound) with its error, in one statement. */
    public Future<Void> dead(String replyId, String nodeId, String error) {
        return pool.preparedQuery("""
                        WITH d AS (
                          UPDATE outbox SET status = 'dead', claimed_by = NULL, last_error = $3
                           WHERE id = $1 AND claimed_by = $2 AND status = 'sending'
                          RETURNING id, tenant_id, chat_id, seq, text, attempts
                        )
                        INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error, attempts)
                        SELECT tenant_id, 'outbound', id, chat_id,
                               jsonb_build_object('replyId', id, 'seq', seq, 'text', text), $3, attempts FROM d
                        ON CONFLICT (kind, ref_id) DO UPDATE
                          SET error = EXCLUDED.error, attempts = EXCLUDED.attempts, created_at = now(), replayed_at = NULL""")
                .execute(Tuple.of(replyId, nodeId, error)).mapEmpty();
    }

    private static List<Claimed> claimed(RowSet<Row> rows) {
        List<Claimed> out = new ArrayList<>(rows.size());
        for (Row row : rows) {
            out.add(new Claimed(row.getString("id"), row.getString("tenant_id"), row.getLong("chat_id"),
                    row.getString("channel"), row.getString("chat_key"), row.getLong("seq"), row.getString("text"),
                    row.getInteger("attempts"), row.getInteger("parts_sent"), row.getString("trace_parent")));
        }
        return out;
    }
}
