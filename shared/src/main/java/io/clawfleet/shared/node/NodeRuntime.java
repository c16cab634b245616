package io.clawfleet.shared.node;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.cluster.ClusterBootstrap;
import io.clawfleet.shared.cluster.MemberLostException;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.Migrations;
import io.clawfleet.shared.http.HttpErrors;
import io.clawfleet.shared.metrics.MetricLabels;
import io.clawfleet.shared.tracing.Tracing;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The composition root of a node: applies migrations, starts Vert.x (clustered or not), the
 * database pool, the HTTP server with {@code /livez}, {@code /readyz} and {@code /metrics}, and
 * each role on a context of its own. Stops in reverse: intake first, storage last.
 */
public final class NodeRuntime {

    private static final Logger LOG = LoggerFactory.getLogger(NodeRuntime.class);
    private static final Set<Role> DATABASE_ROLES = Set.of(Role.GATEWAY, Role.WORKER, Role.SCHEDULER);
    /** Roles that send or check signed bus messages (calls, results, stream chunks). */
    private static final Set<Role> SIGNING_ROLES = Set.of(Role.GATEWAY, Role.WORKER, Role.SANDBOX);
    private static final long HEALTH_INTERVAL_MS = 1_000;
    private static final long STEP_MS = 3_000;
    private static final long LEAVE_MS = 8_000;

    private final Vertx vertx;
    private final String nodeId;
    private final Database database;
    private final HttpServer server;
    /** The management listener ({@code http.management.port}), or null. */
    private final HttpServer management;
    private final List<String> deployments;
    private final Readiness readiness;
    private final Membership membership;
    private final long healthTimer;
    /** Longest a role may take to stop: the handoff timeout plus margin. */
    private final long roleStopMs;
    private final Router router;
    private final Tracing tracing;
    private volatile boolean stopping;

    private NodeRuntime(Vertx vertx, String nodeId, Database database, HttpServer server, HttpServer management,
                        List<String> deployments, Readiness readiness, Membership membership, long healthTimer,
                        long roleStopMs, Router router, Tracing tracing) {
        this.router = router;
        this.tracing = tracing;
        this.management = management;
        this.vertx = vertx;
        this.nodeId = nodeId;
        this.database = database;
        this.server = server;
        this.deployments = deployments;
        this.readiness = readiness;
        this.membership = membership;
        this.healthTimer = healthTimer;
        this.roleStopMs = roleStopMs;
    }

    /**
     * Starts a node.
     *
     * @param dbUrl     database of the cluster; may be null only when no role needs one
     * @param clustered join the Hazelcast cluster, or run alone (all-in-one)
     * @param roles     in start order; they stop in reverse order
     */
    public static Future<NodeRuntime> start(ClawfleetConfig config, DbUrl dbUrl, boolean clustered,
                                            List<Supplier<NodeRole>> roles) {
        return start(config, dbUrl, clustered, roles, null);
    }

    /**
     * As {@link #start(ClawfleetConfig, DbUrl, boolean, List)}, tracing through {@code tracing} (tests); null means as the
     * OTEL_* variables say ({@link Tracing#fromEnvironment}).
     */
    public static Future<NodeRuntime> start(ClawfleetConfig config, DbUrl dbUrl, boolean clustered,
                                            List<Supplier<NodeRole>> roles, Tracing tracing) {
        return start(config, dbUrl, CompletableFuture.completedFuture(null), clustered, roles, tracing);
    }

    /**
     * As {@link #start(ClawfleetConfig, DbUrl, boolean, List)}, for a database that is still starting ({@code up}'s
     * embedded server): the node makes its roles and Vert.x meanwhile, and connects and migrates once
     * {@code databaseReady} completes. If it fails, the node fails to start.
     */
    public static Future<NodeRuntime> start(ClawfleetConfig config, DbUrl dbUrl, CompletionStage<?> databaseReady,
                                            boolean clustered, List<Supplier<NodeRole>> roles) {
        return start(config, dbUrl, databaseReady, clustered, roles, null);
    }

