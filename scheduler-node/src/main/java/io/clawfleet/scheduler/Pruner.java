package io.clawfleet.scheduler;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.RetentionStore;
import io.clawfleet.shared.store.RetentionStore.Kind;
import io.clawfleet.shared.store.RetentionStore.Tenant;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Retention on a scheduler node (issue 20): every {@code retention.intervalMs} it walks the tenants and, per tenant and
 * kind, deletes what is past the tenant's days in batches of {@code retention.batchSize}, pausing
 * {@code retention.batchPauseMs} between batches, one statement in flight at a time, so the hot path keeps the
 * database. Then the steps of turns that are over. A pass that fails (the database away) is logged and the next
 * interval starts over; nothing is lost by a pass cut short, it only prunes later.
 */
public final class Pruner {

    private static final Logger LOG = LoggerFactory.getLogger(Pruner.class);

    private final Vertx vertx;
    private final String nodeId;
    private final RetentionStore store;
    private final ClawfleetConfig.Retention config;
    private final Metrics metrics;
    private long timer = -1;
    private boolean busy;
    private volatile boolean stopping;
    private Promise<Void> idle;

    public Pruner(Vertx vertx, String nodeId, RetentionStore store, ClawfleetConfig.Retention config, Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.store = Objects.requireNonNull(store);
        this.config = Objects.requireNonNull(config);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** Prunes every interval from now on; call on the context it is to run on. */
    public void start() {
        timer = vertx.setPeriodic(config.intervalMs(), id -> {
            if (!busy && !stopping) {
                pass();
            }
        });
        LOG.info("retention started [node: {}, every: {} ms, days: inbox {}, replies {}, usage {} (each call's row {}),"
                        + " audit {}, dead letters {}, transcripts {}]", nodeId, config.intervalMs(), config.inboxDays(),
                config.repliesDays(), config.usageDays(), config.usageDetailDays(), config.auditDays(), config.deadLettersDays(),
                config.transcriptDays() == 0 ? "kept" : config.transcriptDays());
    }

    /** Stops; completes when the batch in flight, if any, is over. */
    public Future<Void> stop() {
        stopping = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        if (!busy) {
            return Future.succeededFuture();
        }
        idle = Promise.promise();
        return idle.future();
    }

    /** One pass over every tenant and kind; completes with the rows pruned per kind. Not concurrent with another. */
    public Future<Map<Kind, Long>> pass() {
        busy = true;
        long started = System.nanoTime();
        Map<Kind, Long> pruned = new EnumMap<>(Kind.class);
        Future<Map<Kind, Long>> done = store.tenants()
                .compose(tenants -> tenant(tenants, 0, pruned))
                .compose(v -> steps(pruned))
                .map(v -> pruned);
        return done.andThen(result -> {
            busy = false;
            long ms = (System.nanoTime() - started) / 1_000_000;
            if (result.succeeded()) {
                long total = pruned.values().stream().mapToLong(Long::longValue).sum();
                if (total > 0) {
                    LOG.info("retention pass pruned {} rows in {} ms [node: {}, per kind: {}]", total, ms, nodeId, pruned);
                }
            } else if (!stopping) {
                LOG.warn("retention pass failed after {} ms, next in {} ms [node: {}]: {}", ms, config.intervalMs(), nodeId,
                        result.cause().toString());
            }
            if (idle != null) {
                idle.tryComplete();
            }
        });
    }

    private Future<Void> tenant(List<Tenant> tenants, int index, Map<Kind, Long> pruned) {
        if (index == tenants.size() || stopping) {
            return Future.succeededFuture();
        }
        Tenant tenant = tenants.get(index);
        Future<Void> chain = Future.succeededFuture();
        for (Kind kind : Kind.values()) {
            // Rows of no tenant exist only in the audit (a deleted tenant's tombstone).
            if (tenant.id() != null || kind == Kind.AUDIT) {
                chain = chain.compose(v -> batches(kind, tenant, pruned));
            }
        }
        return chain.compose(v -> tenant(tenants, index + 1, pruned));
    }

    private Future<Void> batches(Kind kind, Tenant tenant, Map<Kind, Long> pruned) {
        if (stopping) {
            return Future.succeededFuture();
        }
        double days = tenant.days(kind, config);
        if (days == 0) {
            return Future.succeededFuture(); // kept for good (transcripts, unless the node or the tenant says otherwise)
        }
        return store.pruneBatch(kind, tenant.id(), days, config.batchSize()).compose(n -> {
            if (n > 0) {
                pruned.merge(kind, (long) n, Long::sum);
                metrics.add("clawfleet.retention.pruned", n, "table", kind.table(), "tenant",
                        tenant.id() == null ? "" : tenant.id());
            }
            return n < config.batchSize() ? Future.succeededFuture() : pause().compose(v -> batches(kind, tenant, pruned));
        });
    }

    private Future<Void> steps(Map<Kind, Long> pruned) {
        if (stopping) {
            return Future.succeededFuture();
        }
        return store.pruneOrphanSteps(config.inboxDays(), config.batchSize()).compose(n -> {
            if (n > 0) {
                metrics.add("clawfleet.retention.pruned", n, "table", "turn_steps", "tenant", "");
            }
            return n < config.batchSize() ? Future.succeededFuture() : pause().compose(v -> steps(pruned));
        });
    }

    private Future<Void> pause() {
        if (config.batchPauseMs() == 0) {
            return Future.succeededFuture();
        }
        Promise<Void> paused = Promise.promise();
        vertx.setTimer(config.batchPauseMs(), id -> paused.complete());
        return paused.future();
    }
}
