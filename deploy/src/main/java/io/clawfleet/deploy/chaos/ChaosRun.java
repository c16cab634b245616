package io.clawfleet.deploy.chaos;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The chaos run: a cluster of separate JVMs (2 gateways, 3 workers, a sandbox, a scheduler) on a
 * PostgreSQL, hundreds of chats sending all the time, and every few seconds a fault: kill -9,
 * SIGSTOP then SIGCONT, or SIGTERM and restart, of a worker or a gateway, or a PostgreSQL restart
 * (a fast shutdown, an outage of a few seconds, a start on the same data and port, as {@code pg_ctl
 * restart -m fast} with the outage stretched). At the end everything is brought back and every accepted
 * message must have been answered exactly once, in order.
 */
public final class ChaosRun {

    private static final Logger LOG = LoggerFactory.getLogger(ChaosRun.class);

    /**
     * @param faultEveryMs  mean time between faults
     * @param minFaults     go on past {@code duration} (up to three times it) until this many faults were injected:
     *                      on a slow machine restarts take longer and fewer nodes are free to be faulted
     * @param pauseMs       each chat sends a message every this many ms
     * @param leaseTtlMs    lease TTL of the workers (a SIGSTOP lasts longer than this)
     * @param postgresOutageMs  longest PostgreSQL outage of a restart fault (each lasts between a third of it and
     *                      all of it); 0: the database is never restarted
     * @param poisonPills   messages whose turn kills its worker ({@link PoisonPills}), sent spread over the run
     * @param floods        bursts beyond what a chat may have waiting ({@link #FLOOD_CHATS} chats sending
     *                      {@link #FLOOD_MESSAGES} messages each, back to back), spread over the run
     * @param netCuts       every node on a host of its own ({@link NetLab}), and link cuts among the faults: a worker
     *                      cut off from the other nodes or from PostgreSQL, a gateway cut off from the other nodes;
     *                      where namespaces cannot be made, the run goes on on loopback without them and says so
     * @param sampleEveryMs how often {@link ResourceSampler} samples the nodes and the database (0: never)
     */
    public record Options(Duration duration, long faultEveryMs, int minFaults, int chats, long pauseMs,
                          long modelLatencyMs, long leaseTtlMs, long postgresOutageMs, int poisonPills, int floods,
                          int sideEffectChats, boolean netCuts, long sampleEveryMs, long retentionSeconds, long seed, Path jar, Path logs) {

        /** How often the scheduler prunes in a run with a retention: often enough to keep within it. */
        long retentionIntervalMs() {
            return Math.max(5_000, Math.min(60_000, retentionSeconds * 1_000 / 4));
        }
    }

    /**
     * What retention left at the end of a run that set one ({@code --retention-s}): answered inbound messages, history
     * rows, delivered replies and model calls' usage rows, and those older than the retention plus two pruning
     * intervals and 20 s (overdue: a scheduler keeping up would have pruned them); and the model calls the pruned usage
     * rows left in the daily sums. Null in a run on the node defaults.
     */
    public record Retention(long seconds, long answeredInbox, long overdueInbox, long messages, long overdueMessages,
                            long deliveredReplies, long overdueReplies, long usageRows, long overdueUsageRows,
                            long summedCalls, long waitedMs) {

        public boolean keptUp() {
            return overdueInbox == 0 && overdueMessages == 0 && overdueReplies == 0 && overdueUsageRows == 0;
        }

        JsonObject toJson() {
            return new JsonObject().put("seconds", seconds).put("answeredInboxLeft", answeredInbox)
                    .put("overdueInbox", overdueInbox).put("messagesLeft", messages).put("overdueMessages", overdueMessages)
                    .put("deliveredRepliesLeft", deliveredReplies).put("overdueReplies", overdueReplies)
                    .put("usageRowsLeft", usageRows).put("overdueUsageRows", overdueUsageRows)
                    .put("summedCalls", summedCalls)
                    .put("waitedMs", waitedMs);
        }
    }

    /**
     * One PostgreSQL restart as the nodes saw it: how long the database was down, how long until a gateway's
     * {@code /readyz} said so, and how long after it was back until every live node was ready again (-1: not seen
     * within the bound).
     */
    public record Outage(long downMs, long notReadyAfterMs, long allReadyAfterMs) {
    }

    /**
     * One flood as the edge took it: messages accepted (each must be answered once, in order) and refused with 429 or
     * 503 (none may be answered; each must say when to retry).
     */
    public record Flood(int accepted, int refused, int refusedWithoutRetryAfter, ChatLoad.Verdict verdict) {

        /** Nothing accepted was lost, doubled or reordered, nothing refused was answered, every refusal said when. */
        public boolean held() {
            return verdict.clean() && refusedWithoutRetryAfter == 0;
        }

