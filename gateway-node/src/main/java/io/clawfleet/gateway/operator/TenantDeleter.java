package io.clawfleet.gateway.operator;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.store.TenantDeletionStore;
import io.clawfleet.shared.store.TenantDeletionStore.Deletion;
import io.clawfleet.shared.store.TenantDeletionStore.LeaseLostException;
import io.clawfleet.shared.store.TenantDeletionStore.Step;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Carries out tenant deletions on a gateway: takes one that nobody holds, empties the tenant's tables in
 * batches ({@link TenantDeletionStore#deleteBatch}), passes over them again until a whole pass finds
 * nothing (a turn under way may still have written), then deletes the tenant's row. Every batch renews
 * the lease; a gateway that dies leaves the deletion to whichever gateway's scan finds the lease run out.
 *
 * <p>Gateways do it, not schedulers: the operator API that asks for it lives there, every cluster that
 * serves anyone has one, and the work is database statements only.
 */
public final class TenantDeleter {

    private static final Logger LOG = LoggerFactory.getLogger(TenantDeleter.class);
    /** Passes after which the deletion finishes anyway: chats and the tenant's row cascade to any straggler. */
    private static final int MAX_PASSES = 5;

    private final Vertx vertx;
    private final String nodeId;
    private final TenantDeletionStore store;
    private final ClawfleetConfig.TenantDeletion config;
    private final java.util.function.Consumer<String> changed;
    private long timer = -1;
    /** Kicks come from any event loop (HTTP handlers, the scan): one deletion at a time per node. */
    private final AtomicBoolean working = new AtomicBoolean();
    private volatile boolean stopped;

    /** @param changed told the tenant of a finished bot deletion: keys limited to the bot changed, caches must drop it */
    public TenantDeleter(Vertx vertx, String nodeId, TenantDeletionStore store, ClawfleetConfig.TenantDeletion config,
                         java.util.function.Consumer<String> changed) {
        this.changed = Objects.requireNonNull(changed);
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.store = Objects.requireNonNull(store);
        this.config = Objects.requireNonNull(config);
    }

    public void start() {
        stopped = false;
        timer = vertx.setPeriodic(0, config.scanMs(), id -> kick());
    }

    /** Stops after the batch under way; the lease runs out and another gateway carries on. */
    public Future<Void> stop() {
        stopped = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        return Future.succeededFuture();
    }

    /** Looks for a deletion to work on now (a DELETE was just accepted here, or the scan came round). */
    public void kick() {
        if (stopped || !working.compareAndSet(false, true)) {
            return;
        }
        store.claim(nodeId, config.leaseMs())
                .compose(claimed -> claimed.isEmpty() ? Future.succeededFuture(false) : run(claimed.get()).map(true))
                .onComplete(result -> {
                    working.set(false);
                    if (result.failed()) {
                        if (stopped) {
                            LOG.info("tenant deletion left to another gateway: this one stops [node: {}]", nodeId);
                        } else if (result.cause() instanceof LeaseLostException) {
                            LOG.warn("tenant deletion taken over by another node [node: {}]: {}", nodeId,
                                    result.cause().getMessage());
                        } else {
                            LOG.error("tenant deletion interrupted; it resumes on the next scan [node: {}]", nodeId,
                                    result.cause());
                        }
                    } else if (result.result()) {
                        kick(); // there may be another one waiting
                    }
                });
    }

    private Future<Void> run(Deletion deletion) {
        // "tenant deleted [tenant: ..." / "bot deleted [tenant: ..., bot: ...": what operators grep for
        String what = deletion.botId() == null ? "tenant" : "bot";
        String bot = deletion.botId() == null ? "" : ", bot: " + deletion.botId();
        LOG.info("{} deletion started [tenant: {}{}, deletion: {}, node: {}, rows so far: {}]", what, deletion.tenantId(), bot,
                deletion.id(), nodeId, deletion.rowsDeleted());
        return pass(deletion, 1).compose(v -> store.finish(deletion, nodeId)).map(done -> {
            LOG.info("{} deleted [tenant: {}{}, deletion: {}, node: {}, rows: {}, counts: {}]", what, done.tenantId(), bot,
                    done.id(), nodeId, done.rowsDeleted(), done.counts().encode());
            if (done.botId() != null) {
                changed.accept(done.tenantId());
            }
            return null;
        });
    }

    /** One pass over every table; another follows while a pass still found rows. */
    private Future<Void> pass(Deletion deletion, int number) {
        return steps(deletion, 0, 0L).compose(deleted -> {
            if (deleted == 0 || number >= MAX_PASSES) {
                return Future.succeededFuture();
            }
            if (number > 1) {
                LOG.info("tenant deletion found rows written meanwhile [tenant: {}, rows: {}, pass: {}]",
                        deletion.tenantId(), deleted, number);
            }
            return pass(deletion, number + 1);
        });
    }

    private Future<Long> steps(Deletion deletion, int index, long deletedSoFar) {
        if (index == TenantDeletionStore.STEPS.size()) {
            return Future.succeededFuture(deletedSoFar);
        }
        Step step = TenantDeletionStore.STEPS.get(index);
        return table(deletion, step).compose(deleted -> steps(deletion, index + 1, deletedSoFar + deleted));
    }

    /**
     * Batches until one deletes nothing; each batch waits for the one before (one transaction at a time).
     * A loop of callbacks on one promise, not a chain of composed futures: thousands of batches would nest.
     */
    private Future<Long> table(Deletion deletion, Step step) {
        Promise<Long> promise = Promise.promise();
        batch(deletion, step, 0L, promise);
        return promise.future();
    }

    private void batch(Deletion deletion, Step step, long deletedSoFar, Promise<Long> promise) {
        if (stopped) {
            promise.fail(new IllegalStateException("the node is stopping"));
            return;
        }
        store.deleteBatch(deletion, step, nodeId, config.batchSize(), config.leaseMs()).onComplete(result -> {
            if (result.failed()) {
                promise.fail(result.cause());
            } else if (result.result() == 0) {
                promise.complete(deletedSoFar);
            } else if (config.batchPauseMs() > 0) {
                vertx.setTimer(config.batchPauseMs(), id -> batch(deletion, step, deletedSoFar + result.result(), promise));
            } else {
                batch(deletion, step, deletedSoFar + result.result(), promise);
            }
        });
    }
}
