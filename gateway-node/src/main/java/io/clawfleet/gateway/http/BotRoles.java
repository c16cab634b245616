package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Future;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The model roles a bot's messages may ask for: its own providers' roles when it has some
 * ({@code PUT /api/v1/bots/{botId}/providers}), else the cluster's. Read once per tenant (one query, no key opened)
 * and kept for 30 seconds, or until the tenant changes on any gateway ({@link #forget}).
 */
public final class BotRoles {

    private static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int MAX_CACHED = 100_000;

    private record Entry(Map<String, Set<String>> own, long until) {
    }

    private final BotProviderStore providers;
    private final List<String> operatorRoles;
    private final Map<String, Entry> tenants = new ConcurrentHashMap<>();
    private final AtomicLong forgets = new AtomicLong();

    /** @param operatorRoles the cluster's roles ("default" first) */
    public BotRoles(BotProviderStore providers, List<String> operatorRoles) {
        this.providers = Objects.requireNonNull(providers);
        this.operatorRoles = List.copyOf(operatorRoles);
    }

    /** The roles the bot's messages may name, "default" among them. */
    public Future<Set<String>> roles(BotRef bot) {
        return own(bot.tenantId()).map(own -> own.getOrDefault(bot.botId(), new java.util.LinkedHashSet<>(operatorRoles)));
    }

    /** The roles of the tenant's bots that have providers of their own, by bot. */
    public Future<Map<String, Set<String>>> own(String tenantId) {
        long now = System.nanoTime();
        Entry entry = tenants.get(tenantId);
        if (entry != null && entry.until() - now > 0) {
            return Future.succeededFuture(entry.own());
        }
        long generation = forgets.get();
        return providers.roles(tenantId).map(own -> {
            if (forgets.get() == generation) {
                if (tenants.size() >= MAX_CACHED) {
                    tenants.clear();
                }
                tenants.put(tenantId, new Entry(Map.copyOf(own), now + TTL_NANOS));
            }
            return own;
        });
    }

    /** The cluster's roles. */
    public List<String> operatorRoles() {
        return operatorRoles;
    }

    /** Drops what is kept of a tenant (its bots' providers changed). */
    public void forget(String tenantId) {
        forgets.incrementAndGet();
        tenants.remove(tenantId);
    }
}