    private static Future<NodeRuntime> start(ClawfleetConfig config, DbUrl dbUrl, CompletionStage<?> databaseReady,
                                             boolean clustered, List<Supplier<NodeRole>> roles, Tracing tracing) {
        int httpPort = config.http().port() == 0 ? FreePorts.take() : config.http().port();
        String nodeId = config.nodeId() != null ? config.nodeId() : defaultNodeId(httpPort);
        io.clawfleet.shared.logging.LogEncoder.use(config.observability().logFormat());
        List<String> roleIds = config.roles().stream().map(ClawfleetConfig.Role::id).sorted().toList();
        io.clawfleet.shared.logging.LogEncoder.node(nodeId, roleIds);
        Tracing traces;
        try {
            traces = tracing != null ? tracing : Tracing.fromEnvironment(System.getenv(), nodeId, roleIds);
        } catch (RuntimeException e) {
            LOG.error("node failed to start [node: {}]: the OTEL_* variables do not make a tracer: {}", nodeId, e.getMessage());
            return Future.failedFuture(e);
        }
        if (traces.on()) {
            LOG.info("tracing on [node: {}]", nodeId);
        }
        boolean needsDb = config.roles().stream().anyMatch(DATABASE_ROLES::contains);
        if (needsDb && dbUrl == null) {
            return Future.failedFuture(new IllegalStateException(
                    "roles " + config.roles() + " need a database: set CLAWFLEET_DB_URL (postgresql://user:pass@host:port/db)"));
        }
        BusSigner secretSigner;
        try {
            secretSigner = signer(config, clustered);
        } catch (IllegalStateException e) {
            LOG.error("node failed to start [node: {}]: {}", nodeId, e.getMessage());
            return Future.failedFuture(e);
        }
        io.clawfleet.shared.cluster.ClusterTls tls;
        try {
            tls = clusterTls(config, clustered, java.time.Clock.systemUTC());
        } catch (IllegalStateException e) {
            LOG.error("node failed to start [node: {}]: {}", nodeId, e.getMessage());
            return Future.failedFuture(e);
        }
        // With a bus certificate, the notices only one role may send are also signed with the node's own key.
        // And per-message traffic that only workers send to gateways carries a tag made with a key each pair of nodes
        // shares (their certificates' keys, published as a member attribute).
        BusSigner signer = tls == null ? secretSigner : secretSigner.withRoles(
                io.clawfleet.shared.bus.RoleSignatures.of(tls, System::currentTimeMillis, BusSigner.DEFAULT_WINDOW_MS))
                .withPeers(io.clawfleet.shared.bus.PeerTags.of(tls, System::currentTimeMillis));
        // Roles are made before the join: the facts they publish travel with the membership.
        List<NodeRole> instances = roles.stream().map(Supplier::get).toList();
        java.util.Map<String, String> attributes = new java.util.TreeMap<>();
        attributes.put(BUS_TRANSPORT, !clustered ? "local" : tls != null ? "mtls" : "insecure");
        attributes.putAll(signer.peers().memberAttributes());
        try {
            instances.forEach(role -> attributes.putAll(role.memberAttributes(config)));
        } catch (RuntimeException e) {
            LOG.error("node failed to start [node: {}]: {}", nodeId, e.getMessage());
            return Future.failedFuture(e);
        }
        // Migrations are blocking JDBC work; run them while Hazelcast joins (and Vert.x starts).
        CompletableFuture<Integer> migrated = needsDb
                ? databaseReady.toCompletableFuture().thenApplyAsync(ready -> Migrations.apply(dbUrl, config.partitions()))
                : CompletableFuture.completedFuture(0);

        MicrometerMetrics metrics = new MicrometerMetrics(nodeId,
                new MetricLabels(config.observability().maxTenants(), config.observability().maxBots()));
        String host = "0.0.0.0".equals(config.http().host()) ? config.cluster().host() : config.http().host();
        Member self = new Member(nodeId,
                config.roles().stream().map(Role::id).collect(Collectors.toSet()),
                (config.http().tls() ? "https://" : "http://") + host + ":" + httpPort, attributes);
        LOG.info("node starting [node: {}, roles: {}, clustered: {}]", nodeId, self.roles(), clustered);

        // Not bound to a context: on failure Vert.x is closed, and its event loops with it.
        Promise<NodeRuntime> result = Promise.promise();
        ClusterBootstrap.start(config, self, clustered, tls, metrics.vertxMetricsFactory()).onComplete(startedVertx -> {
            if (startedVertx.failed()) {
                LOG.error("node failed to start [node: {}]: cannot start Vert.x: {}", nodeId, startedVertx.cause().toString());
                result.fail(startedVertx.cause());
                return;
            }
            var started = startedVertx.result();
            Vertx vertx = started.vertx();
            // Nodes started together may first form clusters of their own; Hazelcast merges them a few seconds later
            // and terminates a member whose merge fails. If that happens before the start is over, the start fails
            // at once with a MemberLostException (not later, with whatever cluster operation it was waiting on), so
            // that `clawfleet node` exits with the status its supervisor restarts on.
            started.membership().onLost(() -> {
                if (result.tryFail(new MemberLostException(nodeId, "shut down by the cluster", null))) {
                    LOG.error("node failed to start [node: {}]: the cluster shut its member down during the start"
                            + " (a merge of clusters formed at the same time failed)", nodeId);
                    closeOnceDown(vertx, started.membership());
                }
            });
            Codecs.registerAll(vertx.eventBus());
            Future.fromCompletionStage(migrated, vertx.getOrCreateContext())
                    .compose(partitions -> {
                        Database database = needsDb
                                ? Database.connect(vertx, dbUrl, config.db().poolSize(), config.db().connectTimeoutMs())
                                : null;
                        return assemble(config, vertx, started.membership(), nodeId, httpPort, database,
                                partitions, metrics, instances, signer, traces);
                    })
                    // the member lost meanwhile: the start has failed already, and the listener above closes Vert.x
                    .onSuccess(result::tryComplete)
                    .onFailure(failure -> {
                        if (result.future().isComplete()) {
                            return; // the member was lost: reported, and Vert.x closed, by the listener above
                        }
                        if (migrated.isCompletedExceptionally()) {
                            // The database's or the migrations' own error says what to do (a data folder PostgreSQL
                            // cannot use, a schema newer than this build): one line; its trace only at debug.
                            Throwable cause = failure instanceof java.util.concurrent.CompletionException wrapped
                                    && wrapped.getCause() != null ? wrapped.getCause() : failure;
                            LOG.error("node failed to start [node: {}]: {}", nodeId, cause.getMessage());
                            LOG.debug("node failed to start [node: {}]", nodeId, cause);
                        } else {
                            LOG.error("node failed to start [node: {}]", nodeId, failure);
                        }
                        // A start that failed after a merge reset the member is mended by a restart.
                        String upset = started.upsets() == null ? null : started.upsets().first();
                        result.tryFail(upset == null ? failure : new MemberLostException(nodeId, upset, failure));
                        vertx.close();
                    });
        });
        return result.future();
    }

