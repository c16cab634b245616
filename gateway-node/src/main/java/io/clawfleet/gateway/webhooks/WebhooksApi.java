package io.clawfleet.gateway.webhooks;

import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.http.JsonRequest;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.WebhookStore;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A bot's signed webhook endpoints: {@code POST /api/v1/bots/{botId}/webhooks} adds one ({@code url}, {@code events},
 * {@code description}; the answer has its signing secret, shown this once), {@code GET} lists them, {@code GET|PATCH|DELETE
 * .../webhooks/{id}} reads, changes ({@code url}, {@code events}, {@code description}, {@code enabled}) or removes one,
 * {@code GET .../webhooks/{id}/deliveries} lists its latest deliveries and {@code POST .../deliveries/{deliveryId}/retry}
 * sends one again. An endpoint's URL must lead where the egress rules allow (public addresses, unless the operator
 * allows more), checked here and again at every try.
 */
public final class WebhooksApi {

    private static final Set<String> FIELDS = Set.of("url", "events", "description", "enabled");
    private static final int MAX_DELIVERIES = 200;

    private final WebhookStore store;
    private final EgressGuard egress;

    public WebhooksApi(WebhookStore store, EgressGuard egress) {
        this.store = Objects.requireNonNull(store);
        this.egress = Objects.requireNonNull(egress);
    }

