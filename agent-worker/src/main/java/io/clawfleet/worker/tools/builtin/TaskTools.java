package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.schedule.ScheduleException;
import io.clawfleet.shared.schedule.TaskDefinition;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.TaskLimitException;
import io.clawfleet.shared.store.TaskStateException;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.ChatTargets;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Objects;

/**
 * {@code tasks_schedule(prompt, schedule_type, schedule_value, context_mode)}, {@code tasks_list()}
 * and {@code tasks_update(task_id, status)} (seed 000 §10, §12.2): a chat manages its own tasks,
 * an admin chat any chat's of its tenant ({@code chat_id}). A task made by a turn has an id derived
 * from the turn and the call, so a turn run again after a crash does not make a second one.
 */
public final class TaskTools {

    private static final int LIST_LIMIT = 100;
    private static final int PREVIEW = 80;

    private final TaskStore tasks;
    private final ChatStore chats;
    private final ClawfleetConfig.Scheduler config;

    public TaskTools(TaskStore tasks, ChatStore chats, ClawfleetConfig.Scheduler config) {
        this.tasks = Objects.requireNonNull(tasks);
        this.chats = Objects.requireNonNull(chats);
        this.config = Objects.requireNonNull(config);
    }

    public List<Tool> tools() {
        return List.of(new ScheduleTask(), new ListTasks(), new UpdateTask());
    }

    /** The chat a call is about: its own, or for an admin the one {@code chat_id} names. */
    private Future<Long> targetChat(ToolCallContext ctx, String reference) {
        if (reference == null || reference.isBlank()) {
            return Future.succeededFuture(ctx.chatId());
        }
        ChatTargets.Target target = ChatTargets.parse(reference, ctx.channel());
        if (target.isCaller(ctx)) {
            return Future.succeededFuture(ctx.chatId());
        }
        if (!ctx.admin()) {
            return Future.failedFuture(ToolException.denied("managing another chat's tasks is only allowed in an admin chat"));
        }
        return chats.find(ctx.bot(), target.channel(), target.chatKey()).compose(found -> found.isPresent()
                ? Future.succeededFuture(found.get().id())
                : Future.failedFuture(ToolException.error("no chat '" + target.chatKey() + "' on channel " + target.channel()
                        + " (a chat exists once it has sent a message)")));
    }

    private static String describe(TaskStore.Task task) {
        String schedule = switch (task.scheduleType()) {
            case "cron" -> "cron '" + task.scheduleValue() + "' in " + task.timeZone();
            case "interval" -> "every " + task.scheduleValue() + " ms";
            default -> "once at " + task.scheduleValue();
        };
        String next = task.nextRunAt() == null ? "no next run"
                : "next " + ZonedDateTime.ofInstant(task.nextRunAt(), ZoneId.of(task.timeZone() == null ? "UTC" : task.timeZone())).toOffsetDateTime();
        String what = "heartbeat".equals(task.kind()) ? "heartbeat (HEARTBEAT.md)" : preview(task.prompt());
        return task.id() + ": " + task.status() + ", " + schedule + ", " + next + ", " + task.contextMode() + " context, "
                + what + " [chat " + task.chatKey() + "]";
    }

    private static String preview(String prompt) {
        String line = prompt.replace('\n', ' ');
        return "\"" + (line.length() <= PREVIEW ? line : line.substring(0, PREVIEW) + "...") + "\"";
    }

    private static Throwable refusal(Throwable failure) {
        if (failure instanceof ScheduleException e) {
            return ToolException.invalid(e.getMessage());
        }
        if (failure instanceof TaskLimitException || failure instanceof TaskStateException) {
            return ToolException.error(failure.getMessage());
        }
        return failure;
    }

    private final class ScheduleTask implements Tool {
        @Override
        public String name() {
            return "tasks_schedule";
        }

