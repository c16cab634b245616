package io.clawfleet.gateway.mcp;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.McpSessionStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * A bot as an MCP server over Streamable HTTP ({@code /mcp/v1/bots/{botId}}, issue 16): POST carries one JSON-RPC
 * message, GET opens the session's notification stream or resumes a tool call's stream ({@code Last-Event-ID}), DELETE
 * ends the session. Sessions live in the database ({@link McpSessionStore}), so any gateway serves the next request of
 * a session. Authorised like the rest of the API (a tenant key with {@code chat} scope that reaches the bot); a session
 * is bound to the key that opened it.
 */
public final class McpEndpoint {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(McpEndpoint.class);

    public static final String PATH = "/mcp/v1/bots/:botId";
    public static final String SESSION_HEADER = "Mcp-Session-Id";
    public static final String VERSION_HEADER = "MCP-Protocol-Version";
    /** The protocol revisions served, the newest first: initialize gets the client's when listed, else the newest. */
    public static final List<String> VERSIONS = List.of("2025-11-25", "2025-06-18", "2025-03-26");
    private static final int MAX_STREAMS = 10_000;
    private static final String VERSION = Optional.ofNullable(McpEndpoint.class.getPackage().getImplementationVersion()).orElse("dev");

    private final McpSessionStore sessions;
    private final BotMcp methods;
    private final McpTurns turns;
    private final McpNotifications notifications;
    private final ClawfleetConfig.Mcp config;
    private final Duration idle;
    private final io.clawfleet.shared.metrics.Metrics metrics;
    /** The methods a metric names; any other is counted as {@code other}, so clients cannot grow the series. */
    private static final java.util.Set<String> COUNTED = java.util.Set.of("initialize", "ping", "logging/setLevel", "tools/list",
            "tools/call", "resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
            "resources/unsubscribe", "prompts/list", "prompts/get");

    public McpEndpoint(io.vertx.core.Vertx vertx, McpSessionStore sessions, io.clawfleet.shared.store.ChatStore chats,
                       io.clawfleet.shared.store.WorkspaceStore workspace, io.clawfleet.gateway.Ingest ingest,
                       io.clawfleet.gateway.admission.TenantRates rates, io.clawfleet.gateway.admission.TokenQuotas quotas,
                       io.clawfleet.gateway.reply.ReplyWait replies, String nodeId,
                       ClawfleetConfig.Mcp config, io.clawfleet.shared.metrics.Metrics metrics) {
        this.sessions = Objects.requireNonNull(sessions);
        this.metrics = Objects.requireNonNull(metrics);
        this.config = Objects.requireNonNull(config);
        this.idle = Duration.ofSeconds(config.sessionIdleSeconds());
        this.methods = new BotMcp(chats, workspace, sessions);
        this.turns = new McpTurns(ingest, rates, quotas, replies, sessions, nodeId);
        this.notifications = new McpNotifications(vertx, sessions, MAX_STREAMS);
        metrics.gauge("clawfleet.mcp.streams_open", notifications::open);
    }

    public Future<Void> start() {
        return notifications.start();
    }

    public Future<Void> stop() {
        return notifications.stop();
    }

    /** Drops sessions idle past their TTL (any gateway may; racing deletes are harmless). */
    public Future<Integer> dropIdle() {
        return sessions.dropIdle(idle);
    }

