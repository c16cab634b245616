package io.clawfleet.scheduler;

import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.FleetStatsStore;
import io.clawfleet.shared.store.FleetStatsStore.FleetStats;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Gauges of the whole cluster, read from PostgreSQL every {@code scheduler.fleetStatsMs} (15 s) by each scheduler node: the lag of
 * each partition (how long its oldest unprocessed message has waited), the largest lag, the age of the oldest reply
 * not yet delivered to its channel, partitions no live worker holds, and dead letters not replayed per tenant and
 * kind. Facts of the database rather than of a node: every scheduler node reports the same values (take the
 * {@code max} across them). The alert rules in deploy/observability use them.
 */
public final class FleetGauges {

    private static final Logger LOG = LoggerFactory.getLogger(FleetGauges.class);
    private static final FleetStats NONE = new FleetStats(Map.of(), 0, 0, 0, Map.of());

    private final Vertx vertx;
    private final FleetStatsStore store;
    private final Metrics metrics;
    private final Set<Integer> partitionGauges = ConcurrentHashMap.newKeySet();
    private final Set<List<String>> deadLetterGauges = ConcurrentHashMap.newKeySet();
    private volatile FleetStats last = NONE;
    private boolean failing;
    private final long everyMs;
    private long timer = -1;

    public FleetGauges(Vertx vertx, FleetStatsStore store, Metrics metrics, long everyMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.everyMs = everyMs;
        this.store = Objects.requireNonNull(store);
        this.metrics = Objects.requireNonNull(metrics);
    }

    public void start() {
        metrics.gauge("clawfleet.partition.lag.max.seconds",
                () -> last.partitionLagSeconds().values().stream().mapToDouble(Double::doubleValue).max().orElse(0));
        metrics.gauge("clawfleet.outbox.oldest.seconds", () -> last.outboxOldestSeconds());
        metrics.gauge("clawfleet.partitions.unowned", () -> last.partitionsUnowned());
        refresh();
        timer = vertx.setPeriodic(everyMs, id -> refresh());
    }

    public void stop() {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
    }

    /** Reads the figures again; the gauges keep the last ones while the database does not answer. */
    Future<FleetStats> refresh() {
        return store.read().onSuccess(stats -> {
            for (int p = 0; p < stats.partitions(); p++) {
                int partition = p;
                if (partitionGauges.add(partition)) {
                    metrics.gauge("clawfleet.partition.lag.seconds",
                            () -> last.partitionLagSeconds().getOrDefault(partition, 0.0), "partition", Integer.toString(partition));
                }
            }
            // The most letters first: when tenant labels run out, the ones with most to look at keep theirs.
            List<List<String>> keys = stats.deadLetters().entrySet().stream()
                    .sorted(Map.Entry.<List<String>, Long>comparingByValue().reversed()
                            .thenComparing(e -> String.join("/", e.getKey())))
                    .map(Map.Entry::getKey).toList();
            for (List<String> key : keys) {
                if (deadLetterGauges.add(key)) {
                    metrics.gauge("clawfleet.dead_letters.open", () -> last.deadLetters().getOrDefault(key, 0L),
                            "tenant", key.get(0), "kind", key.get(1));
                }
            }
            last = stats;
            if (failing) {
                LOG.info("fleet gauges read again");
                failing = false;
            }
        }).onFailure(e -> {
            if (!failing) {
                LOG.warn("fleet gauges not read; they keep their last values: {}", e.getMessage());
                failing = true;
            }
        });
    }
}
