package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.TenantDeletionStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A tenant's bots (issue 13). Each owns its workspace, settings, channels, tasks and chats; every bot route
 * ({@code /api/v1/bots/{botId}/...}) works on one, and the same routes without the prefix on the default bot
 * {@value BotRef#MAIN}.
 * <pre>
 * POST   /api/v1/bots                   {"id", "name"?, "settings"?} -> 201 {"bot":{...}}     (admin, every bot)
 * GET    /api/v1/bots?limit=&cursor=    -> {"bots":[...], "nextCursor"}  (a key limited to bots sees those)
 * GET    /api/v1/bots/{botId}           -> {"bot":{...}}
 * PATCH  /api/v1/bots/{botId}           {"name"?, "settings"?} -> {"bot":{...}}
 * DELETE /api/v1/bots/{botId}           -> 202 {"deletion":{...}} (200 once done); main: 409
 * GET    /api/v1/bot-deletions/{botId}  -> {"deletion":{...}}: progress, also once the bot is gone
 * </pre>
 * A bot's deletion removes its chats (with their messages, inbox, outbox), tasks, workspace and channels in
 * small batches, like a tenant's; its usage and audit rows stay with the tenant.
 */
public final class BotsApi {

    private static final Logger LOG = LoggerFactory.getLogger(BotsApi.class);
    private static final Set<String> CREATE_FIELDS = Set.of("id", "name", "settings");
    private static final Set<String> PATCH_FIELDS = Set.of("name", "settings");
    private static final int DEFAULT_LIMIT = 100;
    private static final int MAX_LIMIT = 1_000;

    private final BotStore bots;
    private final TenantDeletionStore deletions;
    private final Function<BotRef, Future<?>> furnish;
    private final Consumer<String> changed;
    private final Runnable deleter;
    private final java.util.function.BiFunction<BotRef, JsonObject, Future<JsonObject>> settings;

    /**
     * @param furnish  gives a new bot what every bot starts with (the default workspace files)
     * @param changed  makes every gateway forget the tenant's cached keys and bots
     * @param deleter  starts work on an accepted deletion on this node at once
     * @param settings checks settings a request gives for a bot and returns them as stored, or fails with a 400
     *                 {@link ApiException} (a field unknown or out of range, a default role the bot does not have)
     */
    public BotsApi(BotStore bots, TenantDeletionStore deletions, Function<BotRef, Future<?>> furnish,
                   Consumer<String> changed, Runnable deleter,
                   java.util.function.BiFunction<BotRef, JsonObject, Future<JsonObject>> settings) {
        this.bots = Objects.requireNonNull(bots);
        this.deletions = Objects.requireNonNull(deletions);
        this.furnish = Objects.requireNonNull(furnish);
        this.changed = Objects.requireNonNull(changed);
        this.deleter = Objects.requireNonNull(deleter);
        this.settings = Objects.requireNonNull(settings);
    }

    public void create(RoutingContext ctx) {
        String tenantId = ApiKeyAuth.tenant(ctx).id();
        JsonRequest request = JsonRequest.parse(ctx, CREATE_FIELDS);
        String id = request.requiredString("id", 63);
        if (!BotRef.ID.matcher(id).matches()) {
            throw ApiException.badRequest("field 'id' must be 1 to 63 lower-case letters, digits, '-' or '_', starting with a "
                    + "letter or digit, got '" + id + "'");
        }
        String name = request.optionalString("name", 200);
        JsonObject given = settingsOf(request);
        BotRef ref = new BotRef(tenantId, id);
        checked(ref, given)
                .compose(stored -> bots.create(tenantId, id, name == null ? id : name, stored == null ? new JsonObject() : stored))
                .compose(created -> created.isEmpty() ? Future.succeededFuture(created)
                        : furnish.apply(ref).map(created))
                .onComplete(result -> {
                    if (result.failed() && GatewayErrors.answered(result.cause())) {
                        ctx.fail(result.cause());
                    } else if (result.failed()) {
                        ctx.fail(ApiException.unavailable("the bot cannot be created", result.cause(), 1));
                    } else if (result.result().isEmpty()) {
                        ctx.fail(new ApiException(409, "conflict", "a bot '" + id + "' exists already (or is being deleted)"));
                    } else {
                        LOG.info("audit: bot created [tenant: {}, bot: {}, key: {}]", tenantId, id, ApiKeyAuth.key(ctx).keyId());
                        if (given != null && given.getValue("messagesPerMinute") != null) {
                            // Gateways hold the bots' rates with the tenant's keys: they read them again.
                            changed.accept(tenantId);
                        }
                        ctx.response().setStatusCode(201);
                        ctx.json(new JsonObject().put("bot", result.result().get().toJson()));
                    }
                });
    }

    public void list(RoutingContext ctx) {
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        int limit = Paging.limit(ctx.request().getParam("limit"), DEFAULT_LIMIT, MAX_LIMIT);
        String cursor = ctx.request().getParam("cursor");
        if (cursor != null && !BotRef.ID.matcher(cursor).matches()) {
            throw ApiException.badRequest("parameter 'cursor' must be a bot id (the nextCursor of the page before)");
        }
        bots.list(key.tenant().id(), cursor, limit + 1, key.botIds()).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("bots cannot be listed", result.cause(), 1));
                return;
            }
            var page = result.result();
            JsonArray out = new JsonArray();
            page.stream().limit(limit).forEach(bot -> out.add(bot.toJson()));
            ctx.json(new JsonObject().put("bots", out).put("nextCursor", page.size() > limit ? page.get(limit - 1).id() : null));
        });
    }

    public void get(RoutingContext ctx) {
        BotRef ref = BotScope.bot(ctx);
        bots.find(ref).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the bot cannot be read", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no bot '" + ref.botId() + "'"));
            } else {
                ctx.json(new JsonObject().put("bot", result.result().get().toJson()));
            }
        });
    }

    public void update(RoutingContext ctx) {
        BotRef ref = BotScope.bot(ctx);
        JsonRequest request = JsonRequest.parse(ctx, PATCH_FIELDS);
        String name = request.optionalString("name", 200);
        JsonObject given = settingsOf(request);
        if (name == null && given == null) {
            throw ApiException.badRequest("nothing to change: give 'name' and/or 'settings'");
        }
        checked(ref, given).compose(stored -> bots.update(ref, name, stored)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(GatewayErrors.answered(result.cause()) ? result.cause()
                        : ApiException.unavailable("the bot cannot be changed", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no bot '" + ref.botId() + "'"));
            } else {
                // Workers drop the bot's cached settings.
                changed.accept(ref.tenantId());
                ctx.json(new JsonObject().put("bot", result.result().get().toJson()));
            }
        });
    }

    /** Marks the bot deleting (its routes answer 404 from the next request on every gateway) and starts its deletion. */
    public void delete(RoutingContext ctx) {
        BotRef ref = BotScope.bot(ctx);
        if (ref.isMain()) {
            throw new ApiException(409, "conflict", "the default bot 'main' cannot be deleted: it is what the paths without "
                    + "a bot address; delete the tenant instead");
        }
        deletions.requestBot(ref, "key " + ApiKeyAuth.key(ctx).keyId()).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the bot's deletion cannot be started", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no bot '" + ref.botId() + "'"));
            } else {
                TenantDeletionStore.Deletion deletion = result.result().get();
                if (!deletion.done()) {
                    LOG.info("audit: bot deletion requested [tenant: {}, bot: {}, deletion: {}, key: {}]", ref.tenantId(),
                            ref.botId(), deletion.id(), ApiKeyAuth.key(ctx).keyId());
                    changed.accept(ref.tenantId());
                    deleter.run();
                }
                ctx.response().setStatusCode(deletion.done() ? 200 : 202);
                ctx.json(new JsonObject().put("deletion", deletion.toJson()));
            }
        });
    }

    /** The bot's latest deletion, running or done; it outlives the bot. */
    public void deletion(RoutingContext ctx) {
        String botId = ctx.pathParam("botId");
        if (!BotRef.ID.matcher(botId).matches()) {
            throw ApiException.notFound("bot '" + botId + "' was never deleted");
        }
        BotRef ref = new BotRef(ApiKeyAuth.tenant(ctx).id(), botId);
        deletions.latestBot(ref).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the bot's deletion cannot be read", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("bot '" + botId + "' was never deleted"));
            } else {
                ctx.json(new JsonObject().put("deletion", result.result().get().toJson()));
            }
        });
    }

    private JsonObject settingsOf(JsonRequest request) {
        Object raw = request.json().getValue("settings");
        if (raw == null) {
            return null;
        }
        if (!(raw instanceof JsonObject object)) {
            throw ApiException.badRequest("field 'settings' must be an object such as {\"autonomy\": \"supervised\"}");
        }
        return object;
    }

    /** Settings given (null: none) as stored, or a failed future with the 400 that says what is wrong. */
    private Future<JsonObject> checked(BotRef ref, JsonObject given) {
        return given == null ? Future.succeededFuture() : settings.apply(ref, given);
    }
}
