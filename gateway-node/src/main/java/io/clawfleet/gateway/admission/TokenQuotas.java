package io.clawfleet.gateway.admission;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.QuotaStore;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;

import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A tenant's token quotas ({@code tokensPerDay}, {@code tokensPerMonth}, issue 14) at intake. What a tenant's turns
 * used is read from PostgreSQL (one statement, only for a tenant with a token limit) and kept for a few seconds per
 * gateway, so checking costs no round trip per message. The quota holds to within what a tenant's turns use in
 * that time and in the turns already accepted when it is reached: a message is refused, never a turn cut short.
 * Over it, an HTTP message gets 429 {@code insufficient_quota} with {@code Retry-After} (the end of the UTC day or
 * month) and the {@code RateLimit-Policy} / {@code RateLimit} headers; a channel message is deferred (TelegramPoller).
 */
public final class TokenQuotas {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(TokenQuotas.class);

    private static final long FRESH_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int MAX_CACHED = 100_000;

    private record Entry(QuotaStore.Tokens tokens, long loadedAt) {
    }

    private final java.util.function.BiFunction<String, Instant, Future<QuotaStore.Tokens>> store;
    private final Clock clock;
    private final Map<String, Entry> tenants = new ConcurrentHashMap<>();
    /** While the database is down every message fails the read: one warning per 10 s, not one per message. */
    private final io.clawfleet.shared.node.LogThrottle readFailures =
            new io.clawfleet.shared.node.LogThrottle(10, TimeUnit.SECONDS);
    private final Map<String, Future<QuotaStore.Tokens>> loading = new ConcurrentHashMap<>();

    public TokenQuotas(QuotaStore store, Clock clock) {
        this(store::tokens, clock);
    }

    /** @param store reads a tenant's token limits and use at an instant (QuotaStore's, or a test's) */
    TokenQuotas(java.util.function.BiFunction<String, Instant, Future<QuotaStore.Tokens>> store, Clock clock) {
        this.store = Objects.requireNonNull(store);
        this.clock = Objects.requireNonNull(clock);
    }

    /** The limit the tenant is over now, or null (succeeded) when it may send. */
    public Future<QuotaStore.Exceeded> check(String tenantId) {
        Entry entry = tenants.get(tenantId);
        long now = System.nanoTime();
        Instant wall = clock.instant();
        if (entry != null && now - entry.loadedAt() < FRESH_NANOS && wall.isBefore(entry.tokens().dayEnd())) {
            return Future.succeededFuture(entry.tokens().exceeded());
        }
        return tenants(tenantId, wall).map(QuotaStore.Tokens::exceeded);
    }

    private Future<QuotaStore.Tokens> tenants(String tenantId, Instant wall) {
        // Many messages of one tenant arriving at once read its use once. The read is started outside the map's
        // update: its future may complete at once, and its callback changes the map.
        Promise<QuotaStore.Tokens> read = Promise.promise();
        Future<QuotaStore.Tokens> pending = loading.putIfAbsent(tenantId, read.future());
        if (pending != null) {
            return pending;
        }
        store.apply(tenantId, wall).onComplete(result -> {
            loading.remove(tenantId, read.future());
            if (result.succeeded()) {
                if (tenants.size() >= MAX_CACHED) {
                    tenants.clear();
                }
                tenants.put(tenantId, new Entry(result.result(), System.nanoTime()));
            }
            read.handle(result);
        });
        return read.future();
    }

    /** Route handler before message intake on the HTTP API: passes when the key's tenant is within its token quotas. */
    public void handle(RoutingContext ctx) {
        Context context = Vertx.currentContext();
        check(ApiKeyAuth.key(ctx).tenant().id()).onComplete(result -> {
            Runnable carryOn = () -> {
                if (result.failed()) {
                    // A quota is a soft limit: its read failing must not stop intake (the inbox says if the database is down).
                    int heldBack = readFailures.admit();
                    if (heldBack >= 0) {
                        LOG.warn("a tenant's token quota could not be read; its message is let through [tenant: {}, "
                                + "like warnings held back in the last 10 s: {}]: {}",
                                ApiKeyAuth.key(ctx).tenant().id(), heldBack, String.valueOf(result.cause()));
                    }
                    ctx.next();
                } else if (result.result() != null) {
                    ctx.fail(refusal(result.result(), clock.instant()));
                } else {
                    ctx.next();
                }
            };
            // The read may have completed on another event loop: carry on on the request's own.
            if (context == null || Vertx.currentContext() == context) {
                carryOn.run();
            } else {
                context.runOnContext(v -> carryOn.run());
            }
        });
    }

    /** The answer to a message over a token quota: 429 insufficient_quota, retry when the period ends. */
    public static ApiException refusal(QuotaStore.Exceeded over, Instant now) {
        long seconds = over.retryAfterSeconds(now);
        String name = over.limit().equals("tokensPerDay") ? "tokens-day" : "tokens-month";
        return new ApiException(429, "insufficient_quota", "this tenant's turns used " + over.used() + " model tokens, its limit '"
                + over.limit() + "' is " + over.max() + "; messages are accepted again at " + over.resetsAt() + " (in "
                + seconds + " s) or when the operator raises the limit", seconds)
                .withHeader("RateLimit-Policy", "\"" + name + "\";q=" + over.max() + ";w=" + over.windowSeconds())
                .withHeader("RateLimit", "\"" + name + "\";r=0;t=" + seconds);
    }

    /** Drops what this gateway knows of a tenant (its limits changed): the next message reads them again. */
    public void forget(String tenantId) {
        tenants.remove(tenantId);
    }
}
