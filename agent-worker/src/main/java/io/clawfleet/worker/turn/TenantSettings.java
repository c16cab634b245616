package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.worker.tools.Autonomy;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonObject;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * What a worker knows of each tenant's settings (its autonomy level), cached so a turn costs no
 * extra round trip: dropped when the gateway announces a change, and re-read after a minute anyway.
 * Event-loop confined.
 */
public final class TenantSettings {

    private static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private record Entry(Autonomy autonomy, long loadedAt) {
    }

    private final Vertx vertx;
    private final TenantStore tenants;
    private final Autonomy defaultAutonomy;
    private final Map<String, Entry> cache = new HashMap<>();

    public TenantSettings(Vertx vertx, TenantStore tenants, Autonomy defaultAutonomy) {
        this.vertx = Objects.requireNonNull(vertx);
        this.tenants = Objects.requireNonNull(tenants);
        this.defaultAutonomy = Objects.requireNonNull(defaultAutonomy);
    }

    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.TENANT_CHANGED,
                (Message<TenantChanged> message) -> cache.remove(message.body().tenantId())).mapEmpty();
    }

    public Future<Autonomy> autonomy(String tenantId) {
        Entry entry = cache.get(tenantId);
        if (entry != null && System.nanoTime() - entry.loadedAt() < TTL_NANOS) {
            return Future.succeededFuture(entry.autonomy());
        }
        return tenants.settings(tenantId).map(settings -> {
            Autonomy autonomy = parse(settings);
            cache.put(tenantId, new Entry(autonomy, System.nanoTime()));
            return autonomy;
        });
    }

    private Autonomy parse(JsonObject settings) {
        Object value = settings.getValue("autonomy");
        if (value instanceof String text) {
            try {
                return Autonomy.parse(text);
            } catch (IllegalArgumentException e) {
                return defaultAutonomy;
            }
        }
        return defaultAutonomy;
    }
}