    /**
     * Closes Vert.x once the member Hazelcast is shutting down is down. Not from the lifecycle event itself: the thread
     * that fires it holds Hazelcast's lifecycle lock until the shutdown is over, and a Vert.x leave that still finds
     * the member running takes the cluster manager's lock and then waits for Hazelcast's, while that thread's next
     * event waits for the cluster manager's: a deadlock. A member that is down is not shut down again by the leave.
     */
    private static void closeOnceDown(Vertx vertx, Membership membership) {
        Thread.ofVirtual().name("clawfleet-close-lost-member").start(() -> {
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
            while (membership.connected() && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            vertx.close();
        });
    }

    private static Future<NodeRuntime> assemble(ClawfleetConfig config, Vertx vertx, Membership membership,
                                                String nodeId, int httpPort, Database database, int partitions,
                                                MicrometerMetrics metrics, List<NodeRole> roles, BusSigner signer,
                                                Tracing tracing) {
        Readiness readiness = new Readiness();
        Router router = Router.router(vertx);
        HttpErrors.install(router, config.http().maxBodyBytes());
        Handler<RoutingContext> live = ctx -> ctx.json(new io.vertx.core.json.JsonObject().put("status", "live"));
        Handler<RoutingContext> ready = ctx -> {
            var report = readiness.report().put("node", nodeId);
            ctx.response().setStatusCode(readiness.ready() ? 200 : 503)
                    .putHeader("content-type", "application/json").end(report.encode());
        };
        Handler<RoutingContext> scrape = ctx -> ctx.response()
                .putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")
                .end(metrics.scrape());
        router.get("/livez").handler(live);
        router.get("/readyz").handler(ready);
        // Not public: a key, or the management listener on a private interface (docs/SECURITY.md#the-edge).
        router.get("/metrics").handler(MetricsAccess.of(config)).handler(scrape);
        Router management = Router.router(vertx);
        HttpErrors.install(management, 1_024);
        management.get("/livez").handler(live);
        management.get("/readyz").handler(ready);
        management.get("/metrics").handler(scrape);

        signer.peers().watch(membership);
        long healthTimer = database == null ? -1 : watchDatabase(vertx, database, readiness, metrics);
        var started = new java.util.concurrent.atomic.AtomicBoolean(false);
        readiness.register("node", started::get);
        readiness.register("cluster", membership::connected);
        // what this node sees: fewer members than the nodes started is a split or a member not yet joined
        metrics.gauge("clawfleet.cluster.members", () -> membership.members().size());
        List<String> deployments = Collections.synchronizedList(new ArrayList<>());
        Future<Void> chain = Future.succeededFuture();
        for (NodeRole role : roles) {
            chain = chain.compose(v -> vertx.deployVerticle(new RoleVerticle(role, vx -> new NodeContext(
                            vx, config, nodeId, membership, database, partitions, metrics, router, readiness, signer,
                            tracing)))
                    .onSuccess(deployments::add)
                    .onSuccess(id -> LOG.info("role started [node: {}, role: {}]", nodeId, role.name()))
                    .mapEmpty());
        }
        HttpServerOptions options = new HttpServerOptions()
                .setHost(config.http().host())
                .setPort(httpPort)
                .setTcpNoDelay(true)
                .setCompressionSupported(false)
                .setIdleTimeout(300);
        if (config.http().tls()) {
            // HTTPS at the node itself, for set-ups without a TLS proxy in front (docs/SECURITY.md#the-edge).
            options.setSsl(true)
                    .setKeyCertOptions(new io.vertx.core.net.PemKeyCertOptions()
                            .setCertPath(config.http().tlsCert().toString()).setKeyPath(config.http().tlsKey().toString()))
                    .setEnabledSecureTransportProtocols(java.util.Set.of("TLSv1.2", "TLSv1.3"))
                    .setUseAlpn(true);
        }
        int managementPort = config.http().managementPort();
        return chain
                .compose(v -> managementPort == 0 ? Future.<HttpServer>succeededFuture(null)
                        : vertx.createHttpServer(new HttpServerOptions().setHost(config.http().managementHost())
                                .setPort(managementPort).setIdleTimeout(60)).requestHandler(management).listen()
                        .onSuccess(m -> LOG.info("management listener [node: {}, http: {}:{}, serves: /metrics /livez /readyz]",
                                nodeId, config.http().managementHost(), m.actualPort())))
                .compose(managementServer -> warmBus(vertx, membership).map(managementServer))
                .compose(managementServer -> vertx.createHttpServer(options).requestHandler(router).listen()
                        .map(server -> {
                            started.set(true);
                            LOG.info("node ready [node: {}, {}: {}:{}]", nodeId, config.http().tls() ? "https" : "http",
                                    config.http().host(), server.actualPort());
                            return new NodeRuntime(vertx, nodeId, database, server, managementServer, deployments, readiness,
                                    membership, healthTimer, config.lease().handoffTimeoutMs() + 5_000, router, tracing);
                        }));
    }

    /**
     * Opens the bus connections to the other members now rather than on the first notice ({@link BusWarmup}). A node
     * whose hello cannot register still starts: its first notices to each member are just slower.
     */
    private static Future<Void> warmBus(Vertx vertx, Membership membership) {
        if (!vertx.isClustered()) {
            return Future.succeededFuture();
        }
        return io.clawfleet.shared.bus.BusWarmup.start(vertx, membership).<Void>mapEmpty().recover(failed -> {
            LOG.warn("bus warm-up not registered, first notices to each member open their connection [node: {}]: {}",
                    membership.self().nodeId(), failed.toString());
            return Future.succeededFuture();
        });
    }

    /** Member attribute: how this node's event bus talks to the others ({@code mtls}, {@code insecure}, {@code local}). */
    public static final String BUS_TRANSPORT = "busTransport";

    /**
     * The event-bus certificate of a clustered node. Secure by default: a clustered node without one does not start
     * unless the operator said {@code --insecure-cluster} ({@code cluster.insecure}), which is logged loudly and shown
     * in {@code /api/v1/cluster}. Alone, a node has no bus to protect.
     */
    static io.clawfleet.shared.cluster.ClusterTls clusterTls(ClawfleetConfig config, boolean clustered, java.time.Clock clock) {
        ClawfleetConfig.Cluster cluster = config.cluster();
        if (!clustered) {
            return null;
        }
        if (cluster.tlsDir() != null) {
            var tls = io.clawfleet.shared.cluster.ClusterTls.load(cluster.tlsDir(), cluster.tlsTrustFile(), config.roles(), clock);
            LOG.info("event bus over mutual TLS [certificate: {}, roles: {}, expires: {}, trusted CAs: {}]",
                    tls.certificate().getSubjectX500Principal().getName(), tls.roles().stream().map(Role::id).sorted().toList(),
                    tls.certificate().getNotAfter().toInstant(), tls.trusted().size());
            return tls;
        }
        if (!cluster.insecure()) {
            throw new IllegalStateException("a clustered node needs an event-bus certificate: set CLAWFLEET_CLUSTER_TLS_DIR "
                    + "(cluster.tls.dir) to a folder with tls.crt, tls.key and ca.crt (make them with: clawfleet certs init "
                    + "--dir certs --issue " + config.roles().stream().map(Role::id).sorted().collect(Collectors.joining(","))
                    + "), or start with --insecure-cluster (CLAWFLEET_CLUSTER_INSECURE=true) to run the bus in plain TCP; "
                    + "see docs/SECURITY.md#cluster-transport");
        }
        LOG.warn("INSECURE CLUSTER: the event bus runs in plain TCP without certificates (--insecure-cluster). Anyone who "
                + "reaches the cluster ports can join, read chat content and tool calls, and receive messages meant for "
                + "this node. Use it only on a network nobody else reaches; see docs/SECURITY.md#cluster-transport");
        return null;
    }

    /**
     * The signer of the bus messages this node sends and receives. Alone, the node makes up a secret: no other
     * node needs it. Clustered, a node that sends or runs calls or streams replies must share the configured one,
     * or any process that joins the cluster could run code on sandbox nodes and speak for the bot.
     */
    static BusSigner signer(ClawfleetConfig config, boolean clustered) {
        String secret = config.cluster().secret();
        if (secret == null && clustered && config.roles().stream().anyMatch(SIGNING_ROLES::contains)) {
            throw new IllegalStateException("a clustered node with roles " + config.roles().stream().map(Role::id).sorted().toList()
                    + " needs the cluster secret: set CLAWFLEET_CLUSTER_SECRET (cluster.secret) to the same random value of at "
                    + "least " + BusSigner.MIN_SECRET_LENGTH + " characters on every node, e.g. from: openssl rand -hex 32");
        }
        if (secret == null) {
            LOG.info("bus signing with a random secret of this node alone [clustered: {}]", clustered);
        }
        return BusSigner.forNode(secret);
    }

    /** Keeps a database check in the readiness registry, refreshed by a ping every second. */
    private static long watchDatabase(Vertx vertx, Database database, Readiness readiness, MicrometerMetrics metrics) {
        var up = new java.util.concurrent.atomic.AtomicBoolean(false);
        readiness.register("database", up::get);
        metrics.gauge("clawfleet.database.up", () -> up.get() ? 1 : 0);
        Runnable ping = () -> database.ping()
                .timeout(HEALTH_INTERVAL_MS * 2, java.util.concurrent.TimeUnit.MILLISECONDS)
                .onComplete(result -> {
                    boolean now = result.succeeded();
                    if (up.getAndSet(now) != now) {
                        if (now) {
                            LOG.info("database reachable [database: {}]", database.url().redacted());
                        } else {
                            LOG.warn("database unreachable [database: {}]: {}", database.url().redacted(),
                                    result.cause().getMessage());
                        }
                    }
                });
        ping.run();
        return vertx.setPeriodic(HEALTH_INTERVAL_MS, id -> ping.run());
    }

    /**
     * The HTTP routes the node's roles registered that answer requests: each with its methods and path
     * template (handlers for every method, such as body and auth handlers, are left out). The tenant
     * isolation suite walks them, so a route added later cannot escape it.
     */
    public List<Map.Entry<String, String>> routes() {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (var route : router.getRoutes()) {
            if (route.methods() == null || route.methods().isEmpty() || route.getPath() == null) {
                continue;
            }
            route.methods().forEach(method -> out.add(Map.entry(method.name(), route.getPath())));
        }
        return out;
    }

    public String nodeId() {
        return nodeId;
    }

    public int httpPort() {
        return server.actualPort();
    }

    public Vertx vertx() {
        return vertx;
    }

    public Membership membership() {
        return membership;
    }

    public boolean ready() {
        return readiness.ready();
    }

    /** Graceful stop: roles in reverse order (each drains), then the HTTP server, the pool, the cluster. */
    public synchronized Future<Void> stop() {
        if (stopping) {
            return Future.succeededFuture();
        }
        stopping = true;
        LOG.info("node stopping [node: {}]", nodeId);
        readiness.register("shutdown", () -> false);
        if (healthTimer >= 0) {
            vertx.cancelTimer(healthTimer);
        }
        List<String> reversed = new ArrayList<>(deployments);
        Collections.reverse(reversed);
        // Every step is bounded: a node cut off from the cluster must still stop when told to.
        Future<Void> chain = Future.succeededFuture();
        for (String id : reversed) {
            chain = chain.compose(v -> bounded("role " + id, vertx.undeploy(id), roleStopMs));
        }
        Promise<Void> done = Promise.promise();
        long started = System.nanoTime();
        chain.compose(v -> bounded("http server", server.close(), STEP_MS))
                .compose(v -> management == null ? Future.succeededFuture() : bounded("management listener",
                        management.close(), STEP_MS))
                .compose(v -> database == null ? Future.succeededFuture() : bounded("database pool", database.close(), STEP_MS))
                .eventually(() -> {
                    membership.leaving();
                    return bounded("cluster leave", vertx.close(), LEAVE_MS);
                })
                .onComplete(r -> {
                    try {
                        tracing.close();
                    } catch (RuntimeException e) {
                        LOG.warn("spans not sent at stop [node: {}]: {}", nodeId, e.getMessage());
                    }
                    LOG.info("node stopped [node: {}, ms: {}]", nodeId, (System.nanoTime() - started) / 1_000_000);
                    done.complete();
                });
        return done.future();
    }

    private Future<Void> bounded(String step, Future<?> future, long timeoutMs) {
        return future.<Void>mapEmpty().timeout(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS).recover(e -> {
            LOG.warn("stop step did not finish cleanly [node: {}, step: {}]: {}", nodeId, step, e.toString());
            return Future.succeededFuture();
        });
    }

    static String defaultNodeId(int httpPort) {
        String host = System.getenv("HOSTNAME");
        if (host == null || host.isBlank()) {
            try {
                host = Files.readString(Path.of("/etc/hostname")).trim();
            } catch (IOException e) {
                try {
                    host = InetAddress.getLocalHost().getHostName();
                } catch (IOException unknown) {
                    host = "node";
                }
            }
        }
        String clean = host.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9._-]", "-");
        if (clean.length() > 48) {
            clean = clean.substring(0, 48);
        }
        return Objects.requireNonNullElse(clean.isEmpty() ? null : clean, "node") + "-" + httpPort;
    }
}
