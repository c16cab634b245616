package io.clawfleet.gateway.auth;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;

import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Which bot a request is about (issue 13). A path under {@code /api/v1/bots/{botId}/...} names it; the same path
 * without the prefix means the tenant's default bot {@value BotRef#MAIN}, so nothing written before bots breaks.
 * The bot is looked up in the caller's tenant only (another tenant's bot id answers 404, as an unknown one does),
 * and a key limited to some bots reaches only those. Routes of the whole tenant (keys, audit, export, the bots
 * themselves) are refused to a key limited to some bots: it could otherwise widen its own reach.
 *
 * <p>Bots known to exist are cached for a short while per gateway (the default bot is never looked up: it
 * exists as long as its tenant); a deleted bot is forgotten on every gateway by the tenant's change notice.
 */
public final class BotScope {

    public static final String BOT = "clawfleet.bot";
    private static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int MAX_CACHED = 100_000;

    private final BotStore bots;
    private final Map<BotRef, Long> known = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong forgets = new java.util.concurrent.atomic.AtomicLong();

    public BotScope(BotStore bots) {
        this.bots = Objects.requireNonNull(bots);
    }

    /** Route handler of a bot's route: resolves the bot or fails the request (404 unknown, 403 not for this key). */
    public void handle(RoutingContext ctx) {
        String botId = ctx.pathParam("botId");
        resolve(ctx, botId == null ? BotRef.MAIN : botId).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause());
            } else {
                ctx.put(BOT, result.result());
                ctx.next();
            }
        });
    }

    /**
     * The caller's bot of that id: failed with 404 when its tenant has none (or it is being deleted), 403 when
     * the request's key does not reach it.
     */
    public Future<BotRef> resolve(RoutingContext ctx, String botId) {
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        if (!BotRef.ID.matcher(botId).matches()) {
            return Future.failedFuture(ApiException.notFound("no bot '" + botId + "'"));
        }
        if (!key.reaches(botId)) {
            return Future.failedFuture(new ApiException(403, "forbidden", "this key is limited to the bots "
                    + new TreeSet<>(key.botIds()) + " and does not reach bot '" + botId + "'"));
        }
        BotRef bot = new BotRef(ApiKeyAuth.tenant(ctx).id(), botId);
        return exists(bot).recover(failure -> Future.failedFuture(
                        ApiException.unavailable("the bot cannot be looked up right now (database unavailable)", 1)))
                .compose(found -> found ? Future.succeededFuture(bot)
                        : Future.failedFuture(ApiException.notFound("no bot '" + botId + "'")));
    }

    /** Route handler of a route of the whole tenant: a key limited to some bots may not use it. */
    public void tenantWide(RoutingContext ctx) {
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        if (key.botIds() != null) {
            ctx.fail(new ApiException(403, "forbidden", "this key is limited to the bots " + new TreeSet<>(key.botIds())
                    + "; " + ctx.request().method() + " " + ctx.normalizedPath() + " concerns the whole tenant and needs a"
                    + " key for every bot"));
            return;
        }
        ctx.next();
    }

    /** Whether the tenant has this bot, active: from the cache while fresh, else one indexed query. */
    Future<Boolean> exists(BotRef bot) {
        if (bot.isMain()) {
            return Future.succeededFuture(true);
        }
        long now = System.nanoTime();
        Long until = known.get(bot);
        if (until != null && until - now > 0) {
            return Future.succeededFuture(true);
        }
        long generation = forgets.get();
        return bots.find(bot).map(found -> {
            boolean active = found.isPresent() && !found.get().deleting();
            if (active && forgets.get() == generation) {
                if (known.size() >= MAX_CACHED) {
                    known.clear();
                }
                known.put(bot, now + TTL_NANOS);
            }
            return active;
        });
    }

    /** Drops what this gateway remembers of a tenant's bots (one was deleted, or the tenant changed). */
    public void forget(String tenantId) {
        forgets.incrementAndGet();
        known.keySet().removeIf(bot -> bot.tenantId().equals(tenantId));
    }

    /** The bot a bot's route is about (set by {@link #handle}). */
    public static BotRef bot(RoutingContext ctx) {
        BotRef bot = ctx.get(BOT);
        if (bot == null) {
            throw new IllegalStateException("no bot resolved for " + ctx.normalizedPath() + ": the route lacks BotScope::handle");
        }
        return bot;
    }
}