    /**
     * First handler of the endpoint: a browser origin that is neither loopback nor allowed ({@code mcp.allowedOrigins})
     * is refused before anything else (DNS rebinding). A client that sends no Origin (a desktop app, an agent) passes.
     */
    public void origin(RoutingContext ctx) {
        String origin = ctx.request().getHeader("origin");
        if (origin == null || allowedOrigin(origin, config.allowedOrigins())) {
            ctx.next();
            return;
        }
        send(ctx, 403, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "origin '" + origin + "' is not allowed to use this MCP "
                + "server (the operator allows origins with CLAWFLEET_MCP_ALLOWED_ORIGINS)", null));
    }

    static boolean allowedOrigin(String origin, List<String> allowed) {
        String normal = origin.strip().toLowerCase(Locale.ROOT).replaceAll("/+$", "");
        if (allowed.contains(normal)) {
            return true;
        }
        try {
            URI uri = URI.create(normal);
            String host = uri.getHost();
            return ("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
                    && ("localhost".equals(host) || "127.0.0.1".equals(host) || "[::1]".equals(host));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    public void post(RoutingContext ctx) {
        JsonObject message;
        try {
            Object parsed = Json.decodeValue(ctx.body().buffer() == null ? io.vertx.core.buffer.Buffer.buffer() : ctx.body().buffer());
            if (parsed instanceof JsonArray) {
                send(ctx, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "JSON-RPC batches are not supported: send one "
                        + "message per request (protocol 2025-06-18 and later)", null));
                return;
            }
            if (!(parsed instanceof JsonObject object)) {
                send(ctx, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "the body must be one JSON-RPC message (an object)", null));
                return;
            }
            message = object;
        } catch (DecodeException e) {
            send(ctx, 400, JsonRpc.error(null, JsonRpc.PARSE_ERROR, "Parse error: the body is not JSON", null));
            return;
        }
        Object id = message.getValue("id");
        Object methodValue = message.getValue("method");
        if (!"2.0".equals(message.getValue("jsonrpc")) || (methodValue != null && !(methodValue instanceof String))
                || (message.containsKey("id") && !JsonRpc.validId(id))
                || (methodValue == null && !message.containsKey("result") && !message.containsKey("error"))) {
            send(ctx, 400, JsonRpc.error(JsonRpc.validId(id) ? id : null, JsonRpc.INVALID_REQUEST, "Invalid Request: expected "
                    + "{\"jsonrpc\":\"2.0\", \"method\": string, \"id\": string or number, \"params\": object}", null));
            return;
        }
        String method = (String) methodValue;
        Object rawParams = message.getValue("params");
        if (rawParams != null && !(rawParams instanceof JsonObject)) {
            send(ctx, 400, JsonRpc.error(id, JsonRpc.INVALID_PARAMS, "params must be an object", null));
            return;
        }
        JsonObject params = rawParams == null ? new JsonObject() : (JsonObject) rawParams;
        String version = ctx.request().getHeader(VERSION_HEADER);
        if (version != null && !VERSIONS.contains(version) && !"initialize".equals(method)) {
            send(ctx, 400, JsonRpc.error(id, JsonRpc.INVALID_REQUEST, "unsupported MCP-Protocol-Version '" + version
                    + "'; this server speaks " + VERSIONS, null));
            return;
        }
        boolean request = method != null && message.containsKey("id");
        if (request) {
            BotRef counted = BotScope.bot(ctx);
            metrics.increment("clawfleet.mcp.requests", "tenant", counted.tenantId(), "bot", counted.botId(),
                    "method", COUNTED.contains(method) ? method : "other");
        }
        if ("initialize".equals(method)) {
            if (!request) {
                send(ctx, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "initialize must be a request (with an id)", null));
            } else {
                initialize(ctx, id, params);
            }
            return;
        }
        withSession(ctx, request ? id : null, (session, sessionId) -> {
            if (!request) {
                // a notification (initialized, cancelled, ...) or a response: nothing to answer
                ctx.response().setStatusCode(202).end();
                return;
            }
            try {
                if ("tools/call".equals(method) && BotMcp.SEND_MESSAGE.equals(params.getValue("name"))) {
                    turns.send(ctx, session, sessionId, id, params, accepts(ctx, "text/event-stream"));
                    return;
                }
                methods.handle(session, method, params).onComplete(result -> {
                    if (result.succeeded()) {
                        respond(ctx, JsonRpc.result(id, result.result()));
                    } else {
                        fail(ctx, id, result.cause(), 200);
                    }
                });
            } catch (RuntimeException e) {
                fail(ctx, id, e, 200);
            }
        });
    }

    private void initialize(RoutingContext ctx, Object id, JsonObject params) {
        if (!(params.getValue("protocolVersion") instanceof String requested)) {
            send(ctx, 200, JsonRpc.error(id, JsonRpc.INVALID_PARAMS, "params.protocolVersion must be a string", null));
            return;
        }
        String version = VERSIONS.contains(requested) ? requested : VERSIONS.get(0);
        JsonObject client = params.getValue("clientInfo") instanceof JsonObject c ? c : new JsonObject();
        BotRef bot = BotScope.bot(ctx);
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        String sessionId = McpTurns.randomId() + McpTurns.randomId();
        sessions.open(sessionId, bot, key.keyId(), version, stringOrNull(client.getValue("name")),
                stringOrNull(client.getValue("version")), config.maxSessionsPerTenant()).onComplete(opened -> {
            if (opened.failed()) {
                fail(ctx, id, ApiException.unavailable("the session cannot be opened right now (database unavailable)",
                        opened.cause(), 1), 503);
            } else if (!opened.result()) {
                send(ctx, 429, JsonRpc.error(id, JsonRpc.LIMIT_REACHED, "this tenant has " + config.maxSessionsPerTenant()
                        + " open MCP sessions, the most allowed: end some (DELETE with their Mcp-Session-Id) or wait for idle "
                        + "ones to expire", new JsonObject().put("limit", "mcp.maxSessionsPerTenant")));
            } else {
                ctx.response().putHeader(SESSION_HEADER, sessionId);
                respond(ctx, JsonRpc.result(id, new JsonObject()
                        .put("protocolVersion", version)
                        .put("capabilities", BotMcp.capabilities())
                        .put("serverInfo", new JsonObject().put("name", "clawfleet-bot-" + bot.botId())
                                .put("title", "Clawfleet bot " + bot.botId()).put("version", VERSION))
                        .put("instructions", "This is the Clawfleet bot '" + bot.botId() + "'. Talk to it with send_message "
                                + "(it keeps each chat's history), look around with list_chats, read_history and search_memory; "
                                + "its workspace files are resources and its skills are prompts.")));
            }
        });
    }

    /** GET: the session's notification stream, or a tool call's stream resumed after {@code Last-Event-ID}. */
    public void get(RoutingContext ctx) {
        if (!accepts(ctx, "text/event-stream")) {
            send(ctx, 406, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "GET opens a Server-Sent Events stream: send "
                    + "'Accept: text/event-stream'", null));
            return;
        }
        withSession(ctx, null, (session, sessionId) -> {
            String last = ctx.request().getHeader("last-event-id");
            int colon = last == null ? -1 : last.lastIndexOf(':');
            if (colon > 0 && !last.startsWith("n:")) {
                String streamId = last.substring(0, colon);
                String position = last.substring(colon + 1);
                sessions.stream(streamId, session.hash()).onComplete(found -> {
                    if (found.failed()) {
                        fail(ctx, null, ApiException.unavailable("the stream cannot be resumed right now", found.cause(), 1), 503);
                    } else if (found.result().isEmpty() || !position.matches("end|[0-9]{1,9}")) {
                        send(ctx, 404, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "no stream of this session has the event '"
                                + last + "'", null));
                    } else {
                        boolean done = position.equals("end");
                        turns.resume(ctx, session, sessionId, found.result().get(), done ? 0 : Integer.parseInt(position), done);
                    }
                });
                return;
            }
            if (notifications.full()) {
                fail(ctx, null, ApiException.unavailable("too many notification streams are open on this gateway", 1), 503);
                return;
            }
            notifications.open(Sse.start(ctx.vertx(), ctx.response(), sessionId), session, last != null);
        });
    }

    /** DELETE: ends the session (its streams' records with it). */
    public void delete(RoutingContext ctx) {
        String sessionId = ctx.request().getHeader(SESSION_HEADER);
        if (sessionId == null || sessionId.isBlank()) {
            send(ctx, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "DELETE needs the header " + SESSION_HEADER, null));
            return;
        }
        sessions.close(sessionId, BotScope.bot(ctx), ApiKeyAuth.key(ctx).keyId()).onComplete(closed -> {
            if (closed.failed()) {
                fail(ctx, null, ApiException.unavailable("the session cannot be ended right now", closed.cause(), 1), 503);
            } else if (!closed.result()) {
                send(ctx, 404, JsonRpc.error(null, JsonRpc.SESSION_NOT_FOUND, "Session not found", null));
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private interface SessionHandler {
        void handle(McpSessionStore.Session session, String sessionId);
    }

    /** Finds the request's session for this bot and key: 400 without the header, 404 when there is none (any more). */
    private void withSession(RoutingContext ctx, Object id, SessionHandler handler) {
        String sessionId = ctx.request().getHeader(SESSION_HEADER);
        if (sessionId == null || sessionId.isBlank() || sessionId.length() > 256) {
            send(ctx, 400, JsonRpc.error(id, JsonRpc.INVALID_REQUEST, "Bad Request: the header " + SESSION_HEADER
                    + " is required (send initialize first and use the session id it gives)", null));
            return;
        }
        sessions.find(sessionId, BotScope.bot(ctx), ApiKeyAuth.key(ctx).keyId(), idle).onComplete(found -> {
            if (found.failed()) {
                fail(ctx, id, ApiException.unavailable("the session cannot be looked up right now (database unavailable)",
                        found.cause(), 1), 503);
            } else if (found.result().isEmpty()) {
                send(ctx, 404, JsonRpc.error(id, JsonRpc.SESSION_NOT_FOUND, "Session not found: it ended, expired or belongs "
                        + "to another bot or key; initialize a new one", null));
            } else {
                handler.handle(found.result().get(), sessionId);
            }
        });
    }

    static boolean accepts(RoutingContext ctx, String type) {
        String accept = ctx.request().getHeader("accept");
        return accept != null && accept.toLowerCase(Locale.ROOT).contains(type);
    }

    private static String stringOrNull(Object value) {
        return value instanceof String s ? s : null;
    }

    static void respond(RoutingContext ctx, JsonObject message) {
        send(ctx, 200, message);
    }

    /** Answers a failed request: a JSON-RPC error (its code from a {@link JsonRpc.Failure}), with the HTTP status given. */
    static void fail(RoutingContext ctx, Object id, Throwable cause, int status) {
        if (cause instanceof JsonRpc.Failure failure) {
            send(ctx, status, JsonRpc.error(id, failure.code, failure.getMessage(), failure.data));
        } else if (cause instanceof ApiException api) {
            if (api.retryAfterSeconds() > 0) {
                ctx.response().putHeader("retry-after", Long.toString(api.retryAfterSeconds()));
            }
            send(ctx, status == 200 ? 200 : api.status(), JsonRpc.error(id, JsonRpc.INTERNAL_ERROR, api.getMessage(),
                    new JsonObject().put("code", api.code())));
        } else {
            String errorId = ApiException.errorId(cause, "an MCP request failed");
            LOG.debug("MCP request failed [error id: {}]", errorId);
            send(ctx, status, JsonRpc.error(id, JsonRpc.INTERNAL_ERROR, "internal error (error id " + errorId + ")", null));
        }
    }

    private static void send(RoutingContext ctx, int status, JsonObject message) {
        if (ctx.response().ended() || ctx.response().closed()) {
            return;
        }
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(message.encode());
    }
}