    public void create(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, FIELDS);
        if (body.json().containsKey("enabled")) {
            throw ApiException.badRequest("field 'enabled' is for PATCH: a new endpoint is enabled");
        }
        URI url = url(body.requiredString("url", 2_048));
        List<String> events = events(body.json().getValue("events"), true);
        String description = body.optionalString("description", 256);
        String secret = StandardWebhooks.newSecret();
        reachable(url).compose(v -> store.create(owner, url.toString(), events, description, secret))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(owner, result.cause()));
                        return;
                    }
                    ctx.response().setStatusCode(201).putHeader("content-type", "application/json")
                            .end(json(result.result()).put("secret", secret).encode());
                });
    }

    public void list(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        store.list(owner).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(owner, result.cause()));
                return;
            }
            JsonArray items = new JsonArray();
            result.result().forEach(endpoint -> items.add(json(endpoint)));
            ctx.json(new JsonObject().put("webhooks", items));
        });
    }

    public void get(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = id(ctx);
        store.find(owner, id).onComplete(result -> answer(ctx, owner, id, result));
    }

    public void patch(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = id(ctx);
        JsonRequest body = JsonRequest.parse(ctx, FIELDS);
        if (body.json().isEmpty()) {
            throw ApiException.badRequest("nothing to change: give 'url', 'events', 'description' or 'enabled'");
        }
        String given = body.optionalString("url", 2_048);
        URI url = given == null ? null : url(given);
        List<String> events = body.json().containsKey("events") ? events(body.json().getValue("events"), true) : null;
        String description = body.optionalString("description", 256);
        Object enabled = body.json().getValue("enabled");
        if (enabled != null && !(enabled instanceof Boolean)) {
            throw ApiException.badRequest("field 'enabled' must be true or false");
        }
        (url == null ? Future.<Void>succeededFuture() : reachable(url))
                .compose(v -> store.update(owner, id, url == null ? null : url.toString(), events, description, (Boolean) enabled))
                .onComplete(result -> answer(ctx, owner, id, result));
    }

    public void delete(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = id(ctx);
        store.delete(owner, id).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(owner, result.cause()));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no webhook endpoint " + id + " for this bot"));
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    /** {@code ?limit=} (1 to 200, default 50): the newest first, with what each try got. */
    public void deliveries(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = id(ctx);
        String given = ctx.request().getParam("limit");
        int limit;
        try {
            limit = given == null ? 50 : Integer.parseInt(given);
        } catch (NumberFormatException e) {
            limit = -1;
        }
        if (limit < 1 || limit > MAX_DELIVERIES) {
            throw ApiException.badRequest("'limit' must be a whole number from 1 to " + MAX_DELIVERIES);
        }
        store.deliveries(owner, id, limit).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(owner, result.cause()));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no webhook endpoint " + id + " for this bot"));
            } else {
                JsonArray items = new JsonArray();
                result.result().get().forEach(d -> items.add(new JsonObject().put("id", d.id()).put("event", d.eventType())
                        .put("status", d.status()).put("attempts", d.attempts())
                        .put("nextAttemptAt", "pending".equals(d.status()) ? String.valueOf(d.nextAttemptAt()) : null)
                        .put("lastStatus", d.lastStatus()).put("lastError", d.lastError())
                        .put("createdAt", d.createdAt().toString())
                        .put("finishedAt", d.finishedAt() == null ? null : d.finishedAt().toString())
                        .put("payload", new JsonObject(d.payload()))));
                ctx.json(new JsonObject().put("deliveries", items));
            }
        });
    }

    public void retry(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = id(ctx);
        String deliveryId = ctx.pathParam("deliveryId");
        store.retry(owner, id, deliveryId).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(owner, result.cause()));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no delivery '" + deliveryId + "' still to deliver at webhook endpoint " + id
                        + " of this bot"));
            } else {
                ctx.response().setStatusCode(202).putHeader("content-type", "application/json")
                        .end(new JsonObject().put("id", deliveryId).put("status", "pending").encode());
            }
        });
    }

    private static void answer(RoutingContext ctx, BotRef owner, long id, AsyncResult<Optional<WebhookStore.Endpoint>> found) {
        if (found.failed()) {
            ctx.fail(failure(owner, found.cause()));
        } else if (found.result().isEmpty()) {
            ctx.fail(ApiException.notFound("no webhook endpoint " + id + " for this bot"));
        } else {
            ctx.json(json(found.result().get()));
        }
    }

    private static URI url(String given) {
        URI url;
        try {
            url = new URI(given.strip());
        } catch (URISyntaxException e) {
            throw ApiException.badRequest("field 'url' must be an http:// or https:// URL: " + e.getMessage());
        }
        if (url.getScheme() == null || !url.getScheme().matches("(?i)https?") || url.getHost() == null || url.getRawUserInfo() != null
                || url.getRawFragment() != null) {
            throw ApiException.badRequest("field 'url' must be an http:// or https:// URL with a host, and no user or fragment");
        }
        return url;
    }

    /** Where the URL's host resolves must be an address the egress rules allow, now (and at every try). */
    private Future<Void> reachable(URI url) {
        return egress.address(url.getHost()).<Void>mapEmpty().recover(refused -> Future.failedFuture(ApiException.badRequest(
                "field 'url' leads where webhooks may not go: " + refused.getMessage())));
    }

    private static List<String> events(Object value, boolean required) {
        if (!(value instanceof JsonArray array) || array.isEmpty() && required || array.size() > WebhookStore.EVENTS.size()) {
            throw ApiException.badRequest("field 'events' must be a non-empty array of " + new java.util.TreeSet<>(WebhookStore.EVENTS));
        }
        List<String> out = new ArrayList<>();
        for (Object item : array) {
            if (!(item instanceof String event) || !WebhookStore.EVENTS.contains(event)) {
                throw ApiException.badRequest("field 'events' must name events of " + new java.util.TreeSet<>(WebhookStore.EVENTS)
                        + ", got " + (item instanceof String text ? "'" + text + "'" : JsonRequest.kind(item)));
            }
            out.add(event);
        }
        return List.copyOf(new LinkedHashSet<>(out));
    }

    private static Throwable failure(BotRef owner, Throwable failure) {
        return switch (failure) {
            case ApiException api -> api;
            case IllegalStateException full -> new ApiException(409, "limit_reached", full.getMessage());
            case SecretException noKey -> new ApiException(503, "secrets_unavailable", "the endpoint's secret cannot be sealed on "
                    + "this gateway (error id " + ApiException.errorId(noKey, "a webhook secret cannot be sealed [tenant: "
                    + owner.tenantId() + "]") + "); ask the operator");
            default -> ApiException.unavailable("webhooks cannot be read or changed right now (database unavailable)", failure, 1);
        };
    }

    private static long id(RoutingContext ctx) {
        try {
            return Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("webhook endpoint id must be a number, got '" + ctx.pathParam("id") + "'");
        }
    }

    private static JsonObject json(WebhookStore.Endpoint endpoint) {
        return new JsonObject().put("id", endpoint.id()).put("url", endpoint.url()).put("events", new JsonArray(endpoint.events()))
                .put("description", endpoint.description()).put("secretHint", endpoint.secretHint()).put("enabled", endpoint.enabled())
                .put("disabledReason", endpoint.disabledReason())
                .put("failingSince", endpoint.failingSince() == null ? null : endpoint.failingSince().toString())
                .put("createdAt", endpoint.createdAt().toString());
    }
}
