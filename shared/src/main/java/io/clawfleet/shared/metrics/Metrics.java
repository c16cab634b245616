package io.clawfleet.shared.metrics;

import java.util.function.Supplier;

/**
 * The one small interface Clawfleet code records metrics through. Names are
 * {@code clawfleet.<area>.<measure>}; tags come in key/value pairs (tenant, partition, ...).
 */
public interface Metrics {

    void increment(String name, String... tags);

    /** Adds {@code amount} (0 or more) to a counter. */
    void add(String name, double amount, String... tags);

    void recordMillis(String name, double millis, String... tags);

    void gauge(String name, Supplier<Number> value, String... tags);

    /** Everything registered, in the Prometheus text format. */
    String scrape();
}
