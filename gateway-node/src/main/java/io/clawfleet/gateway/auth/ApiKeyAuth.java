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
    /** Context key of the {@link TenantStore.KeyOwner} of the request's key: who acted, for the audit. */
    public static final String KEY = "clawfleet.key";

    private static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int MAX_KNOWN = 100_000;
    /** Unknown keys are remembered in a map of their own: a flood of made-up keys fills only that one. */
    private static final int MAX_UNKNOWN = 10_000;

    private record Entry(Optional<TenantStore.KeyOwner> owner, long expiresAt) {
    }

    private final TenantStore tenants;
    private final Map<String, Entry> known = new ConcurrentHashMap<>();
    private final Map<String, Entry> unknown = new ConcurrentHashMap<>();
    /** Counts {@link #forget} calls: a lookup that saw a change happen while it ran does not cache its answer. */
    private final java.util.concurrent.atomic.AtomicLong forgets = new java.util.concurrent.atomic.AtomicLong();

    private final int maxUnknown;
    private final AuthFailures failures;

    public ApiKeyAuth(TenantStore tenants) {
        this(tenants, MAX_UNKNOWN, null);
    }

    /** Reports every refused request (no key, or an unknown one) to {@code failures}, which audits bursts. */
    public ApiKeyAuth(TenantStore tenants, AuthFailures failures) {
        this(tenants, MAX_UNKNOWN, Objects.requireNonNull(failures));
    }

    ApiKeyAuth(TenantStore tenants, int maxUnknown) {
        this(tenants, maxUnknown, null);
    }

    private ApiKeyAuth(TenantStore tenants, int maxUnknown, AuthFailures failures) {
        this.tenants = Objects.requireNonNull(tenants);
        this.maxUnknown = maxUnknown;
        this.failures = failures;
    }

    /** Route handler: resolves the tenant or fails the request with 401. */
    public void handle(RoutingContext ctx) {
        String header = ctx.request().getHeader("authorization");
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.length() <= 7) {
            refused(ctx);
            ctx.fail(ApiException.unauthorized("missing API key: send the header 'Authorization: Bearer <key>'"));
            return;
        }
        String key = header.substring(7).trim();
        resolveOwner(key).onComplete(result -> {
            if (result.failed()) {
                // The database's words stay in the operator's log; the caller gets an id to quote.
                String errorId = ApiException.errorId(result.cause(), "an API key could not be checked");
                ctx.fail(ApiException.unavailable("cannot check the API key right now (error id " + errorId + ")", 1));
            } else if (result.result().isEmpty()) {
                refused(ctx);
                ctx.fail(ApiException.unauthorized("invalid API key"));
            } else {
                TenantStore.KeyOwner owner = result.result().get();
                if (owner.expired(java.time.Instant.now())) {
                    refused(ctx);
                    ctx.fail(ApiException.unauthorized("this API key expired at " + owner.expiresAt()));
                } else if (owner.deleting()) {
                    ctx.fail(new ApiException(403, "tenant_deleted", "tenant deleted: its keys no longer work"));
                } else if (owner.suspended()) {
                    ctx.fail(new ApiException(403, "tenant_suspended", "tenant suspended: its keys are refused until the "
                            + "operator resumes it"));
                } else if (!Scopes.allows(owner.scopes(), ctx.request().method(), ctx.normalizedPath())) {
                    ctx.fail(new ApiException(403, "forbidden", "this key's scopes " + new java.util.TreeSet<>(owner.scopes())
                            + " do not allow " + ctx.request().method() + " " + ctx.normalizedPath() + "; it needs one of "
                            + new java.util.TreeSet<>(Scopes.required(ctx.request().method(), ctx.normalizedPath()))));
                } else {
                    ctx.put(TENANT, owner.tenant());
                    ctx.put(KEY, owner);
                    ctx.next();
                }
            }
        });
    }

    /** No row per refused request (a flood would write a flood): {@link AuthFailures} counts per source. */
    private void refused(RoutingContext ctx) {
        if (failures != null) {
            var remote = ctx.request().remoteAddress();
            failures.failed(remote == null ? "unknown" : remote.hostAddress());
        }
    }

    Future<Optional<Tenant>> resolve(String key) {
        return resolveOwner(key).map(owner -> owner.map(TenantStore.KeyOwner::tenant));
    }

    /**
     * The owner of a key: from the cache (no database round trip) while it is fresh, else one indexed
     * statement. Public for the benchmark, which measures exactly this ({@code bench --tenants N}).
     */
    public Future<Optional<TenantStore.KeyOwner>> resolveOwner(String key) {
        String hash = TenantStore.hashKey(key);
        long now = System.nanoTime();
        Entry entry = known.get(hash);
        if (entry == null) {
            entry = unknown.get(hash);
        }
        if (entry != null && entry.expiresAt() - now > 0) {
            return Future.succeededFuture(entry.owner());
        }
        long generation = forgets.get();
        return tenants.findKeyOwner(key).onSuccess(tenant -> {
            if (forgets.get() != generation) {
                // A tenant changed while this was read: what was read may be from before; do not keep it.
                return;
            }
            Map<String, Entry> cache = tenant.isPresent() ? known : unknown;
            if (tenant.isPresent()) {
                unknown.remove(hash);
            }
            if (cache.size() >= (tenant.isPresent() ? MAX_KNOWN : maxUnknown)) {
                cache.clear();
            }
            cache.put(hash, new Entry(tenant, now + TTL_NANOS));
        });
    }

    /**
     * Drops what this gateway remembers of a tenant's keys: a key revoked, rotated or expired early, or
     * the tenant suspended, resumed or deleted, holds on the next request, not when the cache entry runs out.
     * Called for every {@code TenantChanged} on the bus, so it holds on every gateway at once.
     */
    public void forget(String tenantId) {
        forgets.incrementAndGet();
        known.values().removeIf(entry -> entry.owner().map(o -> o.tenant().id().equals(tenantId)).orElse(false));
    }

    /** Known keys remembered now (for tests: a flood of unknown keys must not evict them). */
    int knownCached() {
        return known.size();
    }

    public static Tenant tenant(RoutingContext ctx) {
        return ctx.get(TENANT);
    }

    /** The key the request was authenticated with (its id and name; never the key). */
    public static TenantStore.KeyOwner key(RoutingContext ctx) {
        return ctx.get(KEY);
    }
}
