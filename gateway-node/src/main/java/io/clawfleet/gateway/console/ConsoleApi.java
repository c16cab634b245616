package io.clawfleet.gateway.console;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.AuthFailures;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.http.AuditApi;
import io.clawfleet.gateway.http.ClusterApi;
import io.clawfleet.gateway.http.DeadLettersApi;
import io.clawfleet.gateway.http.TasksApi;
import io.clawfleet.gateway.operator.OperatorAuth;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.DeadLetterStore;
import io.clawfleet.shared.store.FleetStatsStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * The operator console (issue 17): a small single-page app at {@code /console} and the API it reads under
 * {@code /console/api/*} (docs/OPERATIONS.md#the-operator-console).
 * <p>
 * One sign-in, two views. The operator's key sees the fleet (members, partitions with owner, epoch and lag), every
 * tenant with its usage against its limits (suspend, resume), and each tenant's bots, chats, dead letters, tasks,
 * sandbox runs and audit trail, but not the content of chats (transcripts, a dead letter's text, a tool's arguments)
 * unless {@code console.operatorContent} allows it. A tenant key with the {@code admin} scope for all the tenant's
 * bots sees that tenant only, content included. Every answer that carries content is audited in the tenant's trail
 * ({@code content_viewed}) before it is sent, and so is every change made here: the tenant sees who read and changed
 * what.
 * <p>
 * Live updates come over one server-sent event stream per console ({@code GET /console/api/events}): the cluster view
 * (operator) and the summary of the tenant in view, sent when they change. They are read at most once per
 * {@code console.liveMs} per gateway however many consoles watch (a shared, short-lived cache), so a room of open
 * consoles costs the database what one does.
 */
public final class ConsoleApi {

    private static final Logger LOG = LoggerFactory.getLogger(ConsoleApi.class);
    public static final String PREFIX = "/console";
    private static final String API = PREFIX + "/api";
    /** Content served to the console: no script, style, frame or connection from anywhere else. */
    static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
    public static final String CONTENT_VIEWED = "content_viewed";
    private static final String VIEWER = "clawfleet.console.viewer";
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}");
    /** Consoles streaming from one gateway at once; one more gets 503. */
    static final int MAX_STREAMS = 200;
    private static final long HEARTBEAT_MS = 15_000;
    private static final int PAGE = 100;
    /** "Not found" answers name no id: another tenant's ids are not echoed back, even those the caller sent. */
    private static final String NO_TENANT = "no such tenant";
    private static final String NO_BOT = "no such bot in this tenant";

    /** Who signed in: the operator, or a tenant's admin key (its id and name for the audit trail, the key to re-check). */
    record Viewer(boolean operator, String tenantId, String tenantName, String keyId, String keyName, String key) {

        boolean sees(String tenant) {
            return operator || tenantId.equals(tenant);
        }

        String actor() {
            return operator ? "operator" : keyName;
        }
    }

    private final Vertx vertx;
    private final String nodeId;
    private final ClawfleetConfig.Console config;
    private final OperatorAuth operator;
    private final ApiKeyAuth keys;
    private final AuthFailures failures;
    private final ClusterApi cluster;
    private final FleetStatsStore fleet;
    private final ConsoleStore store;
    private final TenantStore tenants;
    private final BotStore bots;
    private final DeadLetterStore deadLetters;
    private final DeadLettersApi deadLettersApi;
    private final TaskStore tasks;
    private final AuditStore audit;
    private final Consumer<String> tenantChanged;
    private final Map<String, Buffer> files;
    private final Map<String, Cached> live = new ConcurrentHashMap<>();
    private final AtomicInteger streams = new AtomicInteger();

    private record Cached(long at, Future<String> value) {
    }

    public ConsoleApi(Vertx vertx, String nodeId, ClawfleetConfig.Console config, OperatorAuth operator, ApiKeyAuth keys,
                      AuthFailures failures, ClusterApi cluster, FleetStatsStore fleet, ConsoleStore store, TenantStore tenants,
                      BotStore bots, DeadLetterStore deadLetters, DeadLettersApi deadLettersApi, TaskStore tasks,
                      AuditStore audit, Consumer<String> tenantChanged) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.config = Objects.requireNonNull(config);
        this.operator = Objects.requireNonNull(operator);
        this.keys = Objects.requireNonNull(keys);
        this.failures = failures;
        this.cluster = Objects.requireNonNull(cluster);
        this.fleet = Objects.requireNonNull(fleet);
        this.store = Objects.requireNonNull(store);
        this.tenants = Objects.requireNonNull(tenants);
        this.bots = Objects.requireNonNull(bots);
        this.deadLetters = Objects.requireNonNull(deadLetters);
        this.deadLettersApi = Objects.requireNonNull(deadLettersApi);
        this.tasks = Objects.requireNonNull(tasks);
        this.audit = Objects.requireNonNull(audit);
        this.tenantChanged = Objects.requireNonNull(tenantChanged);
        this.files = Map.of("index.html", resource("console/index.html"), "console.js", resource("console/console.js"),
                "console.css", resource("console/console.css"));
    }

    /** The console's routes; {@code open} refuses requests while the node stops. */
    public void register(Router router, Handler<RoutingContext> open) {
        router.get(PREFIX).handler(ctx -> file(ctx, "index.html", "text/html; charset=utf-8"));
        router.get(PREFIX + "/").handler(ctx -> file(ctx, "index.html", "text/html; charset=utf-8"));
        router.get(PREFIX + "/console.js").handler(ctx -> file(ctx, "console.js", "text/javascript; charset=utf-8"));
        router.get(PREFIX + "/console.css").handler(ctx -> file(ctx, "console.css", "text/css; charset=utf-8"));
        router.route(API + "/*").handler(open).handler(this::authenticate);
        router.get(API + "/session").handler(this::session);
        router.get(API + "/events").handler(this::events);
        router.get(API + "/cluster").handler(this::operatorOnly).handler(this::cluster);
        router.get(API + "/tenants").handler(this::operatorOnly).handler(this::tenants);
        router.post(API + "/tenants/:tenant/suspend").handler(this::operatorOnly).handler(ctx -> setStatus(ctx, "suspended"));
        router.post(API + "/tenants/:tenant/resume").handler(this::operatorOnly).handler(ctx -> setStatus(ctx, "active"));
        router.get(API + "/tenants/:tenant/bots").handler(ctx -> inTenant(ctx, this::bots));
        router.get(API + "/tenants/:tenant/audit").handler(ctx -> inTenant(ctx, this::audit));
        String bot = API + "/tenants/:tenant/bots/:bot";
        router.get(bot + "/chats").handler(ctx -> inBot(ctx, this::chats));
        router.get(bot + "/chats/:channel/:chatKey").handler(ctx -> inBot(ctx, this::transcript));
        router.get(bot + "/dead-letters").handler(ctx -> inBot(ctx, this::deadLetters));
        router.post(bot + "/dead-letters/:id/replay").handler(ctx -> inBot(ctx, this::replay));
        router.delete(bot + "/dead-letters/:id").handler(ctx -> inBot(ctx, this::discard));
        router.get(bot + "/tasks").handler(ctx -> inBot(ctx, this::tasks));
        router.get(bot + "/tasks/:id/runs").handler(ctx -> inBot(ctx, this::runs));
        router.get(bot + "/sandbox-runs").handler(ctx -> inBot(ctx, this::sandboxRuns));
    }

    private void file(RoutingContext ctx, String name, String type) {
        securityHeaders(ctx.response()).putHeader(HttpHeaders.CONTENT_TYPE, type)
                // The page is small and changes with the gateway's version: always the one this gateway serves.
                .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache").end(files.get(name));
    }

    static HttpServerResponse securityHeaders(HttpServerResponse response) {
        return response.putHeader("content-security-policy", CSP)
                .putHeader("x-content-type-options", "nosniff")
                .putHeader("x-frame-options", "DENY")
                .putHeader("referrer-policy", "no-referrer")
                .putHeader("cross-origin-opener-policy", "same-origin")
                .putHeader("cross-origin-resource-policy", "same-origin")
                .putHeader("permissions-policy", "camera=(), microphone=(), geolocation=()");
    }

    // --- who is asking

    /** The operator's key, or a tenant key with the admin scope for every bot of its tenant; anything else is 401/403. */
    private void authenticate(RoutingContext ctx) {
        securityHeaders(ctx.response()).putHeader(HttpHeaders.CACHE_CONTROL, "no-store");
        String header = ctx.request().getHeader("authorization");
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.length() <= 7) {
            refused(ctx);
            ctx.fail(ApiException.unauthorized("sign in with the operator key or a tenant admin key "
                    + "(header 'Authorization: Bearer <key>')"));
            return;
        }
        String key = header.substring(7).strip();
        if (operator.matches(key)) {
            ctx.put(VIEWER, new Viewer(true, null, null, null, "operator", key));
            ctx.next();
            return;
        }
        viewer(key).onComplete(result -> {
            if (result.failed()) {
                if (result.cause() instanceof ApiException refusal && refusal.status() == 401) {
                    refused(ctx);
                }
                ctx.fail(result.cause() instanceof ApiException ? result.cause()
                        : ApiException.unavailable("cannot check the key right now", result.cause(), 1));
            } else {
                ctx.put(VIEWER, result.result());
                ctx.next();
            }
        });
    }

    /** The tenant viewer of a key that is not the operator's; fails with the reason it may not use the console. */
    private Future<Viewer> viewer(String key) {
        return keys.resolveOwner(key).map(found -> {
            if (found.isEmpty()) {
                throw ApiException.unauthorized("invalid key: use the operator key or a tenant admin key");
            }
            TenantStore.KeyOwner owner = found.get();
            if (owner.expired(Instant.now())) {
                throw ApiException.unauthorized("this key expired at " + owner.expiresAt());
            }
            if (owner.deleting()) {
                throw new ApiException(403, "tenant_deleted", "tenant deleted: its keys no longer work");
            }
            if (owner.suspended()) {
                throw new ApiException(403, "tenant_suspended", "tenant suspended: its keys are refused until the operator "
                        + "resumes it");
            }
            if (!owner.scopes().contains("admin") || owner.botIds() != null) {
                throw new ApiException(403, "forbidden", "the console needs the operator key or a tenant key with the admin "
                        + "scope for all the tenant's bots; this key has " + new java.util.TreeSet<>(owner.scopes())
                        + (owner.botIds() == null ? "" : " for bots " + new java.util.TreeSet<>(owner.botIds())));
            }
            return new Viewer(false, owner.tenant().id(), owner.tenant().name(), owner.keyId(), owner.keyName(), key);
        });
    }

    private void refused(RoutingContext ctx) {
        if (failures != null) {
            var remote = ctx.request().remoteAddress();
            failures.failed(remote == null ? "unknown" : remote.hostAddress());
        }
    }

    static Viewer viewer(RoutingContext ctx) {
        return ctx.get(VIEWER);
    }

    private void operatorOnly(RoutingContext ctx) {
        if (!viewer(ctx).operator()) {
            ctx.fail(new ApiException(403, "forbidden", "this part of the console is the operator's"));
            return;
        }
        ctx.next();
    }

    /** Runs {@code then} when the viewer may see the tenant of the path; another tenant is "not found" to a tenant key. */
    private void inTenant(RoutingContext ctx, BiConsumer<RoutingContext, String> then) {
        String tenant = ctx.pathParam("tenant");
        if (!ID.matcher(tenant).matches() || !viewer(ctx).sees(tenant)) {
            ctx.fail(ApiException.notFound(NO_TENANT));
            return;
        }
        then.accept(ctx, tenant);
    }

    /** Runs {@code then} with the bot of the path once it is known to exist in a tenant the viewer may see. */
    private void inBot(RoutingContext ctx, BiConsumer<RoutingContext, BotRef> then) {
        inTenant(ctx, (c, tenant) -> {
            String botId = c.pathParam("bot");
            if (!ID.matcher(botId).matches()) {
                c.fail(ApiException.notFound(NO_BOT));
                return;
            }
            BotRef bot = new BotRef(tenant, botId);
            bots.find(bot).onComplete(found -> {
                if (found.failed()) {
                    c.fail(ApiException.unavailable("the bot cannot be read right now", found.cause(), 1));
                } else if (found.result().isEmpty()) {
                    c.fail(ApiException.notFound(NO_BOT));
                } else {
                    c.put(BotScope.BOT, bot);
                    try {
                        then.accept(c, bot);
                    } catch (RuntimeException e) {
                        // a handler's refusal (a bad parameter, content not shown) thrown after the lookup
                        c.fail(e);
                    }
                }
            });
        });
    }

    /** Whether the viewer may read chat content: a tenant admin always, the operator when the config allows. */
    private boolean seesContent(Viewer viewer) {
        return !viewer.operator() || config.operatorContent();
    }

    // --- pages

    private void session(RoutingContext ctx) {
        Viewer viewer = viewer(ctx);
        ctx.json(new JsonObject().put("role", viewer.operator() ? "operator" : "tenant")
                .put("tenant", viewer.operator() ? null : new JsonObject().put("id", viewer.tenantId()).put("name", viewer.tenantName()))
                .put("contentVisible", seesContent(viewer)).put("traceUrl", config.traceUrl()).put("node", nodeId));
    }

    private void cluster(RoutingContext ctx) {
        clusterView().onComplete(result -> answer(ctx, result.map(JsonObject::new), "the cluster"));
    }

    /** The cluster view with each partition's lag, the oldest undelivered reply and the partitions without owner. */
    private Future<String> clusterView() {
        return cached("cluster", () -> Future.all(cluster.snapshot(), fleet.read()).map(both -> {
            JsonObject view = both.resultAt(0);
            FleetStatsStore.FleetStats stats = both.resultAt(1);
            double max = 0;
            for (Object each : view.getJsonArray("partitions")) {
                JsonObject partition = (JsonObject) each;
                double lag = stats.partitionLagSeconds().getOrDefault(partition.getInteger("partition"), 0.0);
                partition.put("lagSeconds", Math.round(lag * 10) / 10.0);
                max = Math.max(max, lag);
            }
            return view.put("unowned", stats.partitionsUnowned()).put("maxLagSeconds", Math.round(max * 10) / 10.0)
                    .put("outboxOldestSeconds", Math.round(stats.outboxOldestSeconds() * 10) / 10.0).encode();
        }));
    }

    private void tenants(RoutingContext ctx) {
        String after = ctx.request().getParam("after");
        if (after != null && !ID.matcher(after).matches()) {
            throw ApiException.badRequest("parameter 'after' must be a tenant id");
        }
        store.tenants(after, PAGE, Instant.now()).onComplete(result -> answer(ctx,
                result.map(list -> new JsonObject().put("tenants", new JsonArray(list))
                        .put("nextCursor", list.size() == PAGE ? list.getLast().getString("id") : null)), "the tenants"));
    }

    private void setStatus(RoutingContext ctx, String status) {
        String tenant = ctx.pathParam("tenant");
        tenants.update(tenant, null, status).compose(found -> {
            if (found.isEmpty()) {
                return Future.failedFuture(ApiException.notFound(NO_TENANT));
            }
            if ("deleting".equals(found.get().status())) {
                return Future.failedFuture(new ApiException(409, "tenant_deleting", "tenant '" + tenant
                        + "' is being deleted; it cannot be changed"));
            }
            LOG.info("audit: tenant changed [tenant: {}, status: {}, by: operator, from: console]", tenant, status);
            tenantChanged.accept(tenant);
            live.remove("tenant:" + tenant);
            return changed(ctx, tenant, null, 200, "tenant " + status)
                    .map(v -> new JsonObject().put("tenant", found.get().toJson()));
        }).onComplete(result -> answer(ctx, result, "the tenant"));
    }

    private void bots(RoutingContext ctx, String tenant) {
        String after = ctx.request().getParam("after");
        if (after != null && !ID.matcher(after).matches()) {
            throw ApiException.badRequest("parameter 'after' must be a bot id");
        }
        bots.list(tenant, after, PAGE, null).onComplete(result -> answer(ctx, result.map(list -> {
            JsonArray out = new JsonArray();
            list.forEach(bot -> out.add(bot.toJson()));
            return new JsonObject().put("bots", out)
                    .put("nextCursor", list.size() == PAGE ? list.getLast().id() : null);
        }), "the bots"));
    }

    private void chats(RoutingContext ctx, BotRef bot) {
        String query = ctx.request().getParam("q");
        if (query != null && query.length() > 200) {
            throw ApiException.badRequest("parameter 'q' must be at most 200 characters");
        }
        store.chats(bot, query, limit(ctx)).onComplete(result ->
                answer(ctx, result.map(list -> new JsonObject().put("chats", new JsonArray(list))), "the chats"));
    }

    private void transcript(RoutingContext ctx, BotRef bot) {
        Viewer viewer = viewer(ctx);
        String channel = ctx.pathParam("channel");
        String chatKey = ctx.pathParam("chatKey");
        if (!seesContent(viewer)) {
            throw new ApiException(403, "content_hidden", "chat content is not shown to the operator on this cluster "
                    + "(console.operatorContent is off); the tenant's admins can read it");
        }
        store.transcript(bot, channel, chatKey).compose(found -> {
            if (found.isEmpty()) {
                return Future.failedFuture(ApiException.notFound("no such chat of this bot"));
            }
            return viewed(ctx, bot, channel, chatKey, "transcript").map(found.get());
        }).onComplete(result -> answer(ctx, result, "the transcript"));
    }

    private void deadLetters(RoutingContext ctx, BotRef bot) {
        Viewer viewer = viewer(ctx);
        boolean content = seesContent(viewer);
        deadLetters.newest(bot, 500).compose(list -> {
            JsonArray out = new JsonArray();
            for (var letter : list) {
                JsonObject json = DeadLettersApi.json(letter);
                boolean hasText = json.getValue("text") != null;
                if (!content) {
                    json.putNull("text");
                }
                out.add(json.put("textHidden", hasText && !content));
            }
            boolean shown = content && out.stream().anyMatch(each -> ((JsonObject) each).getValue("text") != null);
            JsonObject body = new JsonObject().put("deadLetters", out);
            return withContent(ctx, bot, shown, "dead letters", body);
        }).onComplete(result -> answer(ctx, result, "the dead letters"));
    }

    /** The API's own replay ({@link DeadLettersApi#replay}), then an entry in the tenant's trail. */
    private void replay(RoutingContext ctx, BotRef bot) {
        ctx.addBodyEndHandler(v -> {
            if (ctx.response().getStatusCode() == 202) {
                changed(ctx, bot.tenantId(), bot.botId(), 202, "dead letter " + ctx.pathParam("id") + " replayed")
                        .onFailure(e -> LOG.error("audit row of a console replay not written [tenant: {}]: {}",
                                bot.tenantId(), e.getMessage()));
                live.remove("tenant:" + bot.tenantId());
            }
        });
        deadLettersApi.replay(ctx);
    }

    private void discard(RoutingContext ctx, BotRef bot) {
        long id = number(ctx.pathParam("id"), "dead letter id");
        deadLetters.discard(bot, id).compose(found -> {
            if (!found) {
                return Future.failedFuture(ApiException.notFound("no dead letter " + id + " for this bot"));
            }
            live.remove("tenant:" + bot.tenantId());
            return changed(ctx, bot.tenantId(), bot.botId(), 204, "dead letter " + id + " discarded");
        }).onComplete(result -> {
            if (result.failed()) {
                fail(ctx, result.cause(), "the dead letter");
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private void tasks(RoutingContext ctx, BotRef bot) {
        boolean content = seesContent(viewer(ctx));
        tasks.list(bot, null, null, 500).compose(list -> {
            JsonArray out = new JsonArray();
            list.forEach(task -> {
                JsonObject json = TasksApi.json(task);
                if (!content) {
                    json.putNull("prompt");
                }
                out.add(json);
            });
            return withContent(ctx, bot, content && !list.isEmpty(), "task prompts", new JsonObject().put("tasks", out));
        }).onComplete(result -> answer(ctx, result, "the tasks"));
    }

    /** {@code body}, once its view is in the tenant's trail when it carries content. */
    private Future<JsonObject> withContent(RoutingContext ctx, BotRef bot, boolean carries, String what, JsonObject body) {
        return carries ? viewed(ctx, bot, null, null, what).map(body) : Future.succeededFuture(body);
    }

    private void runs(RoutingContext ctx, BotRef bot) {
        String taskId = ctx.pathParam("id");
        boolean content = seesContent(viewer(ctx));
        tasks.runs(bot, taskId, 200).compose(list -> {
            JsonArray out = new JsonArray();
            list.forEach(run -> {
                JsonObject json = TasksApi.json(run);
                if (!content) {
                    json.putNull("resultPreview");
                }
                out.add(json);
            });
            return withContent(ctx, bot, content && list.stream().anyMatch(run -> run.resultPreview() != null),
                    "task " + taskId + "'s results", new JsonObject().put("runs", out));
        }).onComplete(result -> answer(ctx, result, "the task's runs"));
    }

    /** Tool calls that ran on sandbox nodes, newest first, from the tenant's audit trail (the worker writes one a call). */
    private void sandboxRuns(RoutingContext ctx, BotRef bot) {
        boolean content = seesContent(viewer(ctx));
        audit.listBefore(bot.tenantId(), Long.MAX_VALUE, limit(ctx), AuditStore.TOOL_CALL, bot.botId(), true)
                .compose(list -> {
                    JsonArray out = new JsonArray();
                    for (AuditStore.Event event : list) {
                        JsonObject metadata = event.metadata() == null ? new JsonObject() : event.metadata();
                        out.add(new JsonObject().put("id", event.id()).put("at", event.at().toString())
                                .put("tool", event.toolName())
                                .put("chat", new JsonObject().put("channel", event.channel()).put("chatId", event.chatKey()))
                                .put("outcome", event.outcome()).put("durationMs", metadata.getValue("durationMs"))
                                .put("args", content ? event.args() : null).put("reason", content ? event.reason() : null));
                    }
                    return withContent(ctx, bot, content && !list.isEmpty(), "sandbox runs' arguments",
                            new JsonObject().put("runs", out));
                }).onComplete(result -> answer(ctx, result, "the sandbox runs"));
    }

    private void audit(RoutingContext ctx, String tenant) {
        long before = ctx.request().getParam("before") == null ? Long.MAX_VALUE
                : number(ctx.request().getParam("before"), "parameter 'before'");
        boolean content = seesContent(viewer(ctx));
        audit.listBefore(tenant, before, limit(ctx), null, null, false).onComplete(result -> answer(ctx, result.map(list -> {
            JsonArray out = new JsonArray();
            for (AuditStore.Event event : list) {
                JsonObject json = AuditApi.json(event);
                JsonObject actor = json.getJsonObject("actor", new JsonObject());
                actor.put("operator", "operator".equals(event.keyName()) && event.keyId() == null);
                json.put("actor", actor);
                if (!content) {
                    json.remove("args");
                    json.remove("reason");
                }
                out.add(json);
            }
            return new JsonObject().put("events", out);
        }), "the audit trail"));
    }

    // --- live updates

    /**
     * Server-sent events: {@code cluster} (operator) and {@code tenant} (the tenant in view: the viewer's own, or the
     * operator's {@code ?tenant=}), each when it changed, looked at every {@code console.liveMs}; a comment every
     * 15 s keeps proxies from closing the stream, and re-checks the key: a key revoked or a tenant suspended ends it.
     */
    private void events(RoutingContext ctx) {
        Viewer viewer = viewer(ctx);
        String tenant = viewer.operator() ? ctx.request().getParam("tenant") : viewer.tenantId();
        if (tenant != null && (!ID.matcher(tenant).matches() || !viewer.sees(tenant))) {
            throw ApiException.notFound(NO_TENANT);
        }
        if (streams.incrementAndGet() > MAX_STREAMS) {
            streams.decrementAndGet();
            throw ApiException.unavailable("too many consoles are streaming from this gateway; try another", 5);
        }
        HttpServerResponse response = ctx.response().setChunked(true)
                .putHeader(HttpHeaders.CONTENT_TYPE, "text/event-stream; charset=utf-8")
                .putHeader("x-accel-buffering", "no");
        response.write(": clawfleet console " + nodeId + "\nretry: 2000\n\n");
        Map<String, String> sent = new ConcurrentHashMap<>();
        long[] lastBeat = {System.nanoTime()};
        boolean[] busy = {false};
        long timer = vertx.setPeriodic(config.liveMs(), id -> {
            if (busy[0] || response.closed()) {
                return;
            }
            busy[0] = true;
            List<Future<?>> steps = new java.util.ArrayList<>();
            if (viewer.operator()) {
                steps.add(clusterView().onSuccess(view -> send(response, sent, "cluster", view)));
            }
            if (tenant != null) {
                steps.add(cached("tenant:" + tenant, () -> store.summary(tenant).map(found -> found.map(JsonObject::encode)
                        .orElse("{\"tenant\":\"" + tenant + "\",\"gone\":true}")))
                        .onSuccess(summary -> send(response, sent, "tenant", summary)));
            }
            boolean beat = System.nanoTime() - lastBeat[0] > TimeUnit.MILLISECONDS.toNanos(HEARTBEAT_MS);
            if (beat) {
                lastBeat[0] = System.nanoTime();
                steps.add((viewer.operator() ? Future.succeededFuture(viewer) : viewer(viewer.key())).onComplete(checked -> {
                    if (checked.failed() && !response.closed()) {
                        String reason = checked.cause().getMessage();
                        response.end("event: signed-out\ndata: " + new JsonObject().put("reason", reason).encode() + "\n\n");
                    } else if (!response.closed()) {
                        response.write(": ping\n\n");
                    }
                }));
            }
            Future.join(steps).onComplete(done -> {
                busy[0] = false;
                if (done.failed()) {
                    LOG.debug("console stream not updated [node: {}]: {}", nodeId, done.cause().getMessage());
                }
            });
        });
        Handler<Void> closed = v -> {
            if (vertx.cancelTimer(timer)) {
                streams.decrementAndGet();
            }
        };
        response.closeHandler(closed);
        response.endHandler(closed);
    }

    private static void send(HttpServerResponse response, Map<String, String> sent, String event, String data) {
        if (!response.closed() && !data.equals(sent.put(event, data))) {
            response.write("event: " + event + "\ndata: " + data + "\n\n");
        }
    }

    /** A value shared by every console of this gateway for {@code console.liveMs}. */
    private Future<String> cached(String key, Supplier<Future<String>> read) {
        long now = System.nanoTime();
        Cached hit = live.get(key);
        if (hit != null && now - hit.at() < TimeUnit.MILLISECONDS.toNanos(config.liveMs())) {
            return hit.value();
        }
        if (live.size() > 10_000) {
            live.clear();
        }
        Future<String> value = read.get();
        live.put(key, new Cached(now, value));
        return value;
    }

    // --- audit and answers

    /** An entry {@code content_viewed} in the tenant's trail; the content is sent only once it is written. */
    private Future<Void> viewed(RoutingContext ctx, BotRef bot, String channel, String chatKey, String what) {
        Viewer viewer = viewer(ctx);
        return audit.append(new AuditStore.NewEvent(bot.tenantId(), CONTENT_VIEWED, "success", viewer.keyId(),
                viewer.actor(), "GET", ctx.currentRoute().getPath(), 200, null, channel, chatKey, what + " read in the console",
                new JsonObject().put("viewer", viewer.operator() ? "operator" : "tenant").put("node", nodeId),
                bot.botId())).mapEmpty();
    }

    /** An entry {@code http_write} in the tenant's trail for a change made in the console. */
    private Future<Void> changed(RoutingContext ctx, String tenant, String botId, int status, String what) {
        Viewer viewer = viewer(ctx);
        return audit.append(new AuditStore.NewEvent(tenant, AuditStore.HTTP_WRITE, "success", viewer.keyId(), viewer.actor(),
                ctx.request().method().name(), ctx.currentRoute().getPath(), status, null, null, null, what + " in the console",
                new JsonObject().put("viewer", viewer.operator() ? "operator" : "tenant").put("node", nodeId), botId))
                .mapEmpty();
    }

    private static void answer(RoutingContext ctx, io.vertx.core.AsyncResult<JsonObject> result, String what) {
        if (result.failed()) {
            fail(ctx, result.cause(), what);
        } else {
            ctx.json(result.result());
        }
    }

    private static void fail(RoutingContext ctx, Throwable cause, String what) {
        ctx.fail(cause instanceof ApiException ? cause : ApiException.unavailable(what + " cannot be read or changed right now",
                cause, 1));
    }

    private static int limit(RoutingContext ctx) {
        String given = ctx.request().getParam("limit");
        if (given == null) {
            return PAGE;
        }
        long limit = number(given, "parameter 'limit'");
        if (limit < 1 || limit > 500) {
            throw ApiException.badRequest("parameter 'limit' must be from 1 to 500, got " + given);
        }
        return (int) limit;
    }

    private static long number(String given, String what) {
        try {
            return Long.parseLong(given);
        } catch (NumberFormatException e) {
            throw ApiException.badRequest(what + " must be a number, got '" + given + "'");
        }
    }

    private static Buffer resource(String name) {
        try (InputStream in = ConsoleApi.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("the console (" + name + ") is missing from the jar");
            }
            return Buffer.buffer(in.readAllBytes());
        } catch (IOException e) {
            throw new IllegalStateException("the console (" + name + ") cannot be read", e);
        }
    }
}