        JsonObject toJson() {
            return new JsonObject().put("accepted", accepted).put("refused", refused)
                    .put("refusedWithoutRetryAfter", refusedWithoutRetryAfter).put("lost", verdict.lost().size())
                    .put("duplicated", verdict.duplicated().size()).put("outOfOrder", verdict.outOfOrder().size())
                    .put("examples", new JsonArray(java.util.stream.Stream.of(verdict.lost(), verdict.duplicated(),
                            verdict.outOfOrder()).flatMap(List::stream).limit(10).toList()))
                    .put("replyLatencyMs", new JsonObject().put("p50", verdict.p50LatencyMs())
                            .put("p99", verdict.p99LatencyMs()).put("max", verdict.maxLatencyMs()));
        }
    }

    /** What the run found. */
    public record Report(Instant started, long durationMs, String network, Map<String, Integer> faults,
                         ChatLoad.Verdict verdict, List<FailoverWatch.Gap> gaps, List<Outage> outages, List<JsonObject> pills,
                         long innocentDeadLetters, List<Flood> floods, SideEffects.Outcome sideEffects, JsonObject resources,
                         Retention retention) {

        /** Every pill sent ended as a dead letter after at most {@code maxTurnStarts} crashes, and nothing else did. */
        public boolean pillsContained(int maxTurnStarts) {
            return innocentDeadLetters == 0 && pills.stream().allMatch(p -> p.getBoolean("deadLettered")
                    && p.getInteger("crashes") <= maxTurnStarts);
        }

        public long longestFailoverGapMs() {
            return gaps.stream().mapToLong(FailoverWatch.Gap::millis).max().orElse(0);
        }

        public boolean passed(long maxGapMs) {
            return verdict.clean() && longestFailoverGapMs() <= maxGapMs && gaps.stream().allMatch(g -> g.millis() >= 0)
                    && outages.stream().allMatch(o -> o.notReadyAfterMs() >= 0 && o.allReadyAfterMs() >= 0)
                    && pillsContained(MAX_TURN_STARTS) && floods.stream().allMatch(Flood::held)
                    && (sideEffects == null || sideEffects.held()) && (retention == null || retention.keptUp());
        }

        public JsonObject toJson() {
            return new JsonObject()
                    .put("started", started.toString())
                    .put("durationSeconds", durationMs / 1000)
                    .put("busTransport", insecureBus() ? "plain TCP (CLAWFLEET_CLUSTER_INSECURE=true)" : "mutual TLS 1.3")
                    .put("network", network)
                    .put("faults", new JsonObject(new TreeMap<>(faults).entrySet().stream()
                            .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, e -> (Object) e.getValue()))))
                    .put("faultsTotal", faults.values().stream().mapToInt(Integer::intValue).sum())
                    .put("chats", verdict.chats())
                    .put("messages", verdict.messages())
                    .put("lost", verdict.lost().size())
                    .put("duplicated", verdict.duplicated().size())
                    .put("outOfOrder", verdict.outOfOrder().size())
                    .put("killsMeasured", gaps.size())
                    .put("longestFailoverGapMs", longestFailoverGapMs())
                    .put("failoverGapsMs", new JsonArray(gaps.stream().map(FailoverWatch.Gap::millis).toList()))
                    .put("postgresOutages", new JsonArray(outages.stream().map(o -> (Object) new JsonObject()
                            .put("downMs", o.downMs()).put("notReadyAfterMs", o.notReadyAfterMs())
                            .put("allReadyAfterMs", o.allReadyAfterMs())).toList()))
                    .put("poisonPills", new JsonArray(List.copyOf(pills)))
                    .put("innocentDeadLetters", innocentDeadLetters)
                    .put("floods", new JsonArray(floods.stream().map(f -> (Object) f.toJson()).toList()))
                    .put("sideEffects", sideEffects == null ? null : sideEffects.toJson())
                    .put("resources", resources)
                    .put("retention", retention == null ? null : retention.toJson())
                    .put("replyLatencyMs", new JsonObject().put("p50", verdict.p50LatencyMs())
                            .put("p99", verdict.p99LatencyMs()).put("max", verdict.maxLatencyMs()))
                    .put("examples", new JsonObject()
                            .put("lost", new JsonArray(verdict.lost().stream().limit(10).toList()))
                            .put("duplicated", new JsonArray(verdict.duplicated().stream().limit(10).toList()))
                            .put("outOfOrder", new JsonArray(verdict.outOfOrder().stream().limit(10).toList())));
        }
    }

    /**
     * The event bus in plain TCP, to measure what TLS costs under faults: the command's own environment says so
     * ({@code CLAWFLEET_CLUSTER_INSECURE=true ./clawfleet chaos}); by default the nodes run mutual TLS.
     */
    static boolean insecureBus() {
        return "true".equalsIgnoreCase(System.getenv("CLAWFLEET_CLUSTER_INSECURE"));
    }

    /** The workers' default {@code worker.maxTurnStarts}: a pill may crash at most this many. */
    static final int MAX_TURN_STARTS = 5;
    /** Chats of one flood, and the messages each sends back to back: past {@link #FLOOD_BACKLOG_CAP}. */
    static final int FLOOD_CHATS = 4;
    static final int FLOOD_MESSAGES = 400;
    /** {@code limits.maxUnansweredPerChat} of the chaos cluster (the default is 200). */
    static final int FLOOD_BACKLOG_CAP = 100;

    private enum Fault {
        KILL_WORKER, PAUSE_WORKER, RESTART_WORKER, KILL_GATEWAY, RESTART_GATEWAY, RESTART_POSTGRES,
        /** Link cuts (with {@link Options#netCuts}): the node's mesh or services link down for a while. */
        CUT_MESH_WORKER, CUT_DATABASE_WORKER, CUT_MESH_GATEWAY;

        boolean cut() {
            return name().startsWith("CUT_");
        }
    }

    /** Shortest and longest link cut: some end before the members' heartbeat timeout (15 s), some after. */
    private static final long CUT_MIN_MS = 4_000;
    private static final long CUT_MAX_MS = 25_000;

    /** The name {@link #disturbed} knows the database by while it is down. */
    private static final String POSTGRES = "postgres";

    private final Options options;
    private final Random random;
    private final Map<String, Integer> faults = new ConcurrentHashMap<>();
    /** Nodes currently down or paused by a fault: no second fault until they are back. */
    private final Set<String> disturbed = ConcurrentHashMap.newKeySet();
    private final AtomicInteger gatewayTurn = new AtomicInteger();
    private final List<Outage> outages = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** The database server: replaced by every restart. */
    private volatile EmbeddedDatabase postgres;
    /** The nodes' hosts when links are cut, or null (loopback). */
    private NetLab lab;
    private Path postgresData;

    public ChaosRun(Options options) {
        this.options = options;
        this.random = new Random(options.seed());
    }

    public Report run() throws Exception {
        Instant started = Instant.now();
        long start = System.nanoTime();
        Files.createDirectories(options.logs());
        // A data folder and a port of its own, so that a restart finds the same data at the same address.
        Path pgData = Files.createTempDirectory("clawfleet-chaos-pg").resolve("data");
        postgresData = pgData;
        postgres = EmbeddedDatabase.start(pgData, 0);
        try {
            DbUrl db = postgres.createDatabase("chaos");
            Vertx vertx = Vertx.vertx();
            String network = "loopback";
            if (options.netCuts()) {
                java.util.Optional<String> unavailable = NetLab.unavailable();
                if (unavailable.isPresent()) {
                    network = "loopback: --net-cuts asked for hosts of their own, but " + unavailable.get() + "; no link was cut";
                    LOG.warn("chaos on loopback without link cuts: {}", unavailable.get());
                } else {
                    lab = NetLab.create(7);
                    network = "network namespaces: every node on a host of its own, links cut with ip link set down";
                }
            }
            String modelHost = lab == null ? "127.0.0.1" : lab.servicesGateway();
            MockLlmServer model = new MockLlmServer(vertx, options.modelLatencyMs());
            model.start(modelHost, 0).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
            String modelUrl = "http://" + modelHost + ":" + model.port() + "/v1";
            SideEffects effects = options.sideEffectChats() > 0 ? new SideEffects(vertx).start(modelHost) : null;
            // Node restarts and a database restart each hold a thread while they wait for readiness.
            ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(4);
            try (ClusterHarness cluster = new ClusterHarness(db, modelUrl, options.jar(), options.logs(), 7);
                 FailoverWatch watch = new FailoverWatch(db)) {
                if (lab != null) {
                    // The hosts reach the database through a relay on the services link; its port survives restarts.
                    TcpRelay relay = TcpRelay.start(vertx, lab.servicesGateway(), db.host(), db.port())
                            .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
                    cluster.inNetLab(lab, new DbUrl(lab.servicesGateway(), relay.port(), db.database(), db.user(),
                            db.password(), db.query()), modelUrl);
                }
                cluster.env("CLAWFLEET_LEASE_TTL_MS", Long.toString(options.leaseTtlMs()))
                        .env("CLAWFLEET_LEASE_RENEW_INTERVAL_MS", Long.toString(Math.min(1_000, options.leaseTtlMs() / 3)))
                        // A flood's chats pass it for sure, however fast the machine answers; a chat of the steady load
                        // (a message every pauseMs) would need to wait minutes for an answer to reach it.
                        .env("CLAWFLEET_LIMITS_MAX_UNANSWERED_PER_CHAT", Integer.toString(FLOOD_BACKLOG_CAP));
                if (effects != null) {
                    // The counter is a remote MCP server beside the model; its calls need no approval.
                    cluster.env("CLAWFLEET_AGENT_AUTONOMY", "full").env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", modelHost);
                }
                if (options.retentionSeconds() > 0) {
                    // Answered messages, delivered replies, the chats' history and each model call's usage row (summed
                    // per day) go after the run's retention; the clients read replies as they go (below), as chat
                    // clients do.
                    String days = String.format(java.util.Locale.ROOT, "%.6f", options.retentionSeconds() / 86_400.0);
                    cluster.env("CLAWFLEET_RETENTION_INBOX_DAYS", days)
                            .env("CLAWFLEET_RETENTION_REPLIES_DAYS", days)
                            .env("CLAWFLEET_RETENTION_USAGE_DETAIL_DAYS", days)
                            .env("CLAWFLEET_RETENTION_TRANSCRIPT_DAYS", days)
                            .env("CLAWFLEET_RETENTION_INTERVAL_MS", Long.toString(options.retentionIntervalMs()));
                }
                if (insecureBus()) {
                    cluster.env("CLAWFLEET_CLUSTER_INSECURE", "true");
                }
                List<String> gateways = List.of("gateway-1", "gateway-2");
                List<String> workers = List.of("worker-1", "worker-2", "worker-3");
                // The oldest member is Hazelcast's master. As in a production cluster, let it be a
                // long-lived node: the sandbox and scheduler start first and are never faulted.
                cluster.start("sandbox-1", "sandbox");
                cluster.start("scheduler-1", "scheduler");
                cluster.awaitReady(Duration.ofMinutes(2));
                for (String id : gateways) {
                    cluster.start(id, "gateway");
                }
                for (String id : workers) {
                    cluster.start(id, "worker");
                }
                cluster.awaitReady(Duration.ofMinutes(3));
                awaitAllOwned(cluster, cluster.node("gateway-1"));
                LOG.info("chaos cluster ready; load and faults start [chats: {}, duration: {}]", options.chats(), options.duration());
                long loadStarted = System.nanoTime();
                ResourceSampler sampler = options.sampleEveryMs() <= 0 ? null
                        : new ResourceSampler(cluster, db, options.logs().resolve("resources.csv"), options.sampleEveryMs()).start();

                // With a retention, delivered replies are pruned during the run: every client reads them as it goes.
                boolean pruned = options.retentionSeconds() > 0;
                try (ChatLoad load = reading(pruned, new ChatLoad(() -> gatewayUrl(cluster, gateways), ClusterHarness.API_KEY,
                        "chaos"));
                     ChatLoad effectLoad = reading(pruned, new ChatLoad(() -> gatewayUrl(cluster, gateways),
                             ClusterHarness.API_KEY, "chaos-effect").saying(SideEffects::text, SideEffects::answers))) {
                    load.start(options.chats(), Integer.MAX_VALUE, options.pauseMs());
                    if (effects != null) {
                        effects.configure(gatewayUrl(cluster, gateways), ClusterHarness.API_KEY);
                        effectLoad.start(options.sideEffectChats(), Integer.MAX_VALUE, options.pauseMs());
                    }
                    PoisonPills pills = new PoisonPills(options.poisonPills(), ClusterHarness.API_KEY);
                    model.beforeAnswer(body -> pills.in(body).map(pill -> {
                        // Its turn "crashes" the worker: the model never answers, the worker is killed.
                        int request = pill.requests.incrementAndGet();
                        io.vertx.core.Promise<Void> answer = io.vertx.core.Promise.promise();
                        pill.waiting.put(request, answer);
                        // Any earlier request is now a stale owner's.
                        pill.waiting.keySet().stream().filter(r -> r < request).toList().forEach(pill::release);
                        try {
                            scheduler.execute(() -> crash(cluster, watch, scheduler, pill, request));
                        } catch (java.util.concurrent.RejectedExecutionException faultsOver) {
                            // The faults are over (the run waited for the pills, up to its bound): answered, the pill
                            // is reported as not dead-lettered.
                            pill.release(request);
                        }
                        return answer.future();
                    }).orElse(io.vertx.core.Future.succeededFuture()));
                    sendPills(pills, cluster, scheduler, gateways, pruned);
                    List<ChatLoad> floods = new ArrayList<>();
                    for (int i = 0; i < options.floods(); i++) {
                        int index = i;
                        ChatLoad flood = reading(pruned, new ChatLoad(() -> gatewayUrl(cluster, gateways),
                                ClusterHarness.API_KEY, "chaos-flood-" + i).takingRefusals());
                        floods.add(flood);
                        long atMs = options.duration().toMillis() * (2L * i + 1) / (2L * options.floods());
                        scheduler.schedule(() -> {
                            // Not into a database outage: every send would get 503 within the outage and the flood
                            // would test the outage, not the edge's capacity (it happened: 1,600 of 1,600 refused).
                            long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                            while (disturbed.contains(POSTGRES) && System.nanoTime() < waitUntil) {
                                sleepQuietly(200);
                            }
                            LOG.info("fault: FLOOD {} ({} chats send {} messages each, back to back)", index, FLOOD_CHATS,
                                    FLOOD_MESSAGES);
                            flood.start(FLOOD_CHATS, FLOOD_MESSAGES, 0);
                        }, atMs, TimeUnit.MILLISECONDS);
                    }
                    injectFaults(cluster, watch, scheduler, gateways, workers, () -> pillsPending(pills, watch));
                    load.stopSending();
                    effectLoad.stopSending();
                    load.awaitSent(Duration.ofMinutes(2));
                    effectLoad.awaitSent(Duration.ofMinutes(2));
                    for (ChatLoad flood : floods) {
                        flood.awaitSent(Duration.ofMinutes(2));
                    }
                    // Restarts still under way finish first: healing beside them would start a second JVM
                    // of the same node (it happened: two worker-2s, one on the next cluster port).
                    scheduler.shutdown();
                    if (!scheduler.awaitTermination(6, TimeUnit.MINUTES)) {
                        LOG.warn("restarts still running after 6 minutes; stopping them before healing");
                        scheduler.shutdownNow();
                        scheduler.awaitTermination(1, TimeUnit.MINUTES);
                    }
                    heal(cluster);
                    JsonObject resources = null;
                    if (sampler != null) {
                        sampler.close();
                        resources = sampler.summary();
                    }
                    LOG.info("chaos faults over; verifying {} messages", load.sent());
                    ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(5));
                    pills.awaitReplies(gatewayUrl(cluster, gateways), Duration.ofMinutes(5));
                    pills.close();
                    long innocentDeadLetters = watch.deadLettersBesides("chaos-pill-");
                    SideEffects.Outcome sideEffects = effects == null ? null
                            : effects.judge(effectLoad, effectLoad.verify(Duration.ofMinutes(3)));
                    if (effects != null) {
                        watch.dumpToolCalls(options.logs().resolve("tool-calls.csv"));
                    }
                    List<Flood> flooded = new ArrayList<>();
                    for (ChatLoad flood : floods) {
                        flooded.add(new Flood(flood.sent(), flood.refused(), flood.refusedWithoutRetryAfter(),
                                flood.verify(Duration.ofMinutes(3))));
                        flood.close();
                    }
                    Retention retention = options.retentionSeconds() > 0 ? retention(watch, loadStarted) : null;
                    Report report = new Report(started, (System.nanoTime() - start) / 1_000_000, network, Map.copyOf(faults),
                            verdict, watch.gaps(), List.copyOf(outages),
                            pills.all().stream().filter(p -> p.id != null).map(PoisonPills.Pill::toJson).toList(),
                            innocentDeadLetters, List.copyOf(flooded), sideEffects, resources, retention);
                    Files.writeString(options.logs().resolve("chaos-report.json"), report.toJson().encodePrettily());
                    return report;
                }
            } finally {
                scheduler.shutdownNow();
                vertx.close();
            }
        } finally {
            if (lab != null) {
                lab.close();
            }
            postgres.close();
            deleteTree(pgData.getParent());
        }
    }

    /**
     * What retention left once the run is over. Rows are overdue past the retention plus two pruning intervals and
     * 20 s. A run shorter than that waits until the first messages could be overdue, so that the check means
     * something, then gives a pass in flight 30 s more.
     */
    private Retention retention(FailoverWatch watch, long loadStarted) throws Exception {
        long overdueS = options.retentionSeconds() + 2 * options.retentionIntervalMs() / 1_000 + 20;
        long waitStarted = System.nanoTime();
        long meaningful = loadStarted + (overdueS + 5) * 1_000_000_000L;
        if (meaningful > waitStarted) {
            LOG.info("waiting {} s for the first messages to pass the retention of {} s", (meaningful - waitStarted) / 1_000_000_000L,
                    options.retentionSeconds());
            Thread.sleep((meaningful - waitStarted) / 1_000_000);
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            long[] left = watch.retained(overdueS);
            long waited = (System.nanoTime() - waitStarted) / 1_000_000;
            if (left[1] == 0 && left[3] == 0 && left[5] == 0 && left[7] == 0 || System.nanoTime() > deadline) {
                Retention retention = new Retention(options.retentionSeconds(), left[0], left[1], left[2], left[3], left[4],
                        left[5], left[6], left[7], left[8], waited);
                LOG.info("retention after the run: {}", retention);
                return retention;
            }
            Thread.sleep(2_000);
        }
    }

    private static ChatLoad reading(boolean asItGoes, ChatLoad load) {
        return asItGoes ? load.readingAsItGoes() : load;
    }

    /** Some pill is not sent yet, or sent and not dead-lettered yet: the faults go on (up to the run's bound). */
    private static boolean pillsPending(PoisonPills pills, FailoverWatch watch) {
        if (pills.all().isEmpty()) {
            return false;
        }
        try {
            return pills.all().stream().anyMatch(p -> p.id == null) || watch.deadLettersOf("chaos-pill-") < pills.all().size();
        } catch (java.sql.SQLException e) {
            return true;
        }
    }

    /** Sends the pills spread over the run, each when its time comes, through a gateway that takes it. */
    private void sendPills(PoisonPills pills, ClusterHarness cluster, ScheduledExecutorService scheduler,
                           List<String> gateways, boolean readAsItGoes) {
        int count = pills.all().size();
        for (int i = 0; i < count; i++) {
            int index = i;
            long atMs = options.duration().toMillis() * (i + 1) / (count + 1);
            scheduler.schedule(() -> {
                for (int attempt = 1; attempt <= 30; attempt++) {
                    if (pills.send(index, gatewayUrl(cluster, gateways))) {
                        LOG.info("poison pill {} sent", pills.all().get(index).chat);
                        if (readAsItGoes) {
                            pills.readAsItGoes(pills.all().get(index), () -> gatewayUrl(cluster, gateways));
                        }
                        return;
                    }
                    sleepQuietly(1_000);
                }
                LOG.warn("poison pill {} could not be sent", pills.all().get(index).chat);
            }, atMs, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * A pill's turn asked the model: kill -9 the worker that owns its partition, and start it again later. Not while a
     * kill's failover is being measured, nor while its owner is down, frozen or already being faulted: then the turn
     * waits on the model and this tries again in a second, until a later request of the pill (from its next owner)
     * takes over.
     */
    private void crash(ClusterHarness cluster, FailoverWatch watch, ScheduledExecutorService scheduler, PoisonPills.Pill pill,
                       int request) {
        try {
            if (pill.requests.get() != request) {
                pill.release(request);
                return;
            }
            String owner = watch.ownerOf(pill.partition);
            ClusterHarness.Node node = owner == null ? null : cluster.node(owner);
            if (node == null || watch.measuring() > 0 || disturbed.contains(POSTGRES) || !node.alive() || node.paused()
                    || !disturbed.add(owner)) {
                scheduler.schedule(() -> crash(cluster, watch, scheduler, pill, request), 1, TimeUnit.SECONDS);
                return;
            }
            faults.merge("poison_crash", 1, Integer::sum);
            pill.crashes.incrementAndGet();
            LOG.info("fault: POISON_CRASH {} (pill {})", owner, pill.chat);
            cluster.kill(owner);
            restartLater(cluster, scheduler, owner, 2_000 + random.nextInt(4_000));
        } catch (Exception e) {
            LOG.warn("a poison pill's crash could not be injected: {}", e.toString());
            pill.release(request);
        }
    }

    private static void deleteTree(Path root) {
        try (var paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (java.io.IOException e) {
            LOG.warn("cannot delete {}: {}", root, e.toString());
        }
    }

    /**
     * Injects faults at random intervals for the run's duration, and past it until the minimum
     * count is reached (bounded). When no node can take a fault now (the others are still coming
     * back), it tries again shortly instead of skipping the slot.
     */
    /** @param goOn past the run's duration, whether the faults must go on (until three times the duration at most) */
    private void injectFaults(ClusterHarness cluster, FailoverWatch watch, ScheduledExecutorService scheduler,
                              List<String> gateways, List<String> workers, java.util.function.BooleanSupplier goOn)
            throws InterruptedException {
        long start = System.nanoTime();
        long end = start + options.duration().toNanos();
        long hardEnd = start + 3 * options.duration().toNanos();
        long next = start + nextFaultDelayNanos();
        boolean retrying = false;
        while (true) {
            long now = System.nanoTime();
            if (now >= hardEnd || (now >= end && faultsInjected() >= options.minFaults() && !goOn.getAsBoolean())) {
                return;
            }
            if (now < next) {
                Thread.sleep(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(next - now), 250)));
                continue;
            }
            boolean injected = false;
            try {
                injected = inject(cluster, watch, scheduler, gateways, workers, retrying);
            } catch (Exception e) {
                LOG.warn("fault could not be injected, carrying on: {}", e.toString());
            }
            retrying = !injected;
            next = System.nanoTime() + (injected ? nextFaultDelayNanos() : TimeUnit.MILLISECONDS.toNanos(500));
        }
    }

    private long nextFaultDelayNanos() {
        return TimeUnit.MILLISECONDS.toNanos((long) (options.faultEveryMs() * (0.5 + random.nextDouble())));
    }

    private int faultsInjected() {
        return faults.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** Round-robin over gateways that are up (and not frozen); a dead one is found out by the client's retry. */
    private String gatewayUrl(ClusterHarness cluster, List<String> gateways) {
        for (int i = 0; i < gateways.size(); i++) {
            ClusterHarness.Node node = cluster.node(gateways.get(Math.floorMod(gatewayTurn.getAndIncrement(), gateways.size())));
            if (node.alive() && !node.paused() && !disturbed.contains(node.id())) {
                return node.url();
            }
        }
        return cluster.node(gateways.get(0)).url();
    }

    /**
     * Injects one fault; false when no node can take one now.
     *
     * @param retrying the last attempt injected nothing (the slot is being retried every half second)
     */
    private boolean inject(ClusterHarness cluster, FailoverWatch watch, ScheduledExecutorService scheduler,
                           List<String> gateways, List<String> workers, boolean retrying) throws Exception {
        // A random kind of fault; if no node can take it now (the others are still down), another kind.
        List<Fault> kinds = new ArrayList<>(List.of(Fault.values()));
        java.util.Collections.shuffle(kinds, random);
        if (lab == null) {
            kinds.removeIf(Fault::cut);
        }
        if (options.postgresOutageMs() <= 0) {
            kinds.remove(Fault.RESTART_POSTGRES);
        } else if (faults.containsKey(faultName(Fault.KILL_WORKER)) && !faults.containsKey(faultName(Fault.RESTART_POSTGRES))) {
            // Every run, however short, restarts the database at least once (after its first kill -9).
            kinds.remove(Fault.RESTART_POSTGRES);
            kinds.add(0, Fault.RESTART_POSTGRES);
        }
        if (!faults.containsKey(faultName(Fault.KILL_WORKER))) {
            // Every run, however short, measures at least one failover after a kill -9.
            kinds.remove(Fault.KILL_WORKER);
            kinds.add(0, Fault.KILL_WORKER);
        }
        if (disturbed.contains(POSTGRES)) {
            // While the database is down no node fault starts: a failover measured across the outage would
            // measure the outage. Nodes already down or restarting go on doing so through it.
            return false;
        }
        Fault fault = null;
        List<String> candidates = List.of();
        for (Fault kind : kinds) {
            if (kind == Fault.RESTART_POSTGRES) {
                // Only when drawn first, in a fresh slot: node faults fall through to the next kind when their
                // nodes are busy coming back, and a slot is retried every half second until some node can take
                // a fault, both of which would make this the usual fault (a 4-minute run had 6 of 11). And not
                // while a kill -9's failover is still being measured, for the reason above.
                if (kinds.get(0) == kind && !retrying && watch.measuring() == 0) {
                    fault = kind;
                    candidates = List.of(POSTGRES);
                    break;
                }
                continue;
            }
            candidates = (kind.name().endsWith("WORKER") ? workers : gateways).stream()
                    .filter(id -> !disturbed.contains(id) && cluster.node(id).alive()).toList();
            // Keep the cluster able to work: one gateway and one worker stay untouched.
            if (candidates.size() > 1) {
                fault = kind;
                break;
            }
        }
        if (fault == null) {
            return false;
        }
        String target = candidates.get(random.nextInt(candidates.size()));
        disturbed.add(target);
        faults.merge(faultName(fault), 1, Integer::sum);
        LOG.info("fault: {} {}", fault, target);
        switch (fault) {
            case KILL_WORKER -> {
                Map<Integer, Long> held = watch.heldBy(target);
                long killedAt = System.nanoTime();
                cluster.kill(target);
                watch.measure(target, held, killedAt);
                restartLater(cluster, scheduler, target, 2_000 + random.nextInt(4_000));
            }
            case KILL_GATEWAY -> {
                cluster.kill(target);
                restartLater(cluster, scheduler, target, 1_000 + random.nextInt(3_000));
            }
            case PAUSE_WORKER -> {
                cluster.pause(target);
                long frozenMs = options.leaseTtlMs() + 1_000 + random.nextInt(3_000);
                scheduler.schedule(() -> {
                    try {
                        cluster.resume(target);
                    } catch (Exception e) {
                        LOG.warn("cannot resume {}: {}", target, e.toString());
                    } finally {
                        disturbed.remove(target);
                    }
                }, frozenMs, TimeUnit.MILLISECONDS);
            }
            case RESTART_WORKER, RESTART_GATEWAY -> {
                cluster.stop(target);
                restartLater(cluster, scheduler, target, 500 + random.nextInt(2_000));
            }
            case CUT_MESH_WORKER, CUT_DATABASE_WORKER, CUT_MESH_GATEWAY -> {
                NetLab.Link link = fault == Fault.CUT_DATABASE_WORKER ? NetLab.Link.SERVICES : NetLab.Link.MESH;
                int host = cluster.node(target).labHost();
                lab.cut(host, link);
                long cutMs = CUT_MIN_MS + (long) (random.nextDouble() * (CUT_MAX_MS - CUT_MIN_MS));
                scheduler.schedule(() -> {
                    try {
                        lab.heal(host, link);
                    } catch (Exception e) {
                        LOG.warn("cannot heal {}'s {} link: {}", target, link, e.toString());
                    } finally {
                        disturbed.remove(target);
                    }
                }, cutMs, TimeUnit.MILLISECONDS);
            }
            case RESTART_POSTGRES -> {
                long downMs = options.postgresOutageMs() / 3
                        + (long) (random.nextDouble() * (options.postgresOutageMs() - options.postgresOutageMs() / 3));
                scheduler.execute(() -> {
                    try {
                        restartPostgres(cluster, gateways, downMs);
                    } finally {
                        disturbed.remove(POSTGRES);
                    }
                });
            }
        }
        return true;
    }

    /**
     * Stops PostgreSQL (fast shutdown: open transactions roll back, every connection drops), keeps it down for
     * {@code downMs}, starts it again on the same data and port, and records how the nodes saw it.
     */
    private void restartPostgres(ClusterHarness cluster, List<String> gateways, long downMs) {
        int port = postgres.port();
        Path data = postgresData;
        long stoppedAt = System.nanoTime();
        postgres.close();
        long notReadyAfter = -1;
        while (System.nanoTime() - stoppedAt < TimeUnit.MILLISECONDS.toNanos(downMs)) {
            if (notReadyAfter < 0 && gateways.stream().map(cluster::node)
                    .anyMatch(n -> n.alive() && !n.paused() && !disturbed.contains(n.id()) && !cluster.ready(n))) {
                notReadyAfter = (System.nanoTime() - stoppedAt) / 1_000_000;
            }
            sleepQuietly(100);
        }
        long startedAt = System.nanoTime();
        for (int attempt = 1; ; attempt++) {
            try {
                postgres = EmbeddedDatabase.start(data, port);
                break;
            } catch (RuntimeException e) {
                if (attempt == 5) {
                    throw e;
                }
                LOG.warn("postgresql did not start again (attempt {}): {}", attempt, e.toString());
                sleepQuietly(1_000);
            }
        }
        long allReadyAfter = -1;
        long deadline = startedAt + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            boolean allReady = cluster.nodes().stream()
                    .filter(n -> n.alive() && !n.paused() && !disturbed.contains(n.id()))
                    .allMatch(cluster::ready);
            if (allReady) {
                allReadyAfter = (System.nanoTime() - startedAt) / 1_000_000;
                break;
            }
            sleepQuietly(100);
        }
        Outage outage = new Outage((startedAt - stoppedAt) / 1_000_000, notReadyAfter, allReadyAfter);
        outages.add(outage);
        LOG.info("postgresql back [{}]", outage);
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String faultName(Fault fault) {
        return fault.name().toLowerCase(java.util.Locale.ROOT);
    }

    private void restartLater(ClusterHarness cluster, ScheduledExecutorService scheduler, String id, long delayMs) {
        scheduler.schedule(() -> {
            try {
                restart(cluster, id);
            } finally {
                disturbed.remove(id);
            }
        }, delayMs, TimeUnit.MILLISECONDS);
    }

    /** Restarts a node, as a supervisor would: again, if it exits or does not get ready. */
    private static void restart(ClusterHarness cluster, String id) {
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                if (cluster.node(id).alive()) {
                    cluster.kill(id);
                }
                cluster.restart(id);
                cluster.awaitReady(cluster.node(id), System.nanoTime() + TimeUnit.SECONDS.toNanos(90));
                return;
            } catch (Exception e) {
                LOG.warn("restart of {} failed (attempt {}): {}", id, attempt, e.toString());
            }
        }
    }

    /** Brings every node back (and every link) so what was accepted can be answered. */
    private void heal(ClusterHarness cluster) throws Exception {
        if (lab != null && lab.healAll() > 0) {
            // Give healed nodes their merge back into the cluster (Hazelcast looks every 5 s) before judging them.
            Thread.sleep(10_000);
        }
        for (ClusterHarness.Node node : cluster.nodes()) {
            if (node.paused()) {
                cluster.resume(node.id());
            }
        }
        for (ClusterHarness.Node node : cluster.nodes()) {
            if (!node.alive() || !cluster.ready(node)) {
                restart(cluster, node.id());
            }
        }
        cluster.awaitReady(Duration.ofMinutes(2));
    }

    private static void awaitAllOwned(ClusterHarness cluster, ClusterHarness.Node gateway) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (System.nanoTime() < deadline) {
            JsonObject owners = cluster.cluster(gateway).getJsonObject("partitionsByOwner");
            if (owners.stream().mapToInt(e -> (Integer) e.getValue()).sum() == 64 && owners.size() == 3) {
                return;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("partitions were not spread over the 3 workers within 2 minutes");
    }
}
