package io.clawfleet.shared.store;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.schedule.DueTask;
import io.clawfleet.shared.schedule.FiringRules;
import io.clawfleet.shared.schedule.FiringRules.Decision;
import io.clawfleet.shared.schedule.Heartbeat;
import io.vertx.core.Future;
import io.vertx.sqlclient.DatabaseException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The scheduler's side of tasks: claiming one due firing and committing everything it causes in
 * one transaction, so that any number of scheduler nodes fire each due time exactly once.
 *
 * <p>The claim locks the task row with {@code FOR UPDATE SKIP LOCKED} (other schedulers pass over
 * it); in the same transaction the firing enters the chat's inbox under the idempotency key
 * {@code task:<id>:<due epoch ms>}, its run is recorded, and the task moves on to its next due time.
 * A scheduler that dies before the commit leaves nothing behind and the lock goes with its
 * connection, so another scheduler fires that due time; a repeat can only meet the idempotency key.
 */
public final class TaskFiringStore {

    /**
     * One due time dealt with.
     *
     * @param runStatus pending (the message is in the chat), skipped or error
     * @param message   the message now in the chat's inbox, for the wake-up; null when nothing entered the chat
     */
    public record Fired(DueTask task, String runStatus, String error, InboundMessage message, boolean done) {
    }

    /** The claim of this task waited longer than the lock timeout for a row another transaction holds; nothing was stored. */
    public static final class TaskHeldException extends RuntimeException {
        private final String taskId;

        TaskHeldException(String taskId, Throwable cause) {
            super("task " + taskId + " waited too long for its chat, held by another transaction", cause);
            this.taskId = taskId;
        }

        public String taskId() {
            return taskId;
        }
    }

    /** SQLSTATE lock_not_available: the lock timeout ran out. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";

    /**
     * A firing waits at most this long for a row someone else holds (the chat row, behind a long
     * transaction): then the claim rolls back, the task row is free again, and the next tick tries
     * once more. Without it one stuck chat would stop this scheduler's every other firing for good.
     */
    private static final String LOCK_TIMEOUT = "SET LOCAL lock_timeout = '5s'";

    private static final String CLAIM = """
            SELECT t.id, t.tenant_id, c.bot_id, t.chat_id, c.channel, c.chat_key, c.partition, t.prompt, t.kind, t.schedule_type,
                   t.schedule_value, coalesce(t.time_zone, (SELECT n.time_zone FROM tenants n WHERE n.id = t.tenant_id)) AS zone,
                   t.context_mode, t.missed_policy, t.next_run_at,
                   (SELECT n.limits ?| array['tokensPerDay', 'tokensPerMonth'] FROM tenants n WHERE n.id = t.tenant_id)
                       AS token_limited,
                   CASE WHEN t.kind = 'heartbeat' THEN (SELECT w.content FROM workspace_files w
                                                         WHERE w.tenant_id = t.tenant_id AND w.bot_id = c.bot_id
                                                           AND w.path = $2) END AS checklist
              FROM tasks t JOIN chats c ON c.id = t.chat_id
             WHERE t.status = 'active' AND t.next_run_at <= $1 AND t.id <> ALL($3)
               -- a suspended tenant's tasks wait; on resume their missed firings follow each task's missed policy
               AND EXISTS (SELECT 1 FROM tenants n WHERE n.id = t.tenant_id AND n.status = 'active')
               -- nor do the tasks of a bot being deleted
               AND EXISTS (SELECT 1 FROM bots b WHERE b.tenant_id = t.tenant_id AND b.id = c.bot_id AND b.status = 'active')
             ORDER BY t.next_run_at
             LIMIT 1
               FOR UPDATE OF t SKIP LOCKED""";

    // The run is recorded once per due time; the task moves on; the task's oldest finished runs
    // beyond $9 are dropped, so the table stays bounded however long a task lives.
    private static final String RECORD = """
            WITH run AS (
              INSERT INTO task_runs (tenant_id, task_id, due_at, inbox_id, started_at, status, error)
              VALUES ($1, $2, $3, $4, now(), $5, $6)
              ON CONFLICT (task_id, due_at) DO NOTHING
            ), task AS (
              UPDATE tasks SET next_run_at = $7, status = $8, updated_at = now() WHERE id = $2
            ), trimmed AS (
              DELETE FROM task_runs
               WHERE task_id = $2 AND status <> 'pending'
                 AND due_at <= (SELECT r.due_at FROM task_runs r WHERE r.task_id = $2 ORDER BY r.due_at DESC OFFSET $9 LIMIT 1)
            )
            SELECT 1""";

    private final Pool pool;
    private final FiringRules rules;
    private final int maxUnansweredPerChat;
    private final int keepRunsPerTask;

    /**
     * @param maxUnansweredPerChat a firing into a chat with this many unanswered messages is skipped; 0 = no limit
     * @param keepRunsPerTask      finished runs kept per task; older ones are dropped
     */
    public TaskFiringStore(Pool pool, FiringRules rules, int maxUnansweredPerChat, int keepRunsPerTask) {
        this.pool = Objects.requireNonNull(pool);
        this.rules = Objects.requireNonNull(rules);
        this.maxUnansweredPerChat = maxUnansweredPerChat;
        this.keepRunsPerTask = keepRunsPerTask;
    }

