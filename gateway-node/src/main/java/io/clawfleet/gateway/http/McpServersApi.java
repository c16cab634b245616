package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.BotMcpServerStore;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.workspace.RemoteMcpServers;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.net.URI;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A bot's remote MCP servers (issue 16): {@code PUT /api/v1/bots/{botId}/mcp-servers} replaces them (URLs, headers
 * or bearer tokens, time limits, who may use which tool), {@code GET} shows them with each header's value as a hint,
 * {@code DELETE} removes them. Headers are sealed with the tenant's data key before they leave the gateway. Every URL
 * must lead out of the cluster unless the operator allows its host ({@code CLAWFLEET_EGRESS_ALLOWED_HOSTS}); workers
 * check again at each connection. A change reaches every worker at once (their tool lists are dropped), so the next
 * turn of the bot uses the new servers.
 */
public final class McpServersApi {

    private final BotMcpServerStore store;
    private final EgressGuard egress;
    private final Consumer<String> tenantChanged;

    /** @param tenantChanged tells every node a tenant's bots changed (workers drop the bot's MCP tool lists) */
    public McpServersApi(BotMcpServerStore store, EgressGuard egress, Consumer<String> tenantChanged) {
        this.store = Objects.requireNonNull(store);
        this.egress = Objects.requireNonNull(egress);
        this.tenantChanged = Objects.requireNonNull(tenantChanged);
    }

    public void get(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        store.get(bot).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(failure(bot, result.cause(), "read"));
                return;
            }
            ctx.json(json(bot, result.result().orElse(null)));
        });
    }

    public void put(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        JsonObject body = JsonRequest.parse(ctx, null).json();
        RemoteMcpServers given;
        try {
            given = RemoteMcpServers.parse(body, null); // every field checked before anything is read or resolved
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        }
        Set<String> hosts = new LinkedHashSet<>();
        given.servers().values().forEach(server -> hosts.add(URI.create(server.url()).getHost()));
        ProvidersApi.checkHosts(egress, hosts, "an MCP server's url", "MCP servers")
                .compose(v -> store.put(bot, previous -> RemoteMcpServers.parse(body, previous)))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(failure(bot, result.cause(), "stored"));
                        return;
                    }
                    tenantChanged.accept(bot.tenantId());
                    ctx.json(json(bot, result.result()));
                });
    }

    public void delete(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        store.delete(bot).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the bot's MCP servers cannot be removed right now (database unavailable)", 1));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("bot " + bot.botId() + " has no remote MCP servers"));
            } else {
                tenantChanged.accept(bot.tenantId());
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private static ApiException failure(BotRef bot, Throwable cause, String what) {
        return switch (cause) {
            case ApiException api -> api;
            case IllegalArgumentException bad -> ApiException.badRequest(bad.getMessage());
            case BotProviderStore.Conflict conflict -> new ApiException(409, "conflict", conflict.getMessage());
            case SecretException secret -> new ApiException(503, "secrets_unavailable", "the bot's MCP server headers cannot be "
                    + what + " on this gateway (error id " + ApiException.errorId(secret, "mcp server headers [tenant: "
                    + bot.tenantId() + ", bot: " + bot.botId() + "]") + "); ask the operator");
            default -> ApiException.unavailable("the bot's MCP servers cannot be " + what + " right now", cause, 1);
        };
    }

    /** What the API shows: the servers with header hints, never a value; {@code servers} is empty when it has none. */
    static JsonObject json(BotRef bot, BotMcpServerStore.Stored stored) {
        JsonObject json = new JsonObject().put("bot", bot.botId());
        if (stored == null) {
            return json.put("servers", new JsonObject());
        }
        return json.put("version", stored.version()).mergeIn(stored.servers().config());
    }
}
