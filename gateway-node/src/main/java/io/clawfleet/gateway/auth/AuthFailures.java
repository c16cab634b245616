package io.clawfleet.gateway.auth;

import io.clawfleet.shared.store.AuditStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Refused authentications, counted per source address in windows. A window opens with the first refusal
 * after the last one closed and closes {@code windowMs} to 1.25 {@code windowMs} later. A source that reaches
 * {@code threshold} refusals within a window is audited once, as one {@code auth_failure_burst} row
 * (a cluster event: no tenant), whose count is brought up to date when the window closes. A row per
 * refusal would let anyone without a key fill the audit table. Sources are capped: beyond
 * {@code maxSources} in one window, new ones are counted together as {@value #OTHER_SOURCES}.
 */
public final class AuthFailures {

    /** Refusals from one source within a window that make a burst. */
    public static final int DEFAULT_THRESHOLD = 20;
    public static final long DEFAULT_WINDOW_MS = 60_000;
    static final int MAX_SOURCES = 10_000;
    static final String OTHER_SOURCES = "other";

    private static final Logger LOG = LoggerFactory.getLogger(AuthFailures.class);

    private static final class Counter {
        final AtomicInteger count = new AtomicInteger();
        volatile Future<Long> row;
    }

    private static final class Window {
        final Map<String, Counter> sources = new ConcurrentHashMap<>();
        final AtomicReference<Instant> start = new AtomicReference<>();
    }

    private final Vertx vertx;
    private final AuditStore audit;
    private final int threshold;
    private final long windowMs;
    private final int maxSources;
    private final AtomicReference<Window> window = new AtomicReference<>(new Window());
    private long timer = -1;

    public AuthFailures(Vertx vertx, AuditStore audit) {
        this(vertx, audit, DEFAULT_THRESHOLD, DEFAULT_WINDOW_MS, MAX_SOURCES);
    }

    AuthFailures(Vertx vertx, AuditStore audit, int threshold, long windowMs, int maxSources) {
        this.vertx = Objects.requireNonNull(vertx);
        this.audit = Objects.requireNonNull(audit);
        this.threshold = threshold;
        this.windowMs = windowMs;
        this.maxSources = maxSources;
    }

    public void start() {
        timer = vertx.setPeriodic(Math.max(1, windowMs / 4), id -> {
            Instant start = window.get().start.get();
            if (start != null && !start.plusMillis(windowMs).isAfter(Instant.now())) {
                closeWindow();
            }
        });
    }

    /** Stops the windows; the open one is closed, so a burst's row has its last count. */
    public Future<Void> stop() {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        return closeWindow();
    }

    /** One refused request from {@code source} (an IP address). Costs no database call unless it starts a burst. */
    public void failed(String source) {
        Window current = window.get();
        current.start.compareAndSet(null, Instant.now());
        Map<String, Counter> sources = current.sources;
        String key = sources.containsKey(source) || sources.size() < maxSources ? source : OTHER_SOURCES;
        Counter counter = sources.computeIfAbsent(key, k -> new Counter());
        int count = counter.count.incrementAndGet();
        if (count == threshold) {
            LOG.warn("auth failure burst [source: {}, refusals: {}, window: {} ms]", key, count, windowMs);
            counter.row = audit.append(new AuditStore.NewEvent(null, AuditStore.AUTH_FAILURE_BURST, "denied", null, null,
                            null, null, 401, null, null, null,
                            count + " refused authentications from " + key + " within " + windowMs / 1000 + " s",
                            metadata(key, count, current.start.get()), null))
                    .onFailure(e -> LOG.error("auth failure burst not audited [source: {}]: {}", key, e.getMessage()));
        }
    }

    /** Ends the window: each burst's row gets its final count, and counting starts again from zero. */
    Future<Void> closeWindow() {
        Window closed = window.getAndSet(new Window());
        List<Future<Void>> updates = new ArrayList<>();
        closed.sources.forEach((source, counter) -> {
            int count = counter.count.get();
            if (counter.row != null && count > threshold) {
                updates.add(counter.row.compose(id -> audit.updateClusterMetadata(id, metadata(source, count, closed.start.get())))
                        .onFailure(e -> LOG.error("auth failure burst count not updated [source: {}]: {}", source, e.getMessage())));
            }
        });
        return Future.join(updates).mapEmpty();
    }

    private JsonObject metadata(String source, int count, Instant windowStart) {
        return new JsonObject().put("source", source).put("count", count).put("threshold", threshold)
                .put("windowStart", windowStart.toString()).put("windowMs", windowMs);
    }
}
