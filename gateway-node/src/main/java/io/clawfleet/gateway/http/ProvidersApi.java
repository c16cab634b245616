package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.provider.BotProviders;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A bot's own model providers (issue 14): {@code PUT /api/v1/bots/{botId}/providers} replaces them (base URLs, API
 * keys, models, roles and their fallback chains, prices), {@code GET} shows them with each key as a hint
 * ({@code sk-…abcd}, never the key), {@code DELETE} removes them so the bot uses the operator's again (where the
 * operator allows it for the tenant). A provider sent without {@code apiKey} keeps the key it has, so what a GET
 * shows can be edited and sent back. Keys are sealed with the tenant's data key before they leave the gateway.
 * Every base URL must lead out of the cluster: a host that is (or resolves to) a loopback, private or link-local
 * address is refused unless the operator allows it ({@code CLAWFLEET_EGRESS_ALLOWED_HOSTS}); workers check again
 * at each connection, so a name that later resolves inwards is refused there too.
 */
public final class ProvidersApi {

    private final BotProviderStore store;
    private final EgressGuard egress;
    private final Consumer<String> tenantChanged;

    /** @param tenantChanged tells every node a tenant's bots changed (workers drop the bot's model clients) */
    public ProvidersApi(BotProviderStore store, EgressGuard egress, Consumer<String> tenantChanged) {
        this.store = Objects.requireNonNull(store);
        this.egress = Objects.requireNonNull(egress);
        this.tenantChanged = Objects.requireNonNull(tenantChanged);
    }

    public void get(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        store.resolve(bot).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(bot, result.cause(), "read"));
                return;
            }
            BotProviderStore.Resolved resolved = result.result();
            ctx.json(json(bot, resolved.own().orElse(null), resolved.operatorModels()));
        });
    }

    public void put(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        JsonObject body = JsonRequest.parse(ctx, null).json();
        try {
            BotProviders.parse(body, null); // every field checked before anything is read or resolved
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        }
        checkHosts(body).compose(v -> store.put(bot, previous -> BotProviders.parse(body, previous)))
                .compose(stored -> store.resolve(bot).map(resolved -> json(bot, stored, resolved.operatorModels())))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(bot, result.cause(), "stored"));
                        return;
                    }
                    tenantChanged.accept(bot.tenantId());
                    ctx.json(result.result());
                });
    }

    public void delete(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        store.delete(bot).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the bot's providers cannot be removed right now (database unavailable)", 1));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("bot " + bot.botId() + " has no providers of its own"));
            } else {
                tenantChanged.accept(bot.tenantId());
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    /** Every base URL's host must be reachable from outside the cluster's own networks (or allowed by the operator). */
    private Future<Void> checkHosts(JsonObject body) {
        Set<String> hosts = new LinkedHashSet<>();
        JsonObject providers = body.getJsonObject("providers");
        for (String name : providers.fieldNames()) {
            hosts.add(URI.create(providers.getJsonObject(name).getString("baseUrl")).getHost());
        }
        return checkHosts(egress, hosts, "a provider's baseUrl", "model endpoints");
    }

    /**
     * Fails with a 400 naming the first host that leads inside the cluster's networks or does not resolve; what it
     * resolves to stays in the log, since the answer must not map the operator's network.
     *
     * @param what   what held the host, e.g. "a provider's baseUrl"
     * @param whose  what must be reachable on the internet, e.g. "model endpoints"
     */
    static Future<Void> checkHosts(EgressGuard egress, Set<String> hosts, String what, String whose) {
        List<Future<?>> checks = new ArrayList<>();
        for (String host : hosts) {
            String bare = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
            checks.add(egress.address(bare).recover(refused -> Future.failedFuture(refused instanceof EgressGuard.Refused
                    ? ApiException.badRequest(what + " may not lead to " + host + ": it is, or resolves to, an "
                    + "address inside the cluster's networks, or it does not resolve (error id " + ApiException.errorId(refused,
                    what + " was refused [host: " + host + "]") + "); " + whose + " must be reachable on the "
                    + "internet, or allowed by the operator (CLAWFLEET_EGRESS_ALLOWED_HOSTS)")
                    : refused)));
        }
        return Future.all(checks).mapEmpty();
    }

    private static ApiException failure(BotRef bot, Throwable cause, String what) {
        return switch (cause) {
            case ApiException api -> api;
            case IllegalArgumentException bad -> ApiException.badRequest(bad.getMessage());
            case BotProviderStore.Conflict conflict -> new ApiException(409, "conflict", conflict.getMessage());
            case SecretException secret -> new ApiException(503, "secrets_unavailable", "the bot's provider keys cannot be "
                    + what + " on this gateway (error id " + ApiException.errorId(secret, "provider keys [tenant: "
                    + bot.tenantId() + ", bot: " + bot.botId() + "]") + "); ask the operator");
            default -> ApiException.unavailable("the bot's providers cannot be " + what + " right now", cause, 1);
        };
    }

    /**
     * What the API shows: {@code source} says which providers the bot's model calls use: {@code bot} (its own,
     * shown with key hints), {@code operator} (the cluster's), or {@code none} (it has none and the operator does
     * not let this tenant use the cluster's: its messages are answered with an error until it has some).
     */
    static JsonObject json(BotRef bot, BotProviderStore.Stored own, boolean operatorModels) {
        JsonObject json = new JsonObject().put("bot", bot.botId()).put("operatorModels", operatorModels);
        if (own == null) {
            return json.put("source", operatorModels ? "operator" : "none");
        }
        JsonObject config = own.providers().config();
        return json.put("source", "bot").put("version", own.version()).put("providers", config.getJsonObject("providers"))
                .put("roles", config.getJsonObject("roles"));
    }
}