    /** {@link #fireNext(Instant, Collection)} passing over nothing. */
    public Future<Optional<Fired>> fireNext(Instant now) {
        return fireNext(now, List.of());
    }

    /**
     * Claims the earliest due time at or before {@code now} that no other scheduler holds, and
     * deals with it in one transaction.
     *
     * @param passOver tasks not to claim now (their chat was found held a moment ago)
     * @return what was done; empty when nothing is due (or everything due is held by others);
     *         failed with {@link TaskHeldException} when the claimed task's chat stayed held past the lock timeout
     */
    public Future<Optional<Fired>> fireNext(Instant now, Collection<String> passOver) {
        return fireNext(now, passOver, task -> null);
    }

    /**
     * As {@link #fireNext(Instant, Collection)}; {@code traceParent} gives the claimed task's firing the trace its
     * message carries into the chat (the scheduler's span; null: untraced).
     */
    public Future<Optional<Fired>> fireNext(Instant now, Collection<String> passOver,
                                            java.util.function.Function<DueTask, String> traceParent) {
        return pool.withTransaction(connection -> connection.query(LOCK_TIMEOUT).execute()
                .compose(set -> connection.preparedQuery(CLAIM)
                        .execute(Tuple.of(TaskStore.utc(now), Heartbeat.FILE, passOver.toArray(String[]::new))))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return Future.succeededFuture(Optional.empty());
                    }
                    Row row = rows.iterator().next();
                    DueTask task = dueTask(row);
                    return fire(connection, task, Boolean.TRUE.equals(row.getBoolean("token_limited")), now,
                            traceParent.apply(task)).<Optional<Fired>>map(Optional::of).recover(failure ->
                            Future.failedFuture(failure instanceof DatabaseException db && LOCK_NOT_AVAILABLE.equals(db.getSqlState())
                                    ? new TaskHeldException(task.id(), failure) : failure));
                }));
    }

    /**
     * Fires the task, or records why not. A tenant over a token quota ({@code tokensPerDay}, {@code tokensPerMonth}) gets
     * its firings skipped, each run saying which limit and until when, as a chat message over quota is not sent to a
     * model: the task itself goes on to its next due time.
     */
    private Future<Fired> fire(SqlConnection connection, DueTask task, boolean tokenLimited, Instant now,
                               String traceParent) {
        Decision decision = rules.decide(task, now);
        if (!decision.fires()) {
            return record(connection, task, decision, new Fired(task, decision.runStatus(), decision.reason(), null,
                    decision.done()));
        }
        if (tokenLimited) {
            return QuotaStore.tokens(connection, task.tenantId(), now).compose(tokens -> {
                QuotaStore.Exceeded over = tokens.exceeded();
                return over == null ? enter(connection, task, decision, traceParent)
                        : record(connection, task, decision, new Fired(task, "skipped", "this tenant has used "
                                + over.used() + " model tokens, its limit '" + over.limit() + "' is " + over.max()
                                + " until " + over.resetsAt() + "; this firing was skipped", null, decision.done()));
            });
        }
        return enter(connection, task, decision, traceParent);
    }

    /** Puts the firing into its chat's inbox (unless the chat's backlog is full) and records the run. */
    private Future<Fired> enter(SqlConnection connection, DueTask task, Decision decision, String traceParent) {
        InboxStore.Intake intake = new InboxStore.Intake(task.tenantId(), task.botId(), task.channel(), task.chatKey(), task.partition(),
                task.idempotencyKey(), "task:" + task.id(), InboundMessage.KIND_TASK, decision.text(), null,
                maxUnansweredPerChat, null, task.contextMode(), null, traceParent);
        return InboxStore.accept(connection, intake).compose(accepted -> {
            Fired fired = accepted.outcome() == InboxStore.Outcome.BACKLOG_FULL
                    ? new Fired(task, "skipped", "the chat already has " + maxUnansweredPerChat
                            + " unanswered messages; this firing was skipped", null, decision.done())
                    : new Fired(task, "pending", null, accepted.message(), decision.done());
            return record(connection, task, decision, fired);
        });
    }

    private Future<Fired> record(SqlConnection connection, DueTask task, Decision decision, Fired fired) {
        Tuple params = Tuple.tuple().addString(task.tenantId()).addString(task.id()).addValue(TaskStore.utc(task.dueAt()))
                .addValue(fired.message() == null ? null : fired.message().id()).addString(fired.runStatus())
                .addString(fired.error()).addValue(TaskStore.utc(decision.nextRunAt()))
                .addString(decision.done() ? "done" : "active").addInteger(keepRunsPerTask);
        return connection.preparedQuery(RECORD).execute(params).map(fired);
    }

    private static DueTask dueTask(Row row) {
        return new DueTask(row.getString("id"), row.getString("tenant_id"), row.getLong("chat_id"), row.getString("channel"),
                row.getString("chat_key"), row.getInteger("partition"), row.getString("prompt"), row.getString("kind"),
                row.getString("schedule_type"), row.getString("schedule_value"), row.getString("zone"),
                row.getString("context_mode"), row.getString("missed_policy"), TaskStore.instant(row, "next_run_at"),
                row.getString("checklist"), row.getString("bot_id"));
    }
}
