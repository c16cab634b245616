package io.clawfleet.gateway.operator;

import io.clawfleet.gateway.http.JsonRequest;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.SecureRandom;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The operator's tenants (issue 13), behind {@link OperatorAuth}:
 * <pre>
 * POST  /admin/v1/tenants              {"id"?, "name"} -> 201 {"tenant":{...}, "apiKey":{"id","prefix","key","scopes"}}
 * GET   /admin/v1/tenants?limit=&cursor= -> {"tenants":[...], "nextCursor": id | null}
 * GET   /admin/v1/tenants/{id}         -> {"tenant":{...}}
 * PATCH /admin/v1/tenants/{id}         {"name"?, "status"?: "active" | "suspended"} -> {"tenant":{...}}
 * </pre>
 * The first key's secret is in the creation answer only. A change of status is announced on the
 * bus so every gateway drops the tenant's cached keys at once, not when their cache entries expire.
 */
public final class TenantsAdminApi {

    private static final Logger LOG = LoggerFactory.getLogger(TenantsAdminApi.class);
    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Set<String> CREATE_FIELDS = Set.of("id", "name");
    private static final Set<String> PATCH_FIELDS = Set.of("name", "status");
    private static final Set<String> STATUSES = Set.of("active", "suspended");
    private static final int DEFAULT_LIMIT = 100;
    private static final int MAX_LIMIT = 1_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final TenantStore tenants;
    private final EventBus bus;
    private final Function<String, Future<?>> furnish;

    /** @param furnish gives a new tenant what every tenant starts with (the default workspace files) */
    public TenantsAdminApi(TenantStore tenants, EventBus bus, Function<String, Future<?>> furnish) {
        this.tenants = Objects.requireNonNull(tenants);
        this.bus = Objects.requireNonNull(bus);
        this.furnish = Objects.requireNonNull(furnish);
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
        tenants.create(tenantId, name)
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
        int limit = limit(ctx.request().getParam("limit"));
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
        tenants.find(id).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant cannot be read", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + id + "'"));
            } else {
                ctx.json(new JsonObject().put("tenant", result.result().get().toJson()));
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
        if (name == null && status == null) {
            throw ApiException.badRequest("nothing to change: give 'name' and/or 'status'");
        }
        tenants.update(id, name, status).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the tenant cannot be changed", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + id + "'"));
            } else {
                LOG.info("audit: tenant changed [tenant: {}, name: {}, status: {}, by: operator]", id, name, status);
                // Every gateway drops the tenant's cached keys now: a suspension holds within the bus's latency.
                bus.publish(Addresses.TENANT_CHANGED, new TenantChanged(id));
                ctx.json(new JsonObject().put("tenant", result.result().get().toJson()));
            }
        });
    }

    private static int limit(String raw) {
        if (raw == null) {
            return DEFAULT_LIMIT;
        }
        try {
            int limit = Integer.parseInt(raw);
            if (limit >= 1 && limit <= MAX_LIMIT) {
                return limit;
            }
        } catch (NumberFormatException ignored) {
            // refused below
        }
        throw ApiException.badRequest("parameter 'limit' must be a whole number from 1 to " + MAX_LIMIT + ", got '" + raw + "'");
    }
}
