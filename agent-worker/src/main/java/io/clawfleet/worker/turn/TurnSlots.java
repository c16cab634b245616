package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.TurnSlotStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The tenants' concurrent-turn limits ({@code concurrentTurns}, issue 14) as this worker sees them: how many of a
 * tenant's turn slots it holds, cluster-wide, and how many of them its turns use. The dispatcher asks
 * {@link #mayStart} before it gives a tenant's chat a turn, and says when one {@link #started} and {@link #ended}.
 *
 * <p>How it stays cheap: a tenant without the limit costs one plain read (no lock) every half minute (asked in the
 * background, its turns never wait). A limited tenant's worker reuses the slots it was granted for new turns for a
 * second without asking again; after that, or when it needs one more, it asks ({@link TurnSlotStore#take}), and
 * what it asks for is what it uses plus one. The answer may be fewer when other workers wait for their share: then it
 * gives slots back as its turns end. Slots it no longer uses go back after a second; its leases are renewed in one
 * statement every five seconds, and a worker that dies holds its slots for at most fifteen seconds.
 *
 * <p>A worker that cannot renew its leases stops starting limited tenants' turns three seconds before they
 * would expire, so the limit holds while the database is unreachable. Event-loop confined.
 */
public final class TurnSlots {

    private static final Logger LOG = LoggerFactory.getLogger(TurnSlots.class);
    /**
     * The clocks of the leases.
     *
     * @param ttlMs    how long a lease lasts without renewal: a dead worker's slots come back after this
     * @param renewMs  how often the leases are renewed
     * @param marginMs leases count as lost this long before they expire by this worker's clock
     * @param reuseMs  a grant serves new turns for this long; then the next turn asks again, and so learns of other
     *                 workers waiting for the tenant's slots
     */
    record Timing(long ttlMs, long renewMs, long marginMs, long reuseMs) {
    }

    static final Timing DEFAULT = new Timing(15_000, 5_000, 3_000, 1_000);
    /** A refused ask is repeated after this long while a chat of the tenant still waits. */
    static final long RETRY_MS = 200;
    static final long FAILED_RETRY_MS = 1_000;
    static final long TICK_MS = 100;
    /** A tenant without the limit is asked about again after this long (a change is also announced on the bus). */
    static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** A tenant with no turns for this long is forgotten. */
    static final long FORGET_NANOS = TimeUnit.MINUTES.toNanos(2);

    private static final class Tenant {
        final String id;
        boolean known;
        boolean limited;
        /** Slots granted by the last ask. */
        int held;
        /** What this worker's row says it holds: at least its turns under way when it asked. */
        int row;
        int inUse;
        boolean asking;
        boolean recheck;
        long askedAt;
        long leaseUntil;
        long retryAt;
        /** When an ask last went short (0: never since the row last said this worker wants nothing). */
        long refusedAt;
        long lastUsed;

        Tenant(String id) {
            this.id = id;
        }
    }

    private final Vertx vertx;
    private final TurnSlotStore store;
    private final String holder;
    private final Metrics metrics;
    private final Timing timing;
    private final long reuseNanos;
    /** No refused ask for this long: the worker no longer waits for the tenant's slots. */
    private final long waitingNanos;
    private final Map<String, Tenant> tenants = new HashMap<>();
    private Runnable onSlots = () -> {
    };
    private long tickTimer = -1;
    private long lastRenew = System.nanoTime();
    private boolean renewing;
    private MessageConsumer<TenantChanged> changes;

    /**
     * @param nodeId the worker's node id; the holder name adds a run id, so a restarted worker does not take over the
     *               leases its previous run left to expire
     */
    public TurnSlots(Vertx vertx, TurnSlotStore store, String nodeId, Metrics metrics) {
        this(vertx, store, nodeId, metrics, DEFAULT);
    }

    TurnSlots(Vertx vertx, TurnSlotStore store, String nodeId, Metrics metrics, Timing timing) {
        this.timing = Objects.requireNonNull(timing);
        this.reuseNanos = TimeUnit.MILLISECONDS.toNanos(timing.reuseMs());
        this.waitingNanos = Math.max(reuseNanos, TimeUnit.MILLISECONDS.toNanos(5 * RETRY_MS));
        this.vertx = Objects.requireNonNull(vertx);
        this.store = Objects.requireNonNull(store);
        this.holder = nodeId + "/" + UUID.randomUUID().toString().substring(0, 8);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** What to call when a tenant that was refused may start turns again (the dispatcher hands out slots). */
    public void onSlots(Runnable onSlots) {
        this.onSlots = Objects.requireNonNull(onSlots);
    }

    public Future<Void> start() {
        metrics.gauge("clawfleet.turns.tenant_slots_held", () -> tenants.values().stream().mapToInt(t -> t.row).sum(),
                "node", holder.substring(0, holder.lastIndexOf('/')));
        tickTimer = vertx.setPeriodic(TICK_MS, id -> tick());
        return Consumers.register(vertx, Addresses.TENANT_CHANGED, (Message<TenantChanged> message) -> {
            Tenant t = tenants.get(message.body().tenantId());
            if (t != null) {
                t.recheck = true;
            }
        }).onSuccess(consumer -> changes = consumer).mapEmpty();
    }

    /** Gives back every slot this worker holds. */
    public Future<Void> stop() {
        if (tickTimer >= 0) {
            vertx.cancelTimer(tickTimer);
        }
        if (changes != null) {
            changes.unregister();
        }
        return store.releaseAll(holder);
    }

    public String holder() {
        return holder;
    }

    /**
     * Whether a turn of the tenant may start now. When not, this worker asks for a slot and calls {@link #onSlots}
     * once it has one (or once it is worth asking again).
     */
    public boolean mayStart(String tenantId) {
        Tenant t = tenants.computeIfAbsent(tenantId, Tenant::new);
        long now = System.nanoTime();
        if (t.known && !t.limited) {
            if (t.recheck) {
                ask(t, now);
            } else if (now - t.askedAt > RECHECK_NANOS) {
                recheck(t, now);
            }
            return true;
        }
        if (t.known && !t.recheck && t.inUse < t.held && now - t.askedAt < reuseNanos && now < t.leaseUntil) {
            return true;
        }
        ask(t, now);
        return false;
    }

    public void started(String tenantId) {
        Tenant t = tenants.computeIfAbsent(tenantId, Tenant::new);
        t.inUse++;
        t.lastUsed = System.nanoTime();
        t.row = t.limited ? Math.max(t.row, t.inUse) : t.row;
    }

    /** A turn of the tenant ended: a slot this worker holds beyond its grant goes back at once. */
    public void ended(String tenantId) {
        Tenant t = tenants.get(tenantId);
        if (t == null) {
            return;
        }
        t.inUse = Math.max(0, t.inUse - 1);
        t.lastUsed = System.nanoTime();
        int keep = Math.max(t.held, t.inUse);
        if (t.limited && keep < t.row) {
            t.row = keep;
            store.giveBack(t.id, holder, keep, t.refusedAt != 0).onFailure(e -> LOG.warn(
                    "could not give turn slots back, they return when the lease expires [tenant: {}]: {}", t.id, e.getMessage()));
        }
    }

    /** A tenant known to have no limit: a plain read says whether it still has none; only when it has one now, ask. */
    private void recheck(Tenant t, long now) {
        if (t.asking || now < t.retryAt) {
            return;
        }
        t.asking = true;
        store.limit(t.id).onComplete(result -> {
            t.asking = false;
            if (result.succeeded() && result.result() == null) {
                t.askedAt = now;
            } else {
                ask(t, System.nanoTime()); // limited now (or the read failed: asking logs it and retries)
            }
        });
    }

    private void ask(Tenant t, long now) {
        if (t.asking || now < t.retryAt) {
            return;
        }
        t.asking = true;
        t.recheck = false;
        int inUse = t.inUse;
        store.take(t.id, holder, inUse, inUse + 1, timing.ttlMs()).onComplete(result -> {
            t.asking = false;
            if (result.failed()) {
                LOG.warn("could not take a turn slot, retrying in {} ms [tenant: {}]: {}", FAILED_RETRY_MS, t.id,
                        result.cause().getMessage());
                t.retryAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FAILED_RETRY_MS);
                vertx.setTimer(FAILED_RETRY_MS, id -> onSlots.run());
                return;
            }
            Integer granted = result.result();
            boolean wasKnown = t.known;
            t.known = true;
            t.askedAt = now;
            if (granted == null) {
                t.limited = false;
                t.held = 0;
                t.row = 0;
                t.refusedAt = 0;
                if (!wasKnown) {
                    onSlots.run();
                }
                return;
            }
            t.limited = true;
            t.held = granted;
            t.row = Math.max(granted, inUse);
            t.leaseUntil = now + TimeUnit.MILLISECONDS.toNanos(timing.ttlMs() - timing.marginMs());
            if (granted > t.inUse) {
                t.refusedAt = 0;
                onSlots.run();
            } else {
                t.refusedAt = now;
                metrics.increment("clawfleet.turns.tenant_slot_waits", "tenant", t.id);
                t.retryAt = now + TimeUnit.MILLISECONDS.toNanos(RETRY_MS);
                vertx.setTimer(RETRY_MS, id -> onSlots.run());
            }
        });
    }

    /** Gives back what no turn needs any more, says when this worker stopped waiting, renews the leases. */
    private void tick() {
        long now = System.nanoTime();
        tenants.values().removeIf(t -> !t.asking && t.inUse == 0 && t.row == 0 && t.refusedAt == 0
                && now - t.lastUsed > FORGET_NANOS && now - t.askedAt > FORGET_NANOS);
        for (Tenant t : tenants.values()) {
            if (!t.limited || t.asking) {
                continue;
            }
            // A worker still waiting asks again every RETRY_MS: only a longer silence means it stopped (clearing its
            // place among the waiting holders sooner would let another worker take the slots back each time).
            boolean stoppedWaiting = t.refusedAt != 0 && now - t.refusedAt > waitingNanos;
            boolean idleSlots = t.row > t.inUse && now - t.askedAt > reuseNanos;
            if (stoppedWaiting || idleSlots) {
                t.refusedAt = 0;
                t.held = Math.min(t.held, t.inUse);
                t.row = t.inUse;
                store.giveBack(t.id, holder, t.inUse, false).onFailure(e -> LOG.warn(
                        "could not give turn slots back, they return when the lease expires [tenant: {}]: {}", t.id,
                        e.getMessage()));
            }
        }
        if (!renewing && now - lastRenew >= TimeUnit.MILLISECONDS.toNanos(timing.renewMs())) {
            renew(now);
        }
    }

    private void renew(long now) {
        renewing = true;
        store.renew(holder, timing.ttlMs()).onComplete(result -> {
            renewing = false;
            if (result.failed()) {
                LOG.warn("could not renew turn-slot leases [holder: {}]: {}", holder, result.cause().getMessage());
                return;
            }
            lastRenew = now;
            Set<String> renewed = result.result();
            for (Tenant t : tenants.values()) {
                if (!t.limited) {
                    continue;
                }
                if (renewed.contains(t.id)) {
                    t.leaseUntil = now + TimeUnit.MILLISECONDS.toNanos(timing.ttlMs() - timing.marginMs());
                } else if (t.row > 0 && !t.asking) {
                    // the lease expired before this renewal (the database was out of reach): ask again before using it
                    t.held = 0;
                    t.leaseUntil = 0;
                }
            }
        });
    }
}
