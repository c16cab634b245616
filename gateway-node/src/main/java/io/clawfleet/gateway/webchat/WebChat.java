package io.clawfleet.gateway.webchat;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.admission.RateLimiter;
import io.clawfleet.gateway.admission.TokenQuotas;
import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.WebChatStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.io.IOException;
import java.io.InputStream;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The web chat channel: the end users of a tenant's own site talk to a bot through a widget (one script tag) over a
 * WebSocket to any gateway. Routes, all on every gateway and none behind an API key:
 * <ul>
 *   <li>{@code GET /webchat/v1/widget.js}: the widget;</li>
 *   <li>{@code POST /webchat/v1/sessions} {@code {"key": "pk_..."}}: a token for an anonymous visitor, when the account
 *       allows them (its secret signs it; 30 days);</li>
 *   <li>{@code GET /webchat/v1/ws?key=pk_...}: the WebSocket ({@link WebChatConnection} speaks its protocol).</li>
 * </ul>
 * A page may use them only from an origin the account allows: the WebSocket upgrade and the session call are refused
 * (403) for any other {@code Origin}, so another site cannot open a chat in its visitors' names.
 */
public final class WebChat {

    public static final String WIDGET_PATH = "/webchat/v1/widget.js";
    public static final String SESSIONS_PATH = "/webchat/v1/sessions";
    public static final String SOCKET_PATH = "/webchat/v1/ws";
    /** How long an anonymous visitor's token lasts; the widget asks for a new one when it has expired. */
    static final long ANONYMOUS_SECONDS = TimeUnit.DAYS.toSeconds(30);
    private static final Pattern PUBLISHABLE_KEY = Pattern.compile("pk_([0-9]{1,18})_([A-Za-z0-9_-]{16,64})");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Vertx vertx;
    private final String nodeId;
    private final ChannelBotStore bots;
    private final Ingest ingest;
    private final TokenQuotas quotas;
    private final OutboxStore outbox;
    private final WebChatStore history;
    private final ReplyHub hub;
    private final Metrics metrics;
    private final Buffer widget;
    /** Anonymous sessions per client address: a page asks for one per visitor, a script asking for thousands is refused. */
    private final RateLimiter sessionsPerAddress = new RateLimiter(30, 1, TimeUnit.MINUTES, 100_000);
    private final AtomicInteger open = new AtomicInteger();

    public WebChat(Vertx vertx, String nodeId, ChannelBotStore bots, Ingest ingest, TokenQuotas quotas, OutboxStore outbox,
                   WebChatStore history, ReplyHub hub, Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.bots = Objects.requireNonNull(bots);
        this.ingest = Objects.requireNonNull(ingest);
        this.quotas = Objects.requireNonNull(quotas);
        this.outbox = Objects.requireNonNull(outbox);
        this.history = Objects.requireNonNull(history);
        this.hub = Objects.requireNonNull(hub);
        this.metrics = Objects.requireNonNull(metrics);
        this.widget = resource("webchat/widget.js");
        metrics.gauge("clawfleet.webchat.connections", open::get, "node", nodeId);
    }

    /** A new account's publishable key's public part (the key is {@code pk_<id>_<part>}). */
    public static String newPublicPart() {
        byte[] bytes = new byte[16];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /** A new account's secret, with which the tenant's backend signs end-user tokens (HS256). */
    public static String newSecret() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return "wcs_" + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    public static String publishableKey(ChannelBot account) {
        return "pk_" + account.id() + "_" + account.accountUserId();
    }

    /**
     * Whether {@code origin} (as a browser sends it: {@code scheme://host[:port]}) is one of {@code allowed}; {@code *}
     * allows any. A request without an Origin header does not come from a page: it is allowed (a native app, a test).
     */
    static boolean originAllowed(List<String> allowed, String origin) {
        if (origin == null) {
            return true;
        }
        String given = origin.toLowerCase(Locale.ROOT);
        return allowed.stream().anyMatch(a -> a.equals("*") || a.toLowerCase(Locale.ROOT).equals(given));
    }

    public void widget(RoutingContext ctx) {
        ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, "text/javascript; charset=utf-8")
                .putHeader(HttpHeaders.CACHE_CONTROL, "public, max-age=300")
                // Loaded by other sites' pages: they may run it, nothing else of this origin is exposed by it.
                .putHeader("cross-origin-resource-policy", "cross-origin")
                .end(widget);
    }

    /** Answers the browser's CORS preflight of the session call for an allowed origin (any is let through to the check). */
    public void preflight(RoutingContext ctx) {
        String origin = ctx.request().getHeader(HttpHeaders.ORIGIN);
        ctx.response().setStatusCode(204);
        if (origin != null) {
            ctx.response().putHeader("access-control-allow-origin", origin)
                    .putHeader("access-control-allow-methods", "POST")
                    .putHeader("access-control-allow-headers", "content-type")
                    .putHeader("access-control-max-age", "600")
                    .putHeader(HttpHeaders.VARY, "Origin");
        }
        ctx.response().end();
    }

