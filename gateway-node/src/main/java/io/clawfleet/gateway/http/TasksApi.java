package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.schedule.ScheduleException;
import io.clawfleet.shared.schedule.TaskDefinition;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.TaskLimitException;
import io.clawfleet.shared.store.TaskStateException;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.time.Instant;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * A tenant's scheduled tasks over HTTP ({@code /api/v1/tasks}): list, create, read, pause or
 * resume or finish ({@code PATCH {"status"}}), delete, and a task's runs. The tenant is the API
 * key's, and may manage the tasks of any of its chats. A create with an {@code Idempotency-Key}
 * header is stored once however often it is retried.
 */
public final class TasksApi {

    private static final Set<String> CREATE_FIELDS = Set.of("chatId", "channel", "prompt", "scheduleType", "scheduleValue",
            "contextMode", "timeZone", "missedPolicy", "kind");
    private static final Set<String> STATUSES = Set.of("active", "paused", "done");

    private final TaskStore tasks;
    private final ChatStore chats;
    private final ClawfleetConfig.Scheduler config;

    public TasksApi(TaskStore tasks, ChatStore chats, ClawfleetConfig.Scheduler config) {
        this.tasks = Objects.requireNonNull(tasks);
        this.chats = Objects.requireNonNull(chats);
        this.config = Objects.requireNonNull(config);
    }

