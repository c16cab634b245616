package io.clawfleet.shared.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** {@link Metrics} on a Micrometer Prometheus registry shared with Vert.x's own metrics. */
public final class MicrometerMetrics implements Metrics {

    private final PrometheusMeterRegistry registry;
    private final MetricLabels labels;
    /** The values of gauges whose tenant or bot folded into {@link MetricLabels#OTHER}: that gauge sums them. */
    private final Map<List<String>, List<Supplier<Number>>> folded = new ConcurrentHashMap<>();

    /** Unbounded tenant and bot labels (tests). */
    public MicrometerMetrics(String nodeId) {
        this(nodeId, MetricLabels.unbounded());
    }

    public MicrometerMetrics(String nodeId, MetricLabels labels) {
        this.labels = Objects.requireNonNull(labels);
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("node", nodeId);
        // What a leak grows: the old generation right after its last collection (all heap pools where no pool is
        // old, as with Epsilon). Read from the pools' own collection usage, so no GC listener to unregister.
        Gauge.builder("clawfleet.jvm.heap.after.gc", MicrometerMetrics::heapAfterGc).baseUnit("bytes").register(registry);
        Gauge.builder("clawfleet.jvm.threads", () -> java.lang.management.ManagementFactory.getThreadMXBean().getThreadCount())
                .register(registry);
    }

    private static double heapAfterGc() {
        long old = 0;
        long all = 0;
        boolean sawOld = false;
        for (var pool : java.lang.management.ManagementFactory.getMemoryPoolMXBeans()) {
            var usage = pool.getCollectionUsage();
            if (pool.getType() != java.lang.management.MemoryType.HEAP || usage == null) {
                continue;
            }
            all += usage.getUsed();
            if (pool.getName().contains("Old") || pool.getName().contains("Tenured")) {
                old += usage.getUsed();
                sawOld = true;
            }
        }
        return sawOld ? old : all;
    }

    /** Lets Vert.x report its HTTP, event-bus and pool metrics into the same registry. */
    public VertxMetricsFactory vertxMetricsFactory() {
        return new MicrometerMetricsFactory(registry);
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    @Override
    public void increment(String name, String... tags) {
        Counter.builder(name).tags(labels.fold(tags)).register(registry).increment();
    }

    @Override
    public void add(String name, double amount, String... tags) {
        Counter.builder(name).tags(labels.fold(tags)).register(registry).increment(amount);
    }

    @Override
    public void recordMillis(String name, double millis, String... tags) {
        Timer.builder(name).tags(labels.fold(tags))
                .publishPercentiles(0.5, 0.9, 0.99)
                .distributionStatisticExpiry(Duration.ofMinutes(1))
                .register(registry)
                .record((long) (millis * 1_000_000), TimeUnit.NANOSECONDS);
    }

    @Override
    public void gauge(String name, Supplier<Number> value, String... tags) {
        String[] kept = labels.fold(tags);
        if (kept == tags) {
            Gauge.builder(name, value).tags(tags).register(registry);
            return;
        }
        List<String> key = new ArrayList<>(List.of(kept));
        key.addFirst(name);
        List<Supplier<Number>> values = folded.computeIfAbsent(key, k -> {
            List<Supplier<Number>> all = new CopyOnWriteArrayList<>();
            Gauge.builder(name, () -> all.stream().mapToDouble(v -> v.get().doubleValue()).sum()).tags(kept).register(registry);
            return all;
        });
        values.add(value);
    }

    @Override
    public String scrape() {
        return registry.scrape();
    }
}
