package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.Scopes;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.KeyStore;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import io.clawfleet.shared.store.BotRef;

/**
 * A tenant's keys (issue 13), for the tenant's admin ({@code /api/v1/keys}) and for the operator
 * ({@code /admin/v1/tenants/{id}/keys}):
 * <pre>
 * POST   .../keys                {"name", "scopes":["chat"|"read"|"admin",...], "botIds"?, "expiresAt"?, "messagesPerMinute"?}
 *                                -> 201 {"key":{..., "key"}}
 * GET    .../keys                -> {"keys":[{"id","prefix","name","scopes","botIds","createdAt","lastUsedAt","expiresAt",
 *                                   "messagesPerMinute"}]}
 * DELETE .../keys/{keyId}        -> {"key":{..., "revokedAt"}}
 * POST   .../keys/{keyId}/rotate {"graceSeconds"?} -> 201 {"key":{..., "key"}, "previous":{...}}
 * </pre>
 * The secret is in the creation answer only. Every change is published as {@code TenantChanged}, so
 * each gateway forgets the tenant's cached keys at once: a revoked key fails on the next request.
 */
public final class KeysApi {

    private static final Logger LOG = LoggerFactory.getLogger(KeysApi.class);
    private static final Set<String> CREATE_FIELDS = Set.of("name", "scopes", "botIds", "expiresAt", "messagesPerMinute");
    private static final Set<String> ROTATE_FIELDS = Set.of("graceSeconds");
    private static final long MAX_GRACE_SECONDS = 7 * 86_400;
    /** The most a key's {@code messagesPerMinute} may be, as a tenant's. */
    private static final int MAX_MESSAGES_PER_MINUTE = 1_000_000;

    private final KeyStore keys;
    /** Makes this gateway forget the tenant's cached keys now and tells every other gateway to. */
    private final Consumer<String> changed;
    private final Function<RoutingContext, String> tenantOf;
    private final String by;

    /**
     * @param tenantOf the tenant a request acts on (its key's, or the operator's path parameter)
     * @param by       who acts, for the log: "tenant admin" or "operator"
     */
    public KeysApi(KeyStore keys, Consumer<String> changed, Function<RoutingContext, String> tenantOf, String by) {
        this.keys = Objects.requireNonNull(keys);
        this.changed = Objects.requireNonNull(changed);
        this.tenantOf = Objects.requireNonNull(tenantOf);
        this.by = Objects.requireNonNull(by);
    }

    public void create(RoutingContext ctx) {
        String tenant = tenantOf.apply(ctx);
        JsonRequest request = JsonRequest.parse(ctx, CREATE_FIELDS);
        String name = request.requiredString("name", 100);
        Set<String> scopes = scopes(request.json().getValue("scopes"));
        Instant expiresAt = expiry(request.optionalString("expiresAt", 40));
        java.util.List<String> botIds = botIds(request.json().getValue("botIds"));
        Integer messagesPerMinute = messagesPerMinute(request.json().getValue("messagesPerMinute"));
        io.vertx.core.Future<java.util.List<String>> missing = botIds == null
                ? io.vertx.core.Future.succeededFuture(java.util.List.of()) : keys.missingBots(tenant, botIds);
        missing.compose(unknown -> unknown.isEmpty() ? keys.create(tenant, name, scopes, expiresAt, botIds, messagesPerMinute)
                        : io.vertx.core.Future.failedFuture(ApiException.badRequest("field 'botIds' names bots the tenant does not"
                                + " have: " + unknown)))
                .onComplete(result -> {
            if (result.failed() && GatewayErrors.answered(result.cause())) {
                ctx.fail(result.cause());
            } else if (result.failed()) {
                ctx.fail(ApiException.unavailable("the key cannot be made", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + tenant + "'"));
            } else {
                KeyStore.Made made = result.result().get();
                LOG.info("audit: key created [tenant: {}, key: {}, scopes: {}, by: {}]", tenant, made.key().id(), scopes, by);
                ctx.response().setStatusCode(201);
                ctx.json(new JsonObject().put("key", made.toJson()));
            }
        });
    }

