package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;

/**
 * {@code GET /api/v1/audit?after=ID&limit=N&type=T}: the tenant's own audit trail, oldest first, paged by id
 * ({@code next} is the {@code after} of the following page). Any tenant key reads it for now; keys with
 * scopes (only {@code admin} may read the audit) come with the key API of a later issue.
 */
public final class AuditApi {

    private static final Set<String> PARAMETERS = Set.of("after", "limit", "type");
    private static final Pattern TYPE = Pattern.compile("[a-z][a-z_]{0,39}");
    static final int DEFAULT_LIMIT = 100;

    private final AuditStore audit;

    public AuditApi(AuditStore audit) {
        this.audit = Objects.requireNonNull(audit);
    }

    public void list(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        for (String name : ctx.queryParams().names()) {
            if (!PARAMETERS.contains(name)) {
                throw ApiException.badRequest("unknown query parameter '" + name + "': expected after, limit or type");
            }
            if (ctx.queryParams().getAll(name).size() > 1) {
                throw ApiException.badRequest("query parameter '" + name + "' is given more than once");
            }
        }
        long after = MessagesApi.queryLong(ctx, "after", 0, 0, Long.MAX_VALUE);
        int limit = (int) MessagesApi.queryLong(ctx, "limit", DEFAULT_LIMIT, 1, AuditStore.MAX_LIST);
        String type = ctx.request().getParam("type");
        if (type != null && !TYPE.matcher(type).matches()) {
            throw ApiException.badRequest("query parameter 'type' must be an event type such as tool_call, http_write,"
                    + " role_change or approval (lowercase letters and '_', at most 40), got '" + type + "'");
        }
        // /api/v1/audit: the whole tenant's trail; /api/v1/bots/{botId}/audit: the events that name that bot
        BotRef bot = ctx.get(BotScope.BOT);
        audit.list(tenant.id(), after, limit, type == null || type.isEmpty() ? null : type, bot == null ? null : bot.botId())
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(ApiException.unavailable("the audit trail cannot be read", result.cause(), 1));
                        return;
                    }
                    List<AuditStore.Event> events = result.result();
                    JsonArray out = new JsonArray();
                    events.forEach(event -> out.add(json(event)));
                    long next = events.isEmpty() ? after : events.get(events.size() - 1).id();
                    ctx.json(new JsonObject().put("events", out).put("next", next));
                });
    }

    public static JsonObject json(AuditStore.Event event) {
        JsonObject out = new JsonObject().put("id", event.id()).put("at", event.at().toString())
                .put("type", event.eventType()).put("outcome", event.outcome());
        putIfSet(out, "botId", event.botId());
        putIfSet(out, "tool", event.toolName());
        putIfSet(out, "reason", event.reason());
        if (event.channel() != null || event.chatKey() != null) {
            out.put("chat", new JsonObject().put("channel", event.channel()).put("chatId", event.chatKey()));
        }
        JsonObject actor = new JsonObject();
        putIfSet(actor, "keyId", event.keyId());
        putIfSet(actor, "keyName", event.keyName());
        putIfSet(actor, "chatRole", event.actorRole());
        if (!actor.isEmpty()) {
            out.put("actor", actor);
        }
        if (event.httpMethod() != null) {
            JsonObject http = new JsonObject().put("method", event.httpMethod()).put("route", event.route())
                    .put("status", event.statusCode());
            putIfSet(http, "errorId", event.errorId());
            out.put("http", http);
        }
        putIfSet(out, "args", event.args());
        putIfSet(out, "metadata", event.metadata());
        return out;
    }

    private static void putIfSet(JsonObject json, String name, Object value) {
        if (value != null) {
            json.put(name, value);
        }
    }
}
