package io.clawfleet.gateway.operator;

import io.clawfleet.gateway.http.JsonRequest;
import io.clawfleet.gateway.http.Paging;
import io.clawfleet.gateway.http.UsageRequest;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.TenantDeletionStore;
import io.clawfleet.shared.store.TenantLimits;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.SecureRandom;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The operator's tenants (issue 13), behind {@link OperatorAuth}:
 * <pre>
 * POST  /admin/v1/tenants              {"id"?, "name", "limits"?} -> 201 {"tenant":{...}, "apiKey":{"id","prefix","key","scopes"}}
 * GET   /admin/v1/tenants?limit=&cursor= -> {"tenants":[...], "nextCursor": id | null}
 * GET   /admin/v1/tenants/{id}         -> {"tenant":{...}}
 * PATCH /admin/v1/tenants/{id}         {"name"?, "status"?: "active" | "suspended", "limits"?} -> {"tenant":{...}}
 * DELETE /admin/v1/tenants/{id}        -> 202 {"deletion":{...}} (200 once done); the same deletion when asked again
 * GET   /admin/v1/tenants/{id}/deletion -> {"deletion":{...}}: state, rows deleted per table, started, finished
 * GET   /admin/v1/usage?from=&to=&groupBy=&tenant=&limit=&cursor=
 *                                      -> {"from","to","groupBy","notMeasured","tenants":[{"tenant":{"id","name","status"},
 *                                          "totals":{...},"rows":[...],"prunedBefore":{...}}], "nextCursor": id | null}
 * </pre>
 * The first key's secret is in the creation answer only. A change of status is announced on the
 * bus so every gateway drops the tenant's cached keys at once, not when their cache entries expire.
 */
public final class TenantsAdminApi {

    private static final Logger LOG = LoggerFactory.getLogger(TenantsAdminApi.class);
    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Set<String> CREATE_FIELDS = Set.of("id", "name", "limits");
    private static final Set<String> PATCH_FIELDS = Set.of("name", "status", "limits", "operatorModels");
    private static final Set<String> STATUSES = Set.of("active", "suspended");
    private static final int DEFAULT_LIMIT = 100;
    private static final int MAX_LIMIT = 1_000;
    /** Tenants per usage page: each page is one aggregate per source over its tenants' rows of the range. */
    private static final int MAX_USAGE_LIMIT = 200;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final TenantStore tenants;
    /** Makes this gateway forget the tenant's cached keys now and tells every other gateway to. */
    private final Consumer<String> changed;
    private final Function<String, Future<?>> furnish;
    private final TenantDeletionStore deletions;
    private final Runnable deleter;
    private final UsageStore usage;
    /** limits.tenantDefaults: what a new tenant gets where its request sets nothing. */
    private final JsonObject defaultLimits;

    /**
     * @param furnish gives a new tenant what every tenant starts with (the default workspace files)
     * @param deleter starts work on an accepted deletion on this node at once, not at its next scan
     */
    public TenantsAdminApi(TenantStore tenants, Consumer<String> changed, Function<String, Future<?>> furnish,
                           TenantDeletionStore deletions, Runnable deleter, UsageStore usage, JsonObject defaultLimits) {
        this.tenants = Objects.requireNonNull(tenants);
        this.changed = Objects.requireNonNull(changed);
        this.furnish = Objects.requireNonNull(furnish);
        this.deletions = Objects.requireNonNull(deletions);
        this.deleter = Objects.requireNonNull(deleter);
        this.usage = Objects.requireNonNull(usage);
        this.defaultLimits = defaultLimits.copy();
    }

