package io.clawfleet.gateway.admission;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.RateWindowStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A tenant's {@code messagesPerMinute} (issue 14), held cluster-wide. Each gateway leases the tenant's tokens of
 * the current minute from PostgreSQL ({@link RateWindowStore}) in chunks of 1 % of the limit (at least 1) and spends
 * them locally, so most messages cost no round trip and the sum over all gateways never passes the limit. Tokens a
 * gateway holds when the minute ends are lost: at most a chunk less than one per gateway and window, so a tenant
 * gets between its limit minus (gateways × chunk) and its limit. Over it, 429 with {@code Retry-After} and the
 * IETF {@code RateLimit-Policy} / {@code RateLimit} headers.
 */
public final class TenantRates {

    private static final long WINDOW_SECONDS = 60;

    /** One tenant's tokens on this gateway. Guarded by itself. */
    private static final class Bucket {
        int tokens;
        /** System.nanoTime() at which the window of {@link #tokens} ends. */
        long windowEnd;
        /** The window's limit is spent (cluster-wide): refuse without asking until it ends. */
        boolean spent;
        /** A lease under way: requests arriving meanwhile wait for it instead of leasing too. */
        Future<Void> leasing;
    }

    private final RateWindowStore windows;
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();

    public TenantRates(RateWindowStore windows) {
        this.windows = Objects.requireNonNull(windows);
    }

    /** Route handler before message intake: passes when the key's tenant has no rate limit or a token. */
    public void handle(RoutingContext ctx) {
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        Integer limit = key.messagesPerMinute();
        if (limit == null) {
            ctx.next();
            return;
        }
        // A request may wait on a lease another event loop started: carry on on the request's own event loop.
        Context context = Vertx.currentContext();
        admit(key.tenant().id(), limit).onComplete(result -> {
            Runnable carryOn = () -> {
                if (result.succeeded()) {
                    ctx.next();
                } else {
                    ctx.fail(result.cause());
                }
            };
            if (context == null || Vertx.currentContext() == context) {
                carryOn.run();
            } else {
                context.runOnContext(v -> carryOn.run());
            }
        });
    }

    /** One message of the tenant: a token, or a failed future with the 429 to answer. */
    public Future<Void> admit(String tenantId, int limit) {
        Bucket bucket = buckets.computeIfAbsent(tenantId, id -> new Bucket());
        Future<Void> waitFor;
        synchronized (bucket) {
            long now = System.nanoTime();
            if (now - bucket.windowEnd >= 0) {
                bucket.tokens = 0;
                bucket.spent = false;
            }
            if (bucket.tokens > 0) {
                bucket.tokens--;
                return Future.succeededFuture();
            }
            if (bucket.spent || limit == 0) {
                return Future.failedFuture(refusal(limit, Math.max(0, bucket.windowEnd - now)));
            }
            if (bucket.leasing == null) {
                Promise<Void> leased = Promise.promise();
                bucket.leasing = leased.future();
                lease(tenantId, limit, bucket, leased);
            }
            waitFor = bucket.leasing;
        }
        // After the lease: take a token if it brought any (or another request took them all: ask again).
        return waitFor.transform(done -> done.failed()
                ? Future.failedFuture(ApiException.unavailable("the tenant's message rate cannot be checked right now", 1))
                : admitAfterLease(tenantId, limit, bucket));
    }

    private Future<Void> admitAfterLease(String tenantId, int limit, Bucket bucket) {
        synchronized (bucket) {
            if (bucket.tokens > 0) {
                bucket.tokens--;
                return Future.succeededFuture();
            }
            if (bucket.spent) {
                return Future.failedFuture(refusal(limit, Math.max(0, bucket.windowEnd - System.nanoTime())));
            }
        }
        return admit(tenantId, limit);
    }

    private void lease(String tenantId, int limit, Bucket bucket, Promise<Void> leased) {
        int chunk = Math.max(1, limit / 100);
        windows.lease(tenantId, chunk, limit).onComplete(result -> {
            synchronized (bucket) {
                bucket.leasing = null;
                if (result.succeeded()) {
                    RateWindowStore.Lease lease = result.result();
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lease.millisLeft());
                    if (end - bucket.windowEnd > TimeUnit.SECONDS.toNanos(1)) {
                        bucket.tokens = 0; // a new window: what was left of the last one is gone
                    }
                    bucket.windowEnd = end;
                    bucket.tokens += lease.granted();
                    bucket.spent = lease.granted() == 0;
                }
            }
            if (result.succeeded()) {
                leased.complete();
            } else {
                leased.fail(result.cause());
            }
        });
    }

    /** 429, saying when the window ends, with the RateLimit headers of the IETF httpapi draft. */
    static ApiException refusal(int limit, long nanosLeft) {
        long seconds = Math.max(1, (long) Math.ceil(nanosLeft / 1e9));
        return new ApiException(429, "rate_limit_exceeded", "this tenant may send " + limit + " messages per minute"
                + " (its limit 'messagesPerMinute'), all used in this minute; retry in " + seconds + " s", seconds)
                .withHeader("RateLimit-Policy", "\"messages\";q=" + limit + ";w=" + WINDOW_SECONDS)
                .withHeader("RateLimit", "\"messages\";r=0;t=" + seconds);
    }

    /** Drops what this gateway holds of a tenant (its limit changed): the next message leases anew. */
    public void forget(String tenantId) {
        buckets.remove(tenantId);
    }
}