    public void list(RoutingContext ctx) {
        String tenant = tenantOf.apply(ctx);
        keys.list(tenant).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("keys cannot be listed", result.cause(), 1));
                return;
            }
            if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no tenant '" + tenant + "'"));
                return;
            }
            JsonArray out = new JsonArray();
            result.result().get().forEach(key -> out.add(key.toJson()));
            ctx.json(new JsonObject().put("keys", out));
        });
    }

    public void revoke(RoutingContext ctx) {
        String tenant = tenantOf.apply(ctx);
        String keyId = ctx.pathParam("keyId");
        keys.revoke(tenant, keyId).onComplete(result -> answer(ctx, tenant, keyId, result, "revoked"));
    }

    public void rotate(RoutingContext ctx) {
        String tenant = tenantOf.apply(ctx);
        String keyId = ctx.pathParam("keyId");
        long grace = 0;
        if (ctx.body().length() > 0) {
            Object raw = JsonRequest.parse(ctx, ROTATE_FIELDS).json().getValue("graceSeconds");
            if (raw != null) {
                if (!(raw instanceof Number number) || number.doubleValue() != number.longValue() || number.longValue() < 0
                        || number.longValue() > MAX_GRACE_SECONDS) {
                    throw ApiException.badRequest("field 'graceSeconds' must be a whole number from 0 to " + MAX_GRACE_SECONDS);
                }
                grace = number.longValue();
            }
        }
        keys.rotate(tenant, keyId, grace).onComplete(result -> answer(ctx, tenant, keyId, result, "rotated"));
    }

    private void answer(RoutingContext ctx, String tenant, String keyId, io.vertx.core.AsyncResult<KeyStore.Change> result,
                        String what) {
        if (result.failed()) {
            ctx.fail(ApiException.unavailable("the key cannot be " + what, result.cause(), 1));
            return;
        }
        KeyStore.Change change = result.result();
        if (change.refusal() == KeyStore.Refusal.NOT_FOUND) {
            ctx.fail(ApiException.notFound("no key '" + keyId + "' of this tenant (or it is revoked already)"));
        } else if (change.refusal() == KeyStore.Refusal.LAST_ADMIN_KEY) {
            ctx.fail(new ApiException(409, "last_admin_key", "'" + keyId + "' is the tenant's last working admin key; make "
                    + "another admin key first (or rotate this one)"));
        } else {
            LOG.info("audit: key {} [tenant: {}, key: {}, by: {}]", what, tenant, keyId, by);
            changed.accept(tenant);
            JsonObject body = new JsonObject();
            if (change.made().isPresent()) {
                ctx.response().setStatusCode(201);
                body.put("key", change.made().get().toJson()).put("previous", change.key().orElseThrow().toJson());
            } else {
                body.put("key", change.key().orElseThrow().toJson());
            }
            ctx.json(body);
        }
    }

    /** The key's own message rate, within its tenant's: a whole number from 0 to 1,000,000, or null for none. */
    private static Integer messagesPerMinute(Object raw) {
        if (raw == null) {
            return null;
        }
        if (!(raw instanceof Number number) || number.doubleValue() != number.longValue() || number.longValue() < 0
                || number.longValue() > MAX_MESSAGES_PER_MINUTE) {
            throw ApiException.badRequest("field 'messagesPerMinute' must be a whole number from 0 to " + MAX_MESSAGES_PER_MINUTE
                    + " (leave it out for none), got " + io.vertx.core.json.Json.encode(raw));
        }
        return number.intValue();
    }

    /** The bots a key is limited to, or null for every bot; at most 100, each a bot id. */
    private static java.util.List<String> botIds(Object raw) {
        if (raw == null) {
            return null;
        }
        if (!(raw instanceof JsonArray array) || array.isEmpty() || array.size() > 100) {
            throw ApiException.badRequest("field 'botIds' must be an array of 1 to 100 bot ids (leave it out for every bot)");
        }
        Set<String> out = new LinkedHashSet<>();
        for (Object item : array) {
            if (!(item instanceof String id) || !BotRef.ID.matcher(id).matches()) {
                throw ApiException.badRequest("field 'botIds' may hold only bot ids, got " + array.encode());
            }
            out.add(id);
        }
        return java.util.List.copyOf(out);
    }

    private static Set<String> scopes(Object raw) {
        if (!(raw instanceof JsonArray array) || array.isEmpty()) {
            throw ApiException.badRequest("field 'scopes' must be a non-empty array of 'chat', 'read' and 'admin'");
        }
        Set<String> out = new LinkedHashSet<>();
        for (Object value : array) {
            if (!(value instanceof String scope) || !Scopes.ALL.contains(scope)) {
                throw ApiException.badRequest("field 'scopes' may hold only 'chat', 'read' and 'admin', got " + array.encode());
            }
            out.add(scope);
        }
        return out;
    }

    private static Instant expiry(String raw) {
        if (raw == null) {
            return null;
        }
        Instant at;
        try {
            at = Instant.parse(raw);
        } catch (DateTimeParseException e) {
            throw ApiException.badRequest("field 'expiresAt' must be an instant like 2027-01-31T00:00:00Z, got '" + raw + "'");
        }
        if (!at.isAfter(Instant.now())) {
            throw ApiException.badRequest("field 'expiresAt' must be in the future, got '" + raw + "'");
        }
        return at;
    }
}
