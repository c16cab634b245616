package io.clawfleet.gateway.auth;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Bearer authentication with a tenant API key. Known keys are cached briefly so the hot path costs
 * no database round trip; unknown keys are cached briefly too, so guessing cannot hammer the database.
 */
public final class ApiKeyAuth {

    public static final String TENANT = "clawfleet.tenant";

    private static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int MAX_ENTRIES = 100_000;

    private record Entry(Optional<Tenant> tenant, long expiresAt) {
    }

    private final TenantStore tenants;
    private final Map<String, Entry> cache = new ConcurrentHashMap<>();

    public ApiKeyAuth(TenantStore tenants) {
        this.tenants = Objects.requireNonNull(tenants);
    }

    /** Route handler: resolves the tenant or fails the request with 401. */
    public void handle(RoutingContext ctx) {
        String header = ctx.request().getHeader("authorization");
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.length() <= 7) {
            ctx.fail(ApiException.unauthorized("missing API key: send the header 'Authorization: Bearer <key>'"));
            return;
        }
        String key = header.substring(7).trim();
        resolve(key).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("cannot check the API key right now: " + result.cause().getMessage(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.unauthorized("invalid API key"));
            } else {
                ctx.put(TENANT, result.result().get());
                ctx.next();
            }
        });
    }

    private Future<Optional<Tenant>> resolve(String key) {
        String hash = TenantStore.hashKey(key);
        Entry entry = cache.get(hash);
        long now = System.nanoTime();
        if (entry != null && entry.expiresAt() - now > 0) {
            return Future.succeededFuture(entry.tenant());
        }
        return tenants.findByKey(key).onSuccess(tenant -> {
            if (cache.size() >= MAX_ENTRIES) {
                cache.clear();
            }
            cache.put(hash, new Entry(tenant, now + TTL_NANOS));
        });
    }

    public static Tenant tenant(RoutingContext ctx) {
        return ctx.get(TENANT);
    }
}
