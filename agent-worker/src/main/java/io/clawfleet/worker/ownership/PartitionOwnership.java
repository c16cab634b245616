package io.clawfleet.worker.ownership;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.bus.RoleSignatures;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.PartitionReleased;
import io.clawfleet.shared.message.WorkerReady;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.Lease;
import io.clawfleet.shared.store.LeaseStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Holds this worker's partition leases: renews them all in one statement each interval, claims
 * the partitions placement gives it, hands off those it should no longer own, and lets go of any
 * it finds it has lost. Runs on its worker's event loop; one tick at a time.
 *
 * <p>Handoff protocol (one partition): owner sees a better owner in the membership → stops new
 * turns ({@link PartitionListener#drain}) → waits for turns in flight, at most the handoff timeout →
 * releases the lease at its epoch → publishes {@link PartitionReleased} → the new owner claims it at
 * once (epoch + 1), subscribes and scans the inbox.
 */
public final class PartitionOwnership {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionOwnership.class);
    /** Longest wait for a cluster (Hazelcast) operation on the way out. */
    private static final long CLUSTER_OP_MS = 2_000;

    private enum State { ACTIVE, DRAINING }

    private record Held(long epoch, State state) {
    }

    private final Vertx vertx;
    private final String nodeId;
    private final Membership membership;
    private final LeaseStore leases;
    private final ClawfleetConfig.Lease config;
    private final PartitionListener listener;
    private final Metrics metrics;
    private final RoleSignatures signatures;

    /** Mutated on the event loop only; concurrent so status readers can snapshot it. */
    private final Map<Integer, Held> held = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, Long> departed = new HashMap<>();
    private final Map<String, Long> leaving = new HashMap<>();
    private final Map<Integer, Long> expiredSince = new HashMap<>();
    /** Workers last seen letting a lease expire, and when: not handed partitions for a TTL after (see rebalance). */
    private final Map<String, Long> suspectSeen = new HashMap<>();
    /** Largest membership seen recently: a node whose view shrinks below half of it may be the one cut off. */
    private int peakMembers;
    private long peakSeenNanos = System.nanoTime();
    private long lastRenewedNanos = System.nanoTime();
    /** When the lease table last answered: a worker that cannot reach it cannot claim, so it must not be handed any. */
    private long lastDatabaseAnswerNanos = System.nanoTime();
    /** When the lease table answered again after it had not within the TTL (an outage, a cut), or never. */
    private long databaseBackNanos = System.nanoTime() - TimeUnit.DAYS.toNanos(1);
    private boolean ticking;
    private boolean tickAgain;
    private boolean stopped;
    private long timerId = -1;
    private MessageConsumer<PartitionReleased> releasedConsumer;
    private MessageConsumer<WorkerReady> readyConsumer;
    /** Workers heard saying they can own partitions, and when: they say so on every tick. */
    private final Map<String, Long> readySeen = new HashMap<>();

    /**
     * @param signatures signs this worker's handoff notices with its certificate key, and drops those of other workers
     *                   not signed by a worker's certificate (off on a node without one)
     */
    public PartitionOwnership(Vertx vertx, String nodeId, Membership membership, LeaseStore leases,
                              ClawfleetConfig.Lease config, PartitionListener listener, Metrics metrics,
                              RoleSignatures signatures) {
        this.signatures = Objects.requireNonNull(signatures);
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.membership = Objects.requireNonNull(membership);
        this.leases = Objects.requireNonNull(leases);
        this.config = Objects.requireNonNull(config);
        this.listener = Objects.requireNonNull(listener);
        this.metrics = Objects.requireNonNull(metrics);
    }

    public Future<Void> start() {
        membership.onChange(change -> {
            if (!change.joined()) {
                departed.put(change.member().nodeId(), System.nanoTime());
            } else {
                departed.remove(change.member().nodeId());
                leaving.remove(change.member().nodeId());
            }
            tick();
        });
        Future<MessageConsumer<PartitionReleased>> released = Consumers.register(vertx, Addresses.PARTITION_RELEASED,
                (Message<PartitionReleased> message) -> {
                    PartitionReleased notice = message.body();
                    // Checked before "is it mine": a forged notice in this worker's own name is refused and counted
                    // (ClusterTlsIT), not passed over as an echo of its own.
                    if (!fromAWorker(message, Addresses.PARTITION_RELEASED, "partition-released")) {
                        return;
                    }
                    if (!notice.fromNode().equals(nodeId)) {
                        if (notice.leaving()) {
                            // It is shutting down: place without it now rather than when it leaves the cluster.
                            leaving.put(notice.fromNode(), System.nanoTime());
                        }
                        tick();
                    }
                });
        Future<MessageConsumer<WorkerReady>> ready = Consumers.register(vertx, Addresses.WORKER_READY,
                (Message<WorkerReady> message) -> {
                    WorkerReady notice = message.body();
                    if (notice.nodeId().equals(nodeId) || !fromAWorker(message, Addresses.WORKER_READY, "worker-ready")) {
                        return;
                    }
                    boolean isNew = notice.ready() && readySeen.put(notice.nodeId(), System.nanoTime()) == null;
                    if (!notice.ready()) {
                        readySeen.remove(notice.nodeId());
                    }
                    if (isNew || !notice.ready()) {
                        tick();
                    }
                });
        metrics.gauge("clawfleet.partitions.owned", held::size, "node", nodeId);
        return Future.all(released, ready).onSuccess(v -> {
            releasedConsumer = released.result();
            readyConsumer = ready.result();
            announce(true);
            timerId = vertx.setPeriodic(config.renewIntervalMs(), id -> {
                // Not inside tick(): a tick waiting on an unreachable database (up to the TTL) must not hold back the
                // notice that this worker cannot claim.
                announce(canClaim());
                tick();
            });
            tick();
        }).mapEmpty();
    }

    /** Tells the other workers whether this one can own partitions (repeated on every tick). */
    private void announce(boolean ready) {
        WorkerReady notice = new WorkerReady(nodeId, ready);
        vertx.eventBus().publish(Addresses.WORKER_READY, notice,
                signatures.sign(new DeliveryOptions(), Addresses.WORKER_READY, notice));
    }

    /**
     * Whether a handoff notice comes from a worker: signed with a worker's certificate key, checked against the CAs the
     * node trusts. Every role may connect to a worker (sandbox nodes answer calls on that connection), so the handshake
     * alone cannot say; a notice from anything else is dropped, logged and counted.
     */
    private boolean fromAWorker(Message<? extends io.clawfleet.shared.message.Versioned> message, String address, String kind) {
        RoleSignatures.Verdict verdict = signatures.verify(message.headers(), address, message.body(), ClawfleetConfig.Role.WORKER);
        if (verdict == RoleSignatures.Verdict.VALID) {
            return true;
        }
        LOG.warn("handoff notice refused, not from a worker [node: {}, notice: {}, reason: {}]", nodeId, kind, verdict.id());
        metrics.increment("clawfleet.bus.rejected", "message", kind, "reason", verdict.id());
        return false;
    }

    /** Whether a new turn may start on the partition: held, not draining, lease fresh by our clock. */
    public boolean mayServe(int partition) {
        Held h = held.get(partition);
        return h != null && h.state() == State.ACTIVE && !stopped
                && System.nanoTime() - lastRenewedNanos < TimeUnit.MILLISECONDS.toNanos(config.ttlMs());
    }

    /** The epoch this node holds the partition at, or -1. */
    public long epochOf(int partition) {
        Held h = held.get(partition);
        return h == null ? -1 : h.epoch();
    }

    /**
     * A write for the partition was fenced off: another node owns it now. Only the tenure at {@code epoch} ends: a turn
     * begun before this worker lost the partition and claimed it back ends fenced too, and must not take the new claim
     * with it.
     */
    public void fenced(int partition, long epoch) {
        Held h = held.get(partition);
        if (h != null && h.epoch() <= epoch && held.remove(partition, h)) {
            LOG.warn("partition lost: fenced by a newer owner [node: {}, partition: {}]", nodeId, partition);
            metrics.increment("clawfleet.partitions.fenced", "node", nodeId);
            listener.lost(partition);
        }
    }

    public Set<Integer> heldPartitions() {
        return Set.copyOf(held.keySet());
    }

    /** Runs a tick now, or right after the one in progress. */
    public void tick() {
        if (stopped) {
            return;
        }
        if (ticking) {
            tickAgain = true;
            return;
        }
        ticking = true;
        long started = System.nanoTime();
        renew()
                .compose(v -> leases.all())
                .onSuccess(all -> {
                    if (!databaseAnswered()) {
                        databaseBackNanos = started;
                    }
                    lastDatabaseAnswerNanos = started;
                })
                .compose(all -> rebalance(all, readyWorkers()))
                .onFailure(e -> LOG.warn("lease tick failed [node: {}]: {}", nodeId, e.getMessage()))
                .onComplete(r -> {
                    ticking = false;
                    if (tickAgain) {
                        tickAgain = false;
                        tick();
                    }
                });
    }

    private Future<Void> renew() {
        if (held.isEmpty()) {
            lastRenewedNanos = System.nanoTime();
            return Future.succeededFuture();
        }
        Map<Integer, Long> epochs = new HashMap<>();
        held.forEach((p, h) -> epochs.put(p, h.epoch()));
        long started = System.nanoTime();
        return leases.renew(nodeId, epochs, config.ttlMs())
                .timeout(config.ttlMs(), TimeUnit.MILLISECONDS)
                .onSuccess(kept -> {
                    lastRenewedNanos = started;
                    for (Integer p : epochs.keySet()) {
                        if (!kept.contains(p) && held.get(p) != null && held.get(p).epoch() == epochs.get(p)) {
                            held.remove(p);
                            metrics.increment("clawfleet.partitions.lost", "node", nodeId);
                            LOG.warn("partition lost: lease taken by another node [node: {}, partition: {}]", nodeId, p);
                            listener.lost(p);
                        }
                    }
                })
                .onFailure(e -> {
                    if (System.nanoTime() - lastRenewedNanos > TimeUnit.MILLISECONDS.toNanos(config.ttlMs())) {
                        // Our leases have run out by now; others may own these partitions. Let go.
                        LOG.warn("leases expired while the database was unreachable; dropping {} partitions [node: {}]",
                                held.size(), nodeId);
                        List<Integer> all = new ArrayList<>(held.keySet());
                        held.clear();
                        all.forEach(p -> metrics.increment("clawfleet.partitions.lost", "node", nodeId));
                        all.forEach(listener::lost);
                    }
                })
                .mapEmpty();
    }

    /**
     * Whether this worker may say it can own partitions: the lease table answered within two renew intervals (and the
     * TTL). Cut off from PostgreSQL (a network partition, an outage), it says it cannot, before its leases run out: the
     * others would otherwise hand it the partitions they take when those leases expire, which it cannot claim, take
     * them back after the grace, hand them over again, and the chats on them would stall in that loop.
     */
    private boolean canClaim() {
        long window = Math.min(config.ttlMs(), config.renewIntervalMs() * 2);
        return System.nanoTime() - lastDatabaseAnswerNanos < TimeUnit.MILLISECONDS.toNanos(window);
    }

    /** Whether the lease table answered within the lease TTL. */
    private boolean databaseAnswered() {
        return System.nanoTime() - lastDatabaseAnswerNanos < TimeUnit.MILLISECONDS.toNanos(config.ttlMs());
    }

    private boolean hasQuorum(long now) {
        int members = membership.members().size();
        if (members >= peakMembers || now - peakSeenNanos > TimeUnit.MILLISECONDS.toNanos(config.ttlMs() * 10)) {
            peakMembers = members;
            peakSeenNanos = now;
        }
        return members * 2 > peakMembers;
    }

    /** Workers heard announcing readiness within the last three ticks (their notices may be lost). */
    private Set<String> readyWorkers() {
        long horizon = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(config.renewIntervalMs() * 3);
        readySeen.values().removeIf(seen -> seen < horizon);
        return Set.copyOf(readySeen.keySet());
    }

    private Future<Void> rebalance(List<Lease> all, Set<String> ready) {
        if (stopped) {
            return Future.succeededFuture();
        }
        long now = System.nanoTime();
        departed.values().removeIf(since -> now - since > TimeUnit.MILLISECONDS.toNanos(config.ttlMs() * 10));
        leaving.values().removeIf(since -> now - since > TimeUnit.MILLISECONDS.toNanos(config.ttlMs() * 10));
        Set<Integer> longExpired = new HashSet<>();
        // The desired owner claims an expired lease at its next tick; unclaimed after that, anyone may.
        long grace = TimeUnit.MILLISECONDS.toNanos(config.renewIntervalMs() * 3 / 2);
        for (Lease lease : all) {
            // Expired or released and left unclaimed past the grace: whoever sees it first takes it.
            if (lease.expired() && !held.containsKey(lease.partition())) {
                long since = expiredSince.computeIfAbsent(lease.partition(), p -> now);
                if (now - since > grace) {
                    longExpired.add(lease.partition());
                }
            } else {
                expiredSince.remove(lease.partition());
            }
        }
        // A member counts for placement once its worker can claim: handing off to a node still
        // starting would leave partitions unowned until it is up. Except just after this node's own database outage:
        // then every worker said it could not claim and every lease expired (the database was gone for all), and
        // trusting either would make the first one back claim every partition and hand most of them off again (a chaos
        // run saw 64 claimed, 40 handed off). For three renew intervals it claims its share among all worker members,
        // suspects no one for an expired lease, and hands nothing off.
        boolean justBack = now - databaseBackNanos < TimeUnit.MILLISECONDS.toNanos(config.renewIntervalMs() * 3);
        // A worker that let a lease expire stays out of placement for a TTL after its last expired lease is seen. Once
        // the others take those leases it no longer looks suspect in the table, and, still announced ready by a notice
        // sent before it knew it was cut off, it would be handed the very partitions it could not keep.
        Placement.suspects(nodeId, all).forEach(node -> suspectSeen.put(node, now));
        suspectSeen.values().removeIf(since -> now - since > TimeUnit.MILLISECONDS.toNanos(config.ttlMs()));
        Set<String> workers = membership.members().stream()
                .filter(m -> m.hasRole("worker")).map(Member::nodeId)
                .filter(id -> justBack || ready.contains(id) || id.equals(nodeId))
                .filter(id -> justBack || !suspectSeen.containsKey(id) || id.equals(nodeId))
                .collect(Collectors.toSet());
        // Take over from departed members at once only with a quorum: a node that was frozen or cut
        // off sees everyone else "leave", and must not steal from the majority. Without a quorum,
        // departed members' leases are taken when they expire, like any other.
        Set<String> departedNow = hasQuorum(now) ? departed.keySet() : Set.of();
        Placement.Decision decision = Placement.decide(nodeId, workers, all, held.keySet(), departedNow,
                leaving.keySet(), longExpired, justBack);
        Set<Integer> newHandoffs = new java.util.TreeSet<>();
        decision.handOff().stream().filter(p -> !justBack).filter(p -> held.get(p) != null && held.get(p).state() == State.ACTIVE)
                .forEach(newHandoffs::add);
        if (!newHandoffs.isEmpty()) {
            LOG.info("handing partitions off to their new owners [node: {}, count: {}, partitions: {}]", nodeId,
                    newHandoffs.size(), newHandoffs);
            newHandoffs.forEach(this::handOff);
        }
        if (decision.claim().isEmpty()) {
            return Future.succeededFuture();
        }
        return leases.claim(nodeId, decision.claim(), config.ttlMs(), departed.keySet()).onSuccess(claimed -> {
            claimed.forEach((p, epoch) -> {
                held.put(p, new Held(epoch, State.ACTIVE));
                expiredSince.remove(p);
                listener.acquired(p, epoch);
            });
            if (!claimed.isEmpty()) {
                LOG.info("partitions acquired [node: {}, count: {}, held: {}, partitions: {}]", nodeId, claimed.size(),
                        held.size(), new java.util.TreeMap<>(claimed));
                metrics.increment("clawfleet.partitions.acquired", "node", nodeId);
            }
        }).mapEmpty();
    }

    private Future<Void> handOff(int partition) {
        Held h = held.get(partition);
        if (h == null || h.state() == State.DRAINING) {
            return Future.succeededFuture();
        }
        held.put(partition, new Held(h.epoch(), State.DRAINING));
        LOG.debug("handing partition off [node: {}, partition: {}, epoch: {}]", nodeId, partition, h.epoch());
        return listener.drain(partition)
                .timeout(Math.max(1, config.handoffTimeoutMs()), TimeUnit.MILLISECONDS)
                .recover(e -> {
                    LOG.warn("handoff did not drain in time, abandoning turns in flight [node: {}, partition: {}]", nodeId, partition);
                    return Future.succeededFuture();
                })
                .compose(v -> leases.release(nodeId, partition, h.epoch()))
                .onComplete(released -> {
                    Held current = held.get(partition);
                    if (current != null && current.epoch() == h.epoch()) {
                        held.remove(partition);
                        listener.lost(partition);
                    }
                    if (released.succeeded() && released.result()) {
                        PartitionReleased notice = new PartitionReleased(partition, h.epoch(), nodeId, stopped);
                        vertx.eventBus().publish(Addresses.PARTITION_RELEASED, notice,
                                signatures.sign(new DeliveryOptions(), Addresses.PARTITION_RELEASED, notice));
                        metrics.increment("clawfleet.partitions.handed_off", "node", nodeId);
                    }
                })
                .mapEmpty();
    }

    /** Graceful stop: hand off every partition (bounded by the handoff timeout), then stop ticking. */
    public Future<Void> stop() {
        stopped = true;
        if (timerId >= 0) {
            vertx.cancelTimer(timerId);
        }
        announce(false);
        List<Future<Void>> handoffs = new ArrayList<>();
        if (!held.isEmpty()) {
            LOG.info("stopping: handing off every partition [node: {}, count: {}]", nodeId, held.size());
        }
        for (Integer partition : new ArrayList<>(held.keySet())) {
            handoffs.add(handOff(partition));
        }
        Future<Void> unregister = releasedConsumer == null ? Future.succeededFuture()
                : Future.join(releasedConsumer.unregister(), readyConsumer.unregister()).<Void>mapEmpty()
                        .timeout(CLUSTER_OP_MS, TimeUnit.MILLISECONDS).recover(e -> Future.succeededFuture());
        return Future.join(handoffs).transform(r -> unregister);
    }
}