    /** {@code GET /api/v1/tasks?chatId=&channel=&status=&limit=}. */
    public void list(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String status = ctx.request().getParam("status");
        if (status != null && !STATUSES.contains(status)) {
            throw ApiException.badRequest("query parameter 'status' must be active, paused or done, got '" + status + "'");
        }
        int limit = (int) MessagesApi.queryLong(ctx, "limit", 100, 1, 1_000);
        String chatKey = ctx.request().getParam("chatId");
        Future<Long> chat = chatKey == null ? Future.succeededFuture(null)
                : chats.find(bot, ctx.request().getParam("channel", MessagesApi.CHANNEL), chatKey)
                        .map(found -> found.map(ChatStore.Chat::id).orElse(-1L));
        chat.compose(chatId -> tasks.list(bot, chatId, status, limit)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "tasks cannot be read"));
                return;
            }
            JsonArray items = new JsonArray();
            result.result().forEach(task -> items.add(json(task)));
            ctx.json(new JsonObject().put("tasks", items));
        });
    }

    /** {@code POST /api/v1/tasks}: 201 with the task; 200 with the same task when the Idempotency-Key was seen. */
    public void create(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String tenantId = bot.tenantId();
        JsonRequest body = JsonRequest.parse(ctx, CREATE_FIELDS);
        String chatKey = body.requiredString("chatId", 256);
        String channel = body.optionalString("channel", 32);
        String id = taskId(bot, ctx.request().getHeader("idempotency-key"));
        HttpAudit.chat(ctx, channel == null ? MessagesApi.CHANNEL : channel, chatKey);
        chats.find(bot, channel == null ? MessagesApi.CHANNEL : channel, chatKey)
                .compose(found -> found.isPresent() ? Future.succeededFuture(found.get())
                        : Future.failedFuture(ApiException.notFound("no chat '" + chatKey + "' on channel "
                                + (channel == null ? MessagesApi.CHANNEL : channel) + " (a chat exists once it has sent a message)")))
                .compose(found -> tasks.tenantZone(tenantId)
                        .compose(zone -> tasks.create(id, tenantId, found.id(), define(body, zone), config.maxTasksPerTenant(),
                                config.maxTasksPerChat())))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(result.cause(), "the task cannot be stored"));
                        return;
                    }
                    ctx.response().setStatusCode(result.result().created() ? 201 : 200)
                            .putHeader("content-type", "application/json").end(json(result.result().task()).encode());
                });
    }

    /** {@code GET /api/v1/tasks/{id}}. */
    public void get(RoutingContext ctx) {
        String taskId = ctx.pathParam("id");
        tasks.get(BotScope.bot(ctx), taskId).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the task cannot be read"));
            } else if (result.result().isEmpty()) {
                ctx.fail(notFound(taskId));
            } else {
                ctx.json(json(result.result().get()));
            }
        });
    }

    /** {@code PATCH /api/v1/tasks/{id}} with {@code {"status": "paused" | "active" | "done"}}. */
    public void update(RoutingContext ctx) {
        String taskId = ctx.pathParam("id");
        String status = JsonRequest.parse(ctx, Set.of("status")).requiredString("status", 16);
        if (!STATUSES.contains(status)) {
            throw ApiException.badRequest("field 'status' must be active (resume), paused or done, got '" + status + "'");
        }
        tasks.setStatus(BotScope.bot(ctx), taskId, status).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the task cannot be changed"));
            } else if (result.result().isEmpty()) {
                ctx.fail(notFound(taskId));
            } else {
                ctx.json(json(result.result().get()));
            }
        });
    }

    /** {@code DELETE /api/v1/tasks/{id}}: the task and its runs. */
    public void delete(RoutingContext ctx) {
        String taskId = ctx.pathParam("id");
        tasks.delete(BotScope.bot(ctx), taskId).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the task cannot be deleted"));
            } else if (!result.result()) {
                ctx.fail(notFound(taskId));
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    /** {@code GET /api/v1/tasks/{id}/runs?limit=}: newest first. */
    public void runs(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String taskId = ctx.pathParam("id");
        int limit = (int) MessagesApi.queryLong(ctx, "limit", 100, 1, 1_000);
        tasks.get(bot, taskId).compose(found -> found.isEmpty() ? Future.failedFuture(notFound(taskId))
                : tasks.runs(bot, taskId, limit)).onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(result.cause(), "the runs cannot be read"));
                        return;
                    }
                    JsonArray items = new JsonArray();
                    result.result().forEach(run -> items.add(json(run)));
                    ctx.json(new JsonObject().put("runs", items));
                });
    }

    private TaskDefinition define(JsonRequest body, String tenantZone) {
        String kind = body.optionalString("kind", 16);
        String type = body.optionalString("scheduleType", 16);
        String value = body.optionalString("scheduleValue", 256);
        if (TaskDefinition.HEARTBEAT.equals(kind) && type == null && value == null) {
            type = "interval";
            value = Long.toString(config.heartbeatIntervalMs());
        }
        return TaskDefinition.of(body.optionalString("prompt", TaskDefinition.MAX_PROMPT_CHARS + 1), kind, type, value,
                body.optionalString("timeZone", 64), tenantZone, body.optionalString("contextMode", 16),
                body.optionalString("missedPolicy", 16), Instant.now()).requireMinInterval(config.minIntervalMs());
    }

    /** A retried create with the same key gets the same id, scoped to the tenant; without a key, a new id. */
    private static String taskId(BotRef bot, String idempotencyKey) {
        // the default bot keeps the ids it made before bots existed (a retry across an upgrade finds its task)
        String tenantId = bot.isMain() ? bot.tenantId() : bot.tenantId() + '\u0000' + bot.botId();
        if (idempotencyKey == null || idempotencyKey.isBlank()) {
            return "t-" + UUID.randomUUID();
        }
        return "t-" + TenantStore.hashKey(tenantId + '\u0000' + idempotencyKey).substring(0, 32);
    }

    private static ApiException notFound(String taskId) {
        return ApiException.notFound("no task '" + taskId + "' for this tenant");
    }

    private static Throwable failure(Throwable cause, String what) {
        return switch (cause) {
            case ApiException api -> api;
            case ScheduleException bad -> ApiException.badRequest(camel(bad.field()) + bad.getMessage().substring(bad.field().length()));
            case TaskLimitException limit -> new ApiException(409, limit.scope().code(), limit.getMessage());
            case TaskStateException state -> new ApiException(409, "conflict", state.getMessage());
            default -> ApiException.unavailable(what, cause, 1);
        };
    }

    /** The JSON name of a task field: {@code schedule_value} is {@code scheduleValue}. */
    static String camel(String field) {
        StringBuilder out = new StringBuilder();
        boolean upper = false;
        for (char c : field.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }

    public static JsonObject json(TaskStore.Task task) {
        return new JsonObject().put("id", task.id()).put("chatId", task.chatKey()).put("channel", task.channel())
                .put("kind", task.kind()).put("prompt", task.prompt()).put("scheduleType", task.scheduleType())
                .put("scheduleValue", task.scheduleValue()).put("timeZone", task.timeZone())
                .put("contextMode", task.contextMode()).put("missedPolicy", task.missedPolicy()).put("status", task.status())
                .put("nextRunAt", text(task.nextRunAt())).put("createdAt", text(task.createdAt()))
                .put("updatedAt", text(task.updatedAt()));
    }

    public static JsonObject json(TaskStore.Run run) {
        return new JsonObject().put("id", run.id()).put("dueAt", text(run.dueAt())).put("inboxId", run.inboxId() == null
                        ? null : Long.toString(run.inboxId())).put("startedAt", text(run.startedAt()))
                .put("durationMs", run.durationMs()).put("status", run.status()).put("resultPreview", run.resultPreview())
                .put("error", run.error());
    }

    private static String text(Instant instant) {
        return instant == null ? null : instant.toString();
    }
}
