package io.clawfleet.shared.store;

import io.clawfleet.shared.schedule.TaskDefinition;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Scheduled tasks and their runs as chats, tools and the HTTP API see them (seed 000 §10–11):
 * defining a task, listing, pausing, resuming, finishing and deleting it, reading its runs. The
 * scheduler's side, firing due tasks, is {@link TaskFiringStore}.
 */
public final class TaskStore {

    /** A task with the chat it belongs to. {@code nextRunAt} is null once the task is done. */
    public record Task(String id, String tenantId, long chatId, String channel, String chatKey, String prompt, String kind,
                       String scheduleType, String scheduleValue, String timeZone, String contextMode,
                       String missedPolicy, String status, Instant nextRunAt, Instant createdAt, Instant updatedAt) {
    }

    /**
     * One due time of a task and what became of it.
     *
     * @param startedAt  when the firing entered the chat's inbox (or was skipped)
     * @param durationMs from {@code startedAt} to the commit of the turn that answered it
     * @param status     pending (in the chat, not answered yet), success, error or skipped
     */
    public record Run(long id, String taskId, Instant dueAt, Long inboxId, Instant startedAt, Integer durationMs,
                      String status, String resultPreview, String error) {
    }

    /** A task as {@link #create} left it: new, or the one that already had its id. */
    public record Created(Task task, boolean created) {
    }

    private static final String COLUMNS = """
            t.id, t.tenant_id, t.chat_id, c.channel, c.chat_key, t.prompt, t.kind, t.schedule_type, t.schedule_value,
            t.time_zone, t.context_mode, t.missed_policy, t.status, t.next_run_at, t.created_at, t.updated_at""";

    // A task id already known returns that task and changes nothing (a turn re-run after a crash);
    // a tenant with $12 tasks that are not done, or a chat with $13, gets none more. The caller holds
    // the tenant row's lock (LOCK_TENANT), so the counts see every creation committed before it.
    private static final String CREATE = """
            WITH existing AS (
              SELECT * FROM tasks WHERE id = $1 AND tenant_id = $2
            ), ins AS (
              INSERT INTO tasks (id, tenant_id, chat_id, prompt, kind, schedule_type, schedule_value, time_zone,
                                 context_mode, missed_policy, next_run_at)
              SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
               WHERE NOT EXISTS (SELECT 1 FROM existing)
                 AND (SELECT count(*) FROM tasks WHERE tenant_id = $2 AND status <> 'done') < $12
                 AND (SELECT count(*) FROM tasks WHERE tenant_id = $2 AND chat_id = $3 AND status <> 'done') < $13
              ON CONFLICT (id) DO NOTHING
              RETURNING *
            ), t AS (
              SELECT *, true AS created FROM ins UNION ALL SELECT *, false AS created FROM existing
            )
            SELECT %s, t.created FROM t JOIN chats c ON c.id = t.chat_id""".formatted(COLUMNS);

    // Creations of one tenant take turns: a count read in one statement and an insert in another
    // cannot both pass a limit. FOR NO KEY UPDATE does not block inserts that reference the tenant.
    private static final String LOCK_TENANT = "SELECT (limits ->> 'tasks')::int AS lim FROM tenants WHERE id = $1 FOR NO KEY UPDATE";
    private static final String COUNT_CHAT = "SELECT count(*) FROM tasks WHERE tenant_id = $1 AND chat_id = $2 AND status <> 'done'";

    private static final String SELECT = "SELECT " + COLUMNS + " FROM tasks t JOIN chats c ON c.id = t.chat_id ";

    private final Pool pool;

    public TaskStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** The tenant's time zone, the default of its cron tasks; UTC when the tenant is unknown. */
    public Future<String> tenantZone(String tenantId) {
        return pool.preparedQuery("SELECT time_zone FROM tenants WHERE id = $1").execute(Tuple.of(tenantId))
                .map(rows -> rows.size() == 0 ? "UTC" : rows.iterator().next().getString("time_zone"));
    }

    /** {@link #create(String, String, long, TaskDefinition, int, int)} without a limit per chat. */
    public Future<Created> create(String id, String tenantId, long chatId, TaskDefinition definition, int maxPerTenant) {
        return create(id, tenantId, chatId, definition, maxPerTenant, Integer.MAX_VALUE);
    }

    /**
     * Stores a checked task for a chat, first due at {@code definition.firstRun()}. Idempotent on
     * {@code id}. Fails with {@link TaskLimitException} when the tenant has {@code maxPerTenant} tasks
     * that are not done, or the chat {@code maxPerChat}; both are exact under concurrent creations.
     */
    public Future<Created> create(String id, String tenantId, long chatId, TaskDefinition definition, int maxPerTenant,
                                  int maxPerChat) {
        int[] max = {maxPerTenant};
        return pool.withTransaction(conn -> conn.preparedQuery(LOCK_TENANT).execute(Tuple.of(tenantId))
                .compose(locked -> {
                    // the tenant's own limit 'tasks', when the operator set one, replaces the node's default
                    Integer own = locked.size() == 0 ? null : locked.iterator().next().getInteger("lim");
                    max[0] = own == null ? maxPerTenant : own;
                    Tuple params = Tuple.tuple().addString(id).addString(tenantId).addLong(chatId).addString(definition.prompt())
                            .addString(definition.kind()).addString(definition.schedule().type())
                            .addString(definition.schedule().value()).addString(definition.timeZone())
                            .addString(definition.contextMode()).addString(definition.missedPolicy())
                            .addValue(utc(definition.firstRun())).addInteger(max[0]).addInteger(maxPerChat);
                    return conn.preparedQuery(CREATE).execute(params);
                })
                .compose(rows -> {
                    if (rows.size() > 0) {
                        Row row = rows.iterator().next();
                        return Future.succeededFuture(new Created(task(row), row.getBoolean("created")));
                    }
                    return conn.preparedQuery(COUNT_CHAT).execute(Tuple.of(tenantId, chatId)).map(count -> {
                        if (count.iterator().next().getLong(0) >= maxPerChat) {
                            throw new TaskLimitException(TaskLimitException.Scope.CHAT, "this chat already has " + maxPerChat
                                    + " tasks that are not done; delete or finish some of them first");
                        }
                        throw new TaskLimitException("this tenant already has " + max[0]
                                + " tasks that are not done (its limit 'tasks'); delete or finish some first");
                    });
                }));
    }

