package io.clawfleet.shared.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsFactory;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** {@link Metrics} on a Micrometer Prometheus registry shared with Vert.x's own metrics. */
public final class MicrometerMetrics implements Metrics {

    private final PrometheusMeterRegistry registry;

    public MicrometerMetrics(String nodeId) {
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("node", nodeId);
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
        Counter.builder(name).tags(tags).register(registry).increment();
    }

    @Override
    public void add(String name, double amount, String... tags) {
        Counter.builder(name).tags(tags).register(registry).increment(amount);
    }

    @Override
    public void recordMillis(String name, double millis, String... tags) {
        Timer.builder(name).tags(tags)
                .publishPercentiles(0.5, 0.9, 0.99)
                .distributionStatisticExpiry(Duration.ofMinutes(1))
                .register(registry)
                .record((long) (millis * 1_000_000), TimeUnit.NANOSECONDS);
    }

    @Override
    public void gauge(String name, Supplier<Number> value, String... tags) {
        Gauge.builder(name, value).tags(tags).register(registry);
    }

    @Override
    public String scrape() {
        return registry.scrape();
    }
}