    /** {@code POST /webchat/v1/sessions}: a token for an anonymous visitor. */
    public void session(RoutingContext ctx) {
        String origin = ctx.request().getHeader(HttpHeaders.ORIGIN);
        JsonObject body;
        try {
            body = ctx.body().buffer() == null ? new JsonObject() : ctx.body().buffer().toJsonObject();
        } catch (RuntimeException e) {
            throw ApiException.badRequest("expected a JSON object {\"key\": \"pk_...\"}");
        }
        Matcher key = body.getValue("key") instanceof String k ? PUBLISHABLE_KEY.matcher(k) : null;
        if (key == null || !key.matches()) {
            throw ApiException.badRequest("field 'key' must be a web chat account's publishable key (pk_...)");
        }
        long wait = sessionsPerAddress.tryAcquire(String.valueOf(ctx.request().remoteAddress() == null ? "?"
                : ctx.request().remoteAddress().hostAddress()));
        if (wait > 0) {
            metrics.increment("clawfleet.webchat.refused", "reason", "sessions_rate");
            throw new ApiException(429, "rate_limited", "too many anonymous sessions from this address; try again later",
                    Math.max(1, TimeUnit.NANOSECONDS.toSeconds(wait)));
        }
        account(key).onComplete(found -> {
            if (found.failed()) {
                ctx.fail(found.cause());
                return;
            }
            Optional<ChannelBotStore.WebhookTarget> target = found.result();
            if (target.isEmpty() || !originAllowed(target.get().bot().allowedOrigins(), origin)) {
                metrics.increment("clawfleet.webchat.refused", "reason", target.isEmpty() ? "key" : "origin");
                ctx.fail(new ApiException(403, "forbidden", "no web chat account has this key, or it does not allow pages of "
                        + "this origin"));
                return;
            }
            ChannelBot account = target.get().bot();
            if (!account.anonymousUsers()) {
                ctx.fail(new ApiException(403, "anonymous_not_allowed", "this web chat account takes only users signed in "
                        + "by the site: its backend mints their tokens"));
                return;
            }
            long expires = Instant.now().getEpochSecond() + ANONYMOUS_SECONDS;
            String userId = "anon-" + newPublicPart();
            metrics.increment("clawfleet.webchat.sessions", "tenant", account.tenantId(), "bot", account.botId());
            if (origin != null) {
                ctx.response().putHeader("access-control-allow-origin", origin).putHeader(HttpHeaders.VARY, "Origin");
            }
            ctx.response().setStatusCode(201).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                    .putHeader(HttpHeaders.CACHE_CONTROL, "no-store")
                    .end(new JsonObject().put("token", EndUserTokens.mint(account.signingSecret(), userId, null, expires))
                            .put("userId", userId).put("expiresAt", Instant.ofEpochSecond(expires).toString()).encode());
        });
    }

    /** {@code GET /webchat/v1/ws?key=pk_...}: upgrades to the web chat protocol for an allowed origin. */
    public void socket(RoutingContext ctx) {
        String origin = ctx.request().getHeader(HttpHeaders.ORIGIN);
        Matcher key = PUBLISHABLE_KEY.matcher(Objects.requireNonNullElse(ctx.request().getParam("key"), ""));
        if (!key.matches()) {
            metrics.increment("clawfleet.webchat.refused", "reason", "key");
            throw ApiException.badRequest("query parameter 'key' must be a web chat account's publishable key (pk_...)");
        }
        if (hub.full()) {
            throw ApiException.unavailable("too many connections are waiting for replies on this gateway", 1);
        }
        // The account is read before the upgrade, so a page of another origin gets a plain 403 and no socket.
        ctx.request().pause();
        account(key).onComplete(found -> {
            if (found.failed()) {
                ctx.request().resume();
                ctx.fail(found.cause());
                return;
            }
            Optional<ChannelBotStore.WebhookTarget> target = found.result();
            if (target.isEmpty() || !originAllowed(target.get().bot().allowedOrigins(), origin)) {
                metrics.increment("clawfleet.webchat.refused", "reason", target.isEmpty() ? "key" : "origin");
                ctx.request().resume();
                ctx.fail(new ApiException(403, "forbidden", "no web chat account has this key, or it does not allow pages of "
                        + "this origin"));
                return;
            }
            if (!target.get().accepting()) {
                metrics.increment("clawfleet.webchat.refused", "reason", "not_accepting");
                ctx.request().resume();
                ctx.fail(ApiException.unavailable("this chat does not take messages now; try again later", 60));
                return;
            }
            ctx.request().toWebSocket().onComplete(upgraded -> {
                if (upgraded.succeeded()) {
                    open.incrementAndGet();
                    upgraded.result().closeHandler(v -> open.decrementAndGet());
                    new WebChatConnection(this, upgraded.result(), target.get().bot(), key.group(0)).start();
                }
            });
        });
    }

    /** The account a publishable key names: its id, then its public part (not secret: compared as is). */
    private Future<Optional<ChannelBotStore.WebhookTarget>> account(Matcher key) {
        long id = Long.parseLong(key.group(1));
        return bots.webhookTarget(id, Channels.WEBCHAT)
                .recover(failure -> Future.failedFuture(ApiException.unavailable("the chat cannot be opened now (error id "
                        + ApiException.errorId(failure, "a web chat account cannot be read [channel: " + id + "]") + ")", 5)))
                .map(found -> found.filter(t -> key.group(2).equals(t.bot().accountUserId())));
    }

    Vertx vertx() {
        return vertx;
    }

    String nodeId() {
        return nodeId;
    }

    Ingest ingest() {
        return ingest;
    }

    TokenQuotas quotas() {
        return quotas;
    }

    OutboxStore outbox() {
        return outbox;
    }

    WebChatStore history() {
        return history;
    }

    ReplyHub hub() {
        return hub;
    }

    Metrics metrics() {
        return metrics;
    }

    private static Buffer resource(String name) {
        try (InputStream in = WebChat.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("the web chat widget (" + name + ") is missing from the jar");
            }
            return Buffer.buffer(in.readAllBytes());
        } catch (IOException e) {
            throw new IllegalStateException("the web chat widget (" + name + ") cannot be read", e);
        }
    }
}