    public Future<Optional<Task>> get(BotRef bot, String taskId) {
        return pool.preparedQuery(SELECT + "WHERE t.tenant_id = $1 AND t.id = $2 AND c.bot_id = $3")
                .execute(Tuple.of(bot.tenantId(), taskId, bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(task(rows.iterator().next())));
    }

    /**
     * The bot's tasks, oldest first, at most {@code limit}.
     *
     * @param chatId only this chat's tasks; null for every chat of the bot
     * @param status only tasks in this status; null for all
     */
    public Future<List<Task>> list(BotRef bot, Long chatId, String status, int limit) {
        String sql = SELECT + """
                WHERE t.tenant_id = $1 AND c.bot_id = $5 AND ($2::bigint IS NULL OR t.chat_id = $2)
                  AND ($3::text IS NULL OR t.status = $3)
                ORDER BY t.created_at, t.id LIMIT $4""";
        return pool.preparedQuery(sql).execute(Tuple.of(bot.tenantId(), chatId, status, limit, bot.botId())).map(TaskStore::tasks);
    }

    /**
     * Pauses ({@code paused}), resumes ({@code active}) or finishes ({@code done}) a task. A due
     * time that passed while the task was paused is treated as missed (its missed policy applies).
     * Fails with {@link TaskStateException} when a done task would be paused or resumed.
     *
     * @return the task as changed; empty when the bot has no such task
     */
    public Future<Optional<Task>> setStatus(BotRef bot, String taskId, String status) {
        String sql = """
                WITH t AS (
                  UPDATE tasks SET status = $3, updated_at = now(),
                         next_run_at = CASE WHEN $3 = 'done' THEN NULL ELSE next_run_at END
                   WHERE tenant_id = $1 AND id = $2 AND (status <> 'done' OR $3 = 'done')
                     AND chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $4)
                  RETURNING *
                )
                SELECT %s FROM t JOIN chats c ON c.id = t.chat_id""".formatted(COLUMNS);
        return pool.preparedQuery(sql).execute(Tuple.of(bot.tenantId(), taskId, status, bot.botId())).compose(rows -> {
            if (rows.size() > 0) {
                return Future.succeededFuture(Optional.of(task(rows.iterator().next())));
            }
            return get(bot, taskId).map(found -> {
                if (found.isPresent()) {
                    throw new TaskStateException("task " + taskId + " is done and cannot be " + status
                            + " again; schedule a new task instead");
                }
                return Optional.empty();
            });
        });
    }

    /** Deletes a task and its runs; false when the bot has no such task. */
    public Future<Boolean> delete(BotRef bot, String taskId) {
        return pool.preparedQuery("""
                        DELETE FROM tasks WHERE tenant_id = $1 AND id = $2
                           AND chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $3)""")
                .execute(Tuple.of(bot.tenantId(), taskId, bot.botId()))
                .map(rows -> rows.rowCount() == 1);
    }

    /** A task's most recent runs, newest first. */
    public Future<List<Run>> runs(BotRef bot, String taskId, int limit) {
        String sql = """
                SELECT id, task_id, due_at, inbox_id, started_at, duration_ms, status, result_preview, error FROM task_runs
                 WHERE tenant_id = $1 AND task_id = $2
                   AND task_id IN (SELECT t.id FROM tasks t JOIN chats c ON c.id = t.chat_id
                                    WHERE t.tenant_id = $1 AND t.id = $2 AND c.bot_id = $4)
                 ORDER BY due_at DESC LIMIT $3""";
        return pool.preparedQuery(sql).execute(Tuple.of(bot.tenantId(), taskId, limit, bot.botId())).map(rows -> {
            List<Run> out = new ArrayList<>(rows.size());
            for (Row row : rows) {
                out.add(new Run(row.getLong("id"), row.getString("task_id"), instant(row, "due_at"), row.getLong("inbox_id"),
                        instant(row, "started_at"), row.getInteger("duration_ms"), row.getString("status"),
                        row.getString("result_preview"), row.getString("error")));
            }
            return out;
        });
    }

    private static List<Task> tasks(RowSet<Row> rows) {
        List<Task> out = new ArrayList<>(rows.size());
        rows.forEach(row -> out.add(task(row)));
        return out;
    }

    private static Task task(Row row) {
        return new Task(row.getString("id"), row.getString("tenant_id"), row.getLong("chat_id"), row.getString("channel"),
                row.getString("chat_key"), row.getString("prompt"), row.getString("kind"), row.getString("schedule_type"),
                row.getString("schedule_value"), row.getString("time_zone"), row.getString("context_mode"),
                row.getString("missed_policy"), row.getString("status"), instant(row, "next_run_at"),
                instant(row, "created_at"), instant(row, "updated_at"));
    }

    static OffsetDateTime utc(Instant instant) {
        return instant == null ? null : OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }

    static Instant instant(Row row, String column) {
        OffsetDateTime value = row.getOffsetDateTime(column);
        return value == null ? null : value.toInstant();
    }
}
