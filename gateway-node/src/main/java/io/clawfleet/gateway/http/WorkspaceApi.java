package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.store.WorkspaceLimitException;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.workspace.SkillParser;
import io.clawfleet.shared.workspace.WorkspaceEvents;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The tenant's workspace over HTTP: {@code GET /api/v1/workspace} lists it, and
 * {@code GET|PUT|DELETE /api/v1/workspace/files/<path>} read, write and delete one file. A PUT with
 * a {@code version} writes only over that version (0: only a new file), else 409; a write that would grow the
 * tenant's files past its {@code storageBytes} limit is 409 {@code limit_reached}. Every change is
 * announced with a {@link io.clawfleet.shared.message.WorkspaceChanged} notice. The tenant's
 * default files are seeded before its workspace is first served.
 */
public final class WorkspaceApi {

    /** The path of a file follows this prefix, slashes and all. */
    public static final String FILES = "/api/v1/workspace/files/";
    private static final Set<String> FIELDS = Set.of("content", "version");
    private static final Logger LOG = LoggerFactory.getLogger(WorkspaceApi.class);

    private final WorkspaceStore store;
    private final EventBus bus;

    public WorkspaceApi(WorkspaceStore store, EventBus bus) {
        this.store = Objects.requireNonNull(store);
        this.bus = Objects.requireNonNull(bus);
    }

    /**
     * The body limit of a PUT: room for a file of the largest size even when JSON escaping doubles
     * it (newlines, quotes), and never less than the node's general limit.
     */
    public static long maxBodyBytes(long generalLimit) {
        return Math.max(generalLimit, 2L * WorkspaceStore.MAX_FILE_BYTES + 64 * 1024);
    }

    /** Seeds the bot's default files if that was never done, and announces those it seeded. */
    public Future<Void> ensureDefaults(BotRef bot) {
        return store.seedDefaults(bot).map(seeded -> {
            if (!seeded.isEmpty()) {
                LOG.info("workspace defaults seeded [tenant: {}, bot: {}, files: {}]", bot.tenantId(), bot.botId(), seeded.size());
                seeded.forEach(path -> WorkspaceEvents.publish(bus, bot, path));
            }
            return null;
        });
    }

    public void list(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        ensureDefaults(bot).compose(v -> store.entries(bot, "")).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the workspace cannot be listed"));
                return;
            }
            JsonArray files = new JsonArray();
            result.result().forEach(entry -> files.add(new JsonObject()
                    .put("path", entry.path())
                    .put("size", entry.size())
                    .put("version", entry.version())
                    .put("updatedAt", entry.updatedAt().toString())
                    .put("sha256", entry.sha256())));
            ctx.json(new JsonObject().put("files", files));
        });
    }

    public void read(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String path = path(ctx);
        ensureDefaults(bot).compose(v -> store.read(bot, path)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the file cannot be read"));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no file '" + path + "' in the workspace"));
            } else {
                WorkspaceFile file = result.result().get();
                ctx.json(new JsonObject().put("path", file.path()).put("content", file.content())
                        .put("version", file.version()).put("updatedAt", file.updatedAt().toString()));
            }
        });
    }

    public void write(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String path = path(ctx);
        JsonRequest body = JsonRequest.parse(ctx, FIELDS);
        Object raw = body.json().getValue("content");
        if (raw == null) {
            throw ApiException.badRequest("missing required field 'content' (a string; \"\" for an empty file)");
        }
        String content = JsonRequest.checkString("content", raw, Integer.MAX_VALUE, true);
        Long version = version(body.json().getValue("version"));
        if (WorkspacePaths.isSkillFile(path)) {
            try {
                SkillParser.parse(path, content);
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, "invalid_skill", e.getMessage());
            }
        }
        ensureDefaults(bot)
                .compose(v -> version == null
                        ? store.write(bot, path, content).map(Optional::of)
                        : store.writeIfVersion(bot, path, content, version))
                .compose(written -> written.isPresent() ? Future.succeededFuture(written.get()) : conflict(bot, path, version))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(result.cause(), "the file cannot be written"));
                        return;
                    }
                    WorkspaceFile file = result.result();
                    WorkspaceEvents.publish(bus, bot, file.path());
                    ctx.response().setStatusCode(file.version() == 1 ? 201 : 200).putHeader("content-type", "application/json")
                            .end(new JsonObject().put("path", file.path()).put("version", file.version()).encode());
                });
    }

    public void delete(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String path = path(ctx);
        // Seeding first: a default deleted before the seed would otherwise come back with it.
        ensureDefaults(bot).compose(v -> store.delete(bot, path)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(result.cause(), "the file cannot be deleted"));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no file '" + path + "' in the workspace"));
            } else {
                WorkspaceEvents.publish(bus, bot, path);
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private Future<WorkspaceFile> conflict(BotRef bot, String path, long expected) {
        return store.read(bot, path).compose(current -> Future.failedFuture(new ApiException(409, "conflict",
                current.map(file -> "'" + path + "' is at version " + file.version() + ", not " + expected
                                + "; read it again, then write with the new version")
                        .orElse(expected == 0 ? "'" + path + "' was created meanwhile"
                                : "'" + path + "' does not exist (any more); write it with version 0 to create it"))));
    }

    /** The normalized file path after {@value #FILES}; 400 naming the problem when it is not a valid workspace path. */
    private static String path(RoutingContext ctx) {
        String raw = ctx.pathParam("*");
        try {
            return WorkspacePaths.normalize(raw);
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "invalid_path", e.getMessage());
        }
    }

    private static Long version(Object value) {
        if (value == null) {
            return null;
        }
        if ((value instanceof Integer || value instanceof Long) && ((Number) value).longValue() >= 0) {
            return ((Number) value).longValue();
        }
        throw ApiException.badRequest("field 'version' must be a whole number: the version you read, or 0 to create a new file only; got "
                + JsonRequest.kind(value) + (value instanceof Number ? " " + value : ""));
    }

    private static Throwable failure(Throwable cause, String what) {
        if (GatewayErrors.answered(cause)) {
            return cause;
        }
        if (cause instanceof WorkspaceLimitException) {
            return new ApiException(413, "limit_exceeded", cause.getMessage());
        }
        if (cause instanceof IllegalArgumentException) {
            return ApiException.badRequest(cause.getMessage());
        }
        return ApiException.unavailable(what, cause, 1);
    }
}
