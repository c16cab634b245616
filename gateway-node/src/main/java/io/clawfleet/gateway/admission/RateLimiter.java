package io.clawfleet.gateway.admission;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Token buckets by key (a chat, a tenant): {@code permits} per {@code period}, bursts up to
 * {@code permits}. Thread-safe; idle buckets are forgotten so the map stays bounded.
 */
public final class RateLimiter {

    private static final class Bucket {
        double tokens;
        long updatedNanos;

        Bucket(double tokens, long now) {
            this.tokens = tokens;
            this.updatedNanos = now;
        }
    }

    private final double capacity;
    private final double tokensPerNano;
    private final int maxKeys;
    private final LongSupplier clock;
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();

    public RateLimiter(int permits, long period, TimeUnit unit, int maxKeys) {
        this(permits, period, unit, maxKeys, System::nanoTime);
    }

    RateLimiter(int permits, long period, TimeUnit unit, int maxKeys, LongSupplier clock) {
        this.capacity = permits;
        this.tokensPerNano = permits / (double) unit.toNanos(period);
        this.maxKeys = maxKeys;
        this.clock = clock;
    }

    /**
     * Takes one permit for {@code key}.
     *
     * @return 0 when granted, else nanoseconds until a permit will be available
     */
    public long tryAcquire(String key) {
        long now = clock.getAsLong();
        if (buckets.size() >= maxKeys) {
            evictFull(now);
        }
        long[] wait = {0};
        buckets.compute(key, (k, bucket) -> {
            Bucket b = bucket == null ? new Bucket(capacity, now) : bucket;
            b.tokens = Math.min(capacity, b.tokens + (now - b.updatedNanos) * tokensPerNano);
            b.updatedNanos = now;
            if (b.tokens >= 1) {
                b.tokens -= 1;
            } else {
                wait[0] = (long) Math.ceil((1 - b.tokens) / tokensPerNano);
            }
            return b;
        });
        return wait[0];
    }

    /** Buckets that have refilled completely carry no state worth keeping. */
    private void evictFull(long now) {
        buckets.entrySet().removeIf(e -> e.getValue().tokens + (now - e.getValue().updatedNanos) * tokensPerNano >= capacity);
        if (buckets.size() >= maxKeys) {
            // Every key is busy: forget the lot rather than grow without bound (errs towards admitting).
            buckets.clear();
        }
    }

    int size() {
        return buckets.size();
    }
}
