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
 * What a worker knows of each tenant's settings (autonomy level, memory scope), cached so a turn costs no
 * extra round trip: dropped when the gateway announces a change, and re-read after a minute anyway.
 * Event-loop confined.
 */
public final class TenantSettings {

    private static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** One tenant's effective settings. */
    public record Settings(Autonomy autonomy, String memoryScope) {
    }

    private record Entry(Settings settings, long loadedAt) {
    }

    private final Vertx vertx;
    private final TenantStore tenants;
    private final Settings defaults;
    private final Map<String, Entry> cache = new HashMap<>();

    public TenantSettings(Vertx vertx, TenantStore tenants, Settings defaults) {
        this.vertx = Objects.requireNonNull(vertx);
        this.tenants = Objects.requireNonNull(tenants);
        this.defaults = Objects.requireNonNull(defaults);
    }

    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.TENANT_CHANGED,
                (Message<TenantChanged> message) -> cache.remove(message.body().tenantId())).mapEmpty();
    }

    public Future<Autonomy> autonomy(String tenantId) {
        return settings(tenantId).map(Settings::autonomy);
    }

    public Future<Settings> settings(String tenantId) {
        Entry entry = cache.get(tenantId);
        if (entry != null && System.nanoTime() - entry.loadedAt() < TTL_NANOS) {
            return Future.succeededFuture(entry.settings());
        }
        return tenants.settings(tenantId).map(stored -> {
            Settings settings = new Settings(autonomy(stored), memoryScope(stored));
            cache.put(tenantId, new Entry(settings, System.nanoTime()));
            return settings;
        });
    }

    private Autonomy autonomy(JsonObject settings) {
        if (settings.getValue("autonomy") instanceof String text) {
            try {
                return Autonomy.parse(text);
            } catch (IllegalArgumentException e) {
                return defaults.autonomy();
            }
        }
        return defaults.autonomy();
    }

    private String memoryScope(JsonObject settings) {
        return settings.getValue("memoryScope") instanceof String scope && (scope.equals("chat") || scope.equals("global"))
                ? scope : defaults.memoryScope();
    }
}