        @Override
        public ToolDefinition definition() {
            ToolDefinition definition = Schemas.tool(name(), "Schedule a task that messages this chat later "
                            + "(a heartbeat needs no schedule: every " + config.heartbeatIntervalMs() / 60_000 + " min).",
                    Schemas.required(), "prompt", "what to do then",
                    "schedule_type", null,
                    "schedule_value", "cron (5 fields, or 6 with seconds), interval ms, or ISO-8601 time with offset",
                    "context_mode", "default group (with history)",
                    "time_zone", "IANA zone for cron, default the tenant's",
                    "missed_policy", "after downtime; default fire_once",
                    "kind", "heartbeat checks HEARTBEAT.md",
                    "chat_id", "another chat (admin)");
            Schemas.withEnum(definition, "schedule_type", "cron", "interval", "once");
            Schemas.withEnum(definition, "context_mode", "group", "isolated");
            Schemas.withEnum(definition, "missed_policy", "fire_once", "skip");
            return Schemas.withEnum(definition, "kind", "prompt", "heartbeat");
        }

        @Override
        public boolean mutating() {
            return true;
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            String id = "t-" + ctx.inboxId() + "-" + ctx.callIndex();
            return targetChat(ctx, args.getString("chat_id"))
                    .compose(chatId -> tasks.tenantZone(ctx.tenantId()).compose(zone -> {
                        TaskDefinition definition = define(args, zone);
                        return tasks.create(id, ctx.tenantId(), chatId, definition, config.maxTasksPerTenant(),
                                config.maxTasksPerChat());
                    }))
                    .map(created -> "Scheduled " + describe(created.task()) + ".")
                    .recover(failure -> Future.failedFuture(refusal(failure)));
        }

        private TaskDefinition define(JsonObject args, String tenantZone) {
            String type = args.getString("schedule_type");
            String value = args.getString("schedule_value");
            boolean heartbeat = TaskDefinition.HEARTBEAT.equals(args.getString("kind"));
            if (heartbeat && type == null && value == null) {
                type = "interval";
                value = Long.toString(config.heartbeatIntervalMs());
            }
            return TaskDefinition.of(args.getString("prompt"), args.getString("kind"), type, value, args.getString("time_zone"),
                    tenantZone, args.getString("context_mode"), args.getString("missed_policy"), Instant.now())
                    .requireMinInterval(config.minIntervalMs());
        }
    }

    private final class ListTasks implements Tool {
        @Override
        public String name() {
            return "tasks_list";
        }

        @Override
        public ToolDefinition definition() {
            return Schemas.tool(name(), "List this chat's tasks (admin: all, or chat_id's).",
                    Schemas.required(), "chat_id", null);
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            String reference = args.getString("chat_id");
            Future<Long> scope = ctx.admin() && (reference == null || reference.isBlank())
                    ? Future.succeededFuture(null) : targetChat(ctx, reference);
            return scope.compose(chatId -> tasks.list(ctx.bot(), chatId, null, LIST_LIMIT)).map(found -> {
                if (found.isEmpty()) {
                    return "No scheduled tasks.";
                }
                StringBuilder out = new StringBuilder();
                found.forEach(task -> out.append(describe(task)).append('\n'));
                return out.toString().strip();
            });
        }
    }

    private final class UpdateTask implements Tool {
        @Override
        public String name() {
            return "tasks_update";
        }

        @Override
        public ToolDefinition definition() {
            return Schemas.withEnum(Schemas.tool(name(), "Pause, resume (active), finish (done) or delete a task.",
                    Schemas.required("task_id", "status"), "task_id", null, "status", null), "status", "active", "paused", "done", "deleted");
        }

        @Override
        public boolean mutating() {
            return true;
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            String taskId = args.getString("task_id");
            String status = args.getString("status");
            return tasks.get(ctx.bot(), taskId).compose(found -> {
                if (found.isEmpty()) {
                    return Future.failedFuture(ToolException.error("no task '" + taskId + "'; tasks_list shows the ids"));
                }
                if (found.get().chatId() != ctx.chatId() && !ctx.admin()) {
                    return Future.failedFuture(ToolException.denied("task " + taskId
                            + " belongs to another chat; only an admin chat may change it"));
                }
                if ("deleted".equals(status)) {
                    return tasks.delete(ctx.bot(), taskId).map(v -> "Task " + taskId + " is deleted.");
                }
                return tasks.setStatus(ctx.bot(), taskId, status).map(task -> "Task " + describe(task.orElseThrow()) + ".");
            }).recover(failure -> Future.failedFuture(refusal(failure)));
        }
    }
}
