package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
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
 * What a worker knows of each bot's settings (autonomy level, memory scope, default model role), cached so a turn costs no
 * extra round trip: dropped when the gateway announces a change, and re-read after a minute anyway.
 * Event-loop confined.
 */
public final class TenantSettings {

    private static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    /**
     * One bot's effective settings.
     *
     * @param defaultRole the model role of messages that name none; null for the cluster's default
     */
    public record Settings(Autonomy autonomy, String memoryScope, String defaultRole) {

        public Settings(Autonomy autonomy, String memoryScope) {
            this(autonomy, memoryScope, null);
        }
    }

    private record Entry(Settings settings, long loadedAt) {
    }

    private final Vertx vertx;
    private final BotStore bots;
    private final Settings defaults;
    private final Map<BotRef, Entry> cache = new HashMap<>();

    public TenantSettings(Vertx vertx, BotStore bots, Settings defaults) {
        this.vertx = Objects.requireNonNull(vertx);
        this.bots = Objects.requireNonNull(bots);
        this.defaults = Objects.requireNonNull(defaults);
    }

    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.TENANT_CHANGED,
                (Message<TenantChanged> message) -> cache.keySet().removeIf(bot -> bot.tenantId().equals(message.body().tenantId())))
                .mapEmpty();
    }

    public Future<Autonomy> autonomy(BotRef bot) {
        return settings(bot).map(Settings::autonomy);
    }

    public Future<Settings> settings(BotRef bot) {
        Entry entry = cache.get(bot);
        if (entry != null && System.nanoTime() - entry.loadedAt() < TTL_NANOS) {
            return Future.succeededFuture(entry.settings());
        }
        return bots.settings(bot).map(stored -> {
            Settings settings = new Settings(autonomy(stored), memoryScope(stored),
                    stored.getValue("defaultRole") instanceof String role ? role : null);
            cache.put(bot, new Entry(settings, System.nanoTime()));
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