    public void create(RoutingContext ctx) {
        JsonRequest request = JsonRequest.parse(ctx, CREATE_FIELDS);
        String name = request.requiredString("name", 200);
        String id = request.optionalString("id", 63);
        if (id == null) {
            id = "t-" + Long.toString(RANDOM.nextLong() >>> 1, 36);
        } else if (!ID.matcher(id).matches()) {
            throw ApiException.badRequest("field 'id' must be 1 to 63 lower-case letters, digits, '-' or '_', starting with a "
                    + "letter or digit, got '" + id + "'");
        }
        String tenantId = id;
        JsonObject limits = withDefaults(limits(request));
        tenants.create(tenantId, name, limits)
                .compose(created -> created.isEmpty() ? Future.succeededFuture(created)
                        : furnish.apply(tenantId).map(created))
                .onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant cannot be created", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(new ApiException(409, "conflict", "a tenant '" + tenantId + "' exists already"));
            } else {
                TenantStore.Created created = result.result().get();
                LOG.info("audit: tenant created [tenant: {}, first key: {}, by: operator]", tenantId, created.key().prefix());
                ctx.response().setStatusCode(201);
                ctx.json(new JsonObject().put("tenant", created.tenant().toJson()).put("apiKey", new JsonObject()
                        .put("id", created.key().id()).put("prefix", created.key().prefix()).put("key", created.key().key())
                        .put("scopes", new JsonArray().add("admin"))));
            }
        });
    }

    public void list(RoutingContext ctx) {
        int limit = Paging.limit(ctx.request().getParam("limit"), DEFAULT_LIMIT, MAX_LIMIT);
        String cursor = ctx.request().getParam("cursor");
        if (cursor != null && !ID.matcher(cursor).matches()) {
            throw ApiException.badRequest("parameter 'cursor' must be a tenant id (the nextCursor of the page before)");
        }
        tenants.list(cursor, limit + 1).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("tenants cannot be listed", result.cause(), 1));
                return;
            }
            var page = result.result();
            JsonArray out = new JsonArray();
            page.stream().limit(limit).forEach(tenant -> out.add(tenant.toJson()));
            ctx.json(new JsonObject().put("tenants", out)
                    .put("nextCursor", page.size() > limit ? page.get(limit - 1).id() : null));
        });
    }

    public void get(RoutingContext ctx) {
        String id = ctx.pathParam("id");
        tenants.find(id).compose(found -> found.isPresent() && "deleting".equals(found.get().status())
                        ? deletions.latest(id).map(deletion -> new JsonObject().put("tenant", found.get().toJson())
                                .put("deletion", deletion.map(TenantDeletionStore.Deletion::toJson).orElse(null)))
                        : Future.succeededFuture(found.map(tenant -> new JsonObject().put("tenant", tenant.toJson()))
                                .orElse(null)))
                .onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant cannot be read", result.cause(), 1));
            } else if (result.result() == null) {
                ctx.fail(ApiException.notFound("no tenant '" + id + "' (a deleted one: GET /admin/v1/tenants/" + id
                        + "/deletion)"));
            } else {
                ctx.json(result.result());
            }
        });
    }

    /**
     * Marks the tenant deleting (its keys fail on every gateway from the next request) and starts its
     * deletion; asked again, answers the same deletion. 202 while it runs, 200 once done.
     */
    public void delete(RoutingContext ctx) {
        String id = ctx.pathParam("id");
        deletions.request(id, "operator").onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant's deletion cannot be started", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + id + "'"));
            } else {
                TenantDeletionStore.Deletion deletion = result.result().get();
                if (!deletion.done()) {
                    LOG.info("audit: tenant deletion requested [tenant: {}, deletion: {}, by: operator]", id, deletion.id());
                    // Every gateway drops the tenant's cached keys now; the deletion starts here at once.
                    changed.accept(id);
                    deleter.run();
                }
                ctx.response().setStatusCode(deletion.done() ? 200 : 202);
                ctx.json(new JsonObject().put("deletion", deletion.toJson()));
            }
        });
    }

    /** The tenant's latest deletion, running or done; it outlives the tenant. */
    public void deletion(RoutingContext ctx) {
        String id = ctx.pathParam("id");
        deletions.latest(id).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant's deletion cannot be read", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("tenant '" + id + "' was never deleted"));
            } else {
                ctx.json(new JsonObject().put("deletion", result.result().get().toJson()));
            }
        });
    }

    public void update(RoutingContext ctx) {
        String id = ctx.pathParam("id");
        JsonRequest request = JsonRequest.parse(ctx, PATCH_FIELDS);
        String name = request.optionalString("name", 200);
        String status = request.optionalString("status", 16);
        if (status != null && !STATUSES.contains(status)) {
            throw ApiException.badRequest("field 'status' must be 'active' or 'suspended', got '" + status + "'");
        }
        JsonObject limits = limits(request);
        Object models = request.json().getValue("operatorModels");
        if (models != null && !(models instanceof Boolean)) {
            throw ApiException.badRequest("field 'operatorModels' must be true (the tenant's bots without providers of their "
                    + "own use the cluster's models) or false (they must bring their own)");
        }
        Boolean operatorModels = (Boolean) models;
        if (name == null && status == null && limits == null && operatorModels == null) {
            throw ApiException.badRequest("nothing to change: give 'name', 'status', 'limits' and/or 'operatorModels'");
        }
        tenants.update(id, name, status, limits, operatorModels).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant cannot be changed", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + id + "'"));
            } else if ("deleting".equals(result.result().get().status())) {
                ctx.fail(new ApiException(409, "tenant_deleting", "tenant '" + id + "' is being deleted; it cannot be changed"));
            } else {
                LOG.info("audit: tenant changed [tenant: {}, name: {}, status: {}, limits: {}, operatorModels: {}, by: operator]",
                        id, name, status, limits == null ? null : limits.encode(), operatorModels);
                // Every gateway drops the tenant's cached keys now: a suspension holds within the bus's latency.
                changed.accept(id);
                ctx.json(new JsonObject().put("tenant", result.result().get().toJson()));
            }
        });
    }

    /**
     * Usage per tenant (issue 14): the measures of {@code GET /api/v1/usage} ({@link UsageRequest}), one entry per
     * tenant in id order, a page at a time ({@code limit}, {@code cursor}); {@code tenant} for one tenant only.
     */
    public void usage(RoutingContext ctx) {
        UsageRequest request = UsageRequest.parse(ctx);
        int limit = Paging.limit(ctx.request().getParam("limit"), DEFAULT_LIMIT, MAX_USAGE_LIMIT);
        String cursor = ctx.request().getParam("cursor");
        if (cursor != null && !ID.matcher(cursor).matches()) {
            throw ApiException.badRequest("parameter 'cursor' must be a tenant id (the nextCursor of the page before)");
        }
        String only = ctx.request().getParam("tenant");
        if (only != null && !ID.matcher(only).matches()) {
            throw ApiException.badRequest("parameter 'tenant' must be a tenant id, got '" + only + "'");
        }
        Future<List<TenantStore.Account>> page = only == null ? tenants.list(cursor, limit + 1)
                : tenants.find(only).map(found -> found.map(List::of).orElse(List.of()));
        page.compose(accounts -> {
            List<TenantStore.Account> shown = accounts.stream().limit(limit).toList();
            var query = new UsageStore.Query(shown.stream().map(TenantStore.Account::id).toList(), null, request.from(),
                    request.to(), request.groupBy(), null, null);
            return usage.report(query).map(reports -> {
                JsonArray out = new JsonArray();
                shown.forEach(tenant -> out.add(new JsonObject().put("tenant", new JsonObject().put("id", tenant.id())
                                .put("name", tenant.name()).put("status", tenant.status()))
                        .mergeIn(request.body(reports.get(tenant.id())))));
                return request.head().put("tenants", out)
                        .put("nextCursor", accounts.size() > limit ? shown.get(limit - 1).id() : null);
            });
        }).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("usage cannot be read", result.cause(), 1));
            } else if (only != null && result.result().getJsonArray("tenants").isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + only + "'"));
            } else {
                ctx.json(result.result());
            }
        });
    }

    /** A new tenant's limits: the operator's defaults, then what its request sets (a null there leaves the limit unset). */
    private JsonObject withDefaults(JsonObject given) {
        JsonObject limits = defaultLimits.copy();
        if (given != null) {
            given.forEach(limit -> {
                if (limit.getValue() == null) {
                    limits.remove(limit.getKey());
                } else {
                    limits.put(limit.getKey(), limit.getValue());
                }
            });
        }
        return limits;
    }

    /** The limits a request gives, checked ({@link TenantLimits}); null when it gives none. */
    private static JsonObject limits(JsonRequest request) {
        Object raw = request.json().getValue("limits");
        if (raw == null) {
            return null;
        }
        try {
            return TenantLimits.parse(raw);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }
}
