package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.http.HttpErrors;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;

/**
 * The audit of writes on the gateway's API: one {@code http_write} row per POST, PUT, PATCH or DELETE that
 * passed authentication, written after the answer was sent, so it never delays one. Message intake
 * ({@code POST /api/v1/messages}, {@code POST /v1/chat/completions}) is not audited per message: it is
 * high-volume and each message is already recorded in the inbox with its chat and sender.
 */
public final class HttpAudit {

    private static final Logger LOG = LoggerFactory.getLogger(HttpAudit.class);
    private static final String ROUTE = "clawfleet.audit.route";
    private static final String PARAMS = "clawfleet.audit.params";
    private static final String CHAT = "clawfleet.audit.chat";
    private static final Set<HttpMethod> WRITES = Set.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH, HttpMethod.DELETE);
    private static final Set<String> INTAKE = Set.of("POST /api/v1/messages", "POST /v1/chat/completions");
    private static final Pattern ERROR_ID = Pattern.compile("error id ([0-9a-f]{8})");
    /** Header a client may send to say what it is ({@code clawfleet-cli admin grant}); recorded, not trusted. */
    public static final String CLIENT_HEADER = "x-clawfleet-client";
    /** Audit rows being written at most; beyond, rows are dropped, counted and logged rather than queued without bound. */
    private static final int MAX_IN_FLIGHT = 1_000;

    private final AuditStore audit;
    private final Metrics metrics;
    private final AtomicInteger inFlight = new AtomicInteger();

    public HttpAudit(AuditStore audit, Metrics metrics) {
        this.audit = Objects.requireNonNull(audit);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** First handler of a write route: names its template (not the raw path) for the audit row. */
    public static Handler<RoutingContext> route(String template) {
        return ctx -> {
            ctx.put(ROUTE, template);
            Map<String, String> params = new HashMap<>(ctx.pathParams());
            String path = ctx.normalizedPath();
            if (template.endsWith("*") && path.length() >= template.length() - 1) {
                params.put("*", path.substring(template.length() - 1));
            }
            ctx.put(PARAMS, Map.copyOf(params));
            ctx.next();
        };
    }

    /** Names the chat a write acts on when its route does not (a task created for the chat in its body). */
    public static void chat(RoutingContext ctx, String channel, String chatKey) {
        ctx.put(CHAT, new String[] {channel, chatKey});
    }

    /** Route handler after authentication on {@code /api/*} and {@code /v1/*}: audits the request once it is answered. */
    public void handle(RoutingContext ctx) {
        HttpMethod method = ctx.request().method();
        if (WRITES.contains(method) && !INTAKE.contains(method.name() + " " + trimmed(ctx.normalizedPath()))) {
            ctx.addEndHandler(done -> record(ctx, done.succeeded()));
        }
        ctx.next();
    }

    /** The bot of a bot's route once resolved; null for the tenant's own routes. */
    private static String bot(RoutingContext ctx) {
        BotRef bot = ctx.get(BotScope.BOT);
        return bot == null ? null : bot.botId();
    }

    private void record(RoutingContext ctx, boolean answered) {
        String template = ctx.get(ROUTE);
        int status = ctx.response().getStatusCode();
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        if (tenant == null || template == null && (status == 404 || status == 405)) {
            return; // no route matched: nothing could have changed
        }
        if (inFlight.incrementAndGet() > MAX_IN_FLIGHT) {
            inFlight.decrementAndGet();
            metrics.increment("clawfleet.audit.dropped", "tenant", tenant.id());
            LOG.warn("audit row dropped, too many being written [tenant: {}, method: {}, route: {}, status: {}]",
                    tenant.id(), ctx.request().method(), template, status);
            return;
        }
        Map<String, String> params = ctx.get(PARAMS, Map.of());
        ApiException error = ctx.get(HttpErrors.ERROR);
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        JsonObject metadata = new JsonObject().put("params", new JsonObject(Map.copyOf(params)));
        if (error != null) {
            metadata.put("errorCode", error.code());
        }
        if (!answered) {
            metadata.put("answered", false);
        }
        String client = client(ctx);
        if (client != null) {
            metadata.put("client", client);
        }
        String[] chat = ctx.get(CHAT, new String[] {params.get("channel"), params.get("chatKey")});
        audit.append(new AuditStore.NewEvent(tenant.id(), AuditStore.HTTP_WRITE, outcome(status),
                        key == null ? null : key.keyId(), key == null ? null : key.keyName(), ctx.request().method().name(),
                        template != null ? template : trimmed(ctx.normalizedPath()), status, errorId(error),
                        chat[0], chat[1], null, metadata, bot(ctx)))
                .onComplete(result -> {
                    inFlight.decrementAndGet();
                    if (result.failed()) {
                        metrics.increment("clawfleet.audit.failed", "tenant", tenant.id());
                        LOG.error("audit row not written [tenant: {}, method: {}, route: {}, status: {}]: {}", tenant.id(),
                                ctx.request().method(), template, status, result.cause().getMessage());
                    }
                });
    }

    /** What a client says it is, for the audit: at most 64 printable characters. */
    static String client(RoutingContext ctx) {
        String value = ctx.request().getHeader(CLIENT_HEADER);
        if (value == null) {
            return null;
        }
        String printable = value.replaceAll("[^\\x20-\\x7e]", "?");
        return printable.length() > 64 ? printable.substring(0, 64) : printable;
    }

    static String outcome(int status) {
        if (status < 400) {
            return "success";
        }
        if (status == 400 || status == 413 || status == 422) {
            return "invalid_args";
        }
        return status < 500 ? "denied" : "error";
    }

    private static String errorId(ApiException error) {
        if (error == null || error.getMessage() == null) {
            return null;
        }
        Matcher matcher = ERROR_ID.matcher(error.getMessage());
        return matcher.find() ? matcher.group(1) : null;
    }

    private static String trimmed(String path) {
        return path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    }
}
