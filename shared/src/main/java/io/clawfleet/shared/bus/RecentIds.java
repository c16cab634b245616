package io.clawfleet.shared.bus;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The ids of the signed messages a node accepted lately, so the same message sent again (a replay of a
 * captured call) is refused. An id is kept as long as its signature could still pass the time check;
 * the number kept is capped, and when the cap is full of live ids a new one is refused rather than an
 * old one forgotten. Thread-safe.
 */
public final class RecentIds {

    /** What {@link #remember} found. */
    public enum Outcome { NEW, REPLAY, FULL }

    private final int capacity;
    private final long keepMs;
    private final LongSupplier clockMs;
    /** Id to the time it may be forgotten, in insertion order (which is expiry order: every id is kept as long). */
    private final Map<String, Long> ids = new LinkedHashMap<>();

    /** @param keepMs how long an id is remembered; at least twice the signature window */
    public RecentIds(int capacity, long keepMs, LongSupplier clockMs) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
        this.keepMs = keepMs;
        this.clockMs = Objects.requireNonNull(clockMs);
    }

    /** Remembers {@code id} unless it was seen within {@link #keepMs} or there is no room. */
    public synchronized Outcome remember(String id) {
        long now = clockMs.getAsLong();
        Iterator<Long> oldest = ids.values().iterator();
        while (oldest.hasNext() && oldest.next() <= now) {
            oldest.remove();
        }
        Long until = ids.get(id);
        if (until != null) {
            return Outcome.REPLAY;
        }
        if (ids.size() >= capacity) {
            return Outcome.FULL;
        }
        ids.put(id, now + keepMs);
        return Outcome.NEW;
    }

    public synchronized int size() {
        return ids.size();
    }
}
