package io.clawfleet.worker.tools;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.store.TenantLimits;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A tenant's tool time ({@code toolSecondsPerDay}, issue 14) before each tool run. What its tools ran today is read from
 * the audit rows each run leaves ({@link UsageStore#toolTimeToday}: one statement, summed only for a tenant with the
 * limit) and kept per worker for 5 seconds, plus what the runs on this worker took since; a tenant without the limit
 * is read once a minute and costs a map lookup per run. A change of the tenant ({@link Addresses#TENANT_CHANGED})
 * drops what is kept, so a new limit holds at once. The limit holds to within the runs under way when it is reached
 * and what other workers' runs take in those 5 seconds.
 */
public final class ToolTimeQuota implements ToolRunner.Budget {

    private static final Logger LOG = LoggerFactory.getLogger(ToolTimeQuota.class);
    /** How long a tenant with the limit has its use kept (5 s), and one without its absence (1 min). */
    private static final long FRESH_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final long UNLIMITED_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final int MAX_CACHED = 100_000;

    /** What is known of a tenant: its limit and use as read, plus what ran here since ({@code used}). */
    private record Entry(UsageStore.ToolTime read, AtomicLong used, long loadedAt) {

        boolean fresh(long nanos, Instant wall) {
            long ttl = read.limitSeconds() == null ? UNLIMITED_NANOS : FRESH_NANOS;
            return nanos - loadedAt < ttl && wall.isBefore(read.dayEnd());
        }
    }

    private final Vertx vertx;
    private final UsageStore store;
    private final Clock clock;
    private final Map<String, Entry> tenants = new ConcurrentHashMap<>();
    private final Map<String, Future<Entry>> loading = new ConcurrentHashMap<>();

    public ToolTimeQuota(Vertx vertx, UsageStore store, Clock clock) {
        this.vertx = Objects.requireNonNull(vertx);
        this.store = Objects.requireNonNull(store);
        this.clock = Objects.requireNonNull(clock);
    }

    /** Listens for changes of tenants (their limits): what is kept of a changed tenant is read again. */
    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.TENANT_CHANGED,
                (Message<TenantChanged> message) -> tenants.remove(message.body().tenantId())).mapEmpty();
    }

    @Override
    public Future<String> refusal(String tenantId) {
        Entry entry = tenants.get(tenantId);
        Instant wall = clock.instant();
        if (entry != null && entry.fresh(System.nanoTime(), wall)) {
            return Future.succeededFuture(refusal(entry));
        }
        return load(tenantId, wall).map(this::refusal).recover(e -> {
            // Tools are not stopped for want of a sum: the limit holds again once the database answers.
            LOG.warn("tool time not read, the tool runs [tenant: {}]: {}", tenantId, e.getMessage());
            return Future.succeededFuture(entry == null ? null : refusal(entry));
        });
    }

    @Override
    public void spent(String tenantId, long millis) {
        Entry entry = tenants.get(tenantId);
        if (entry != null && entry.read().limitSeconds() != null) {
            entry.used().addAndGet(millis);
        }
    }

    /** Drops what this worker knows of a tenant: its next tool run reads it again. */
    public void forget(String tenantId) {
        tenants.remove(tenantId);
    }

    private Future<Entry> load(String tenantId, Instant wall) {
        // Many tool calls of one tenant at once read its time once. The read is started outside the map's update:
        // its future may complete at once, and its callback changes the map.
        Promise<Entry> loaded = Promise.promise();
        Future<Entry> pending = loading.putIfAbsent(tenantId, loaded.future());
        if (pending != null) {
            return pending;
        }
        store.toolTimeToday(tenantId, wall)
                .map(read -> new Entry(read, new AtomicLong(read.usedMillis()), System.nanoTime()))
                .onComplete(result -> {
                    loading.remove(tenantId, loaded.future());
                    if (result.succeeded()) {
                        if (tenants.size() >= MAX_CACHED) {
                            tenants.clear();
                        }
                        tenants.put(tenantId, result.result());
                    }
                    loaded.handle(result);
                });
        return loaded.future();
    }

    private String refusal(Entry entry) {
        Long limit = entry.read().limitSeconds();
        long used = entry.used().get();
        if (limit == null || used < limit * 1000) {
            return null;
        }
        return message(used, limit, entry.read().dayEnd());
    }

    /** What the model is told of a call refused for the tenant's tool time. */
    static String message(long usedMillis, long limitSeconds, Instant dayEnd) {
        return "this tenant's tools ran " + String.format(Locale.ROOT, "%.3f", usedMillis / 1000.0) + " s today, its limit '"
                + TenantLimits.TOOL_SECONDS_PER_DAY + "' is " + limitSeconds + " s; tools run again after " + dayEnd
                + " (UTC midnight) or once the operator raises the limit. The tool was not run: answer without it";
    }
}
