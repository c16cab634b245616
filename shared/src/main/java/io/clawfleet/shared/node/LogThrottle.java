package io.clawfleet.shared.node;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Lets one warning through per interval and counts the rest, for failures that repeat once per request while a
 * dependency is down (a PostgreSQL outage under load wrote 4,477 identical lines in a minute of the chaos run).
 */
public final class LogThrottle {

    private final long intervalNanos;
    private final AtomicLong nextAt = new AtomicLong(Long.MIN_VALUE);
    private final AtomicInteger suppressed = new AtomicInteger();

    public LogThrottle(long interval, TimeUnit unit) {
        this.intervalNanos = unit.toNanos(interval);
    }

    /**
     * -1 when this occurrence should not be logged; otherwise how many were held back since the last one logged
     * (to put in the line).
     */
    public int admit() {
        return admit(System.nanoTime());
    }

    int admit(long nowNanos) {
        long next = nextAt.get();
        if (next != Long.MIN_VALUE && nowNanos - next < 0 || !nextAt.compareAndSet(next, nowNanos + intervalNanos)) {
            suppressed.incrementAndGet();
            return -1;
        }
        return suppressed.getAndSet(0);
    }
}
