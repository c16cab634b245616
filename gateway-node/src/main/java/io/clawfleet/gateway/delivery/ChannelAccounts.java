package io.clawfleet.gateway.delivery;

import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The channel accounts replies go out through, read at most every 30 seconds per account: a reply's send does not
 * cost a database read. A removed or disabled account is seen within that time.
 */
public final class ChannelAccounts {

    private static final long CACHE_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int CACHE_LIMIT = 100_000;

    private record Cached(ChannelBot bot, long until) {
    }

    private final ChannelBotStore bots;
    private final Map<Long, Cached> cache = new ConcurrentHashMap<>();

    public ChannelAccounts(ChannelBotStore bots) {
        this.bots = Objects.requireNonNull(bots);
    }

    /** The account with this id, or null when there is none. */
    public Future<ChannelBot> get(long id) {
        Cached cached = cache.get(id);
        if (cached != null && cached.until() - System.nanoTime() > 0) {
            return Future.succeededFuture(cached.bot());
        }
        return bots.get(id).map(found -> {
            ChannelBot bot = found.orElse(null);
            if (cache.size() >= CACHE_LIMIT) {
                cache.clear();
            }
            cache.put(id, new Cached(bot, System.nanoTime() + CACHE_NANOS));
            return bot;
        });
    }

    /**
     * The account a reply of {@code tenantId} names, when it may still send: registered, enabled, and the tenant's
     * (a chat key is the tenant's own, so an id of another tenant's account sends nothing).
     */
    public Future<ChannelBot> sendingFor(String tenantId, long id, String channel) {
        return get(id).compose(bot -> bot == null || !bot.enabled() || !bot.tenantId().equals(tenantId) || !bot.channel().equals(channel)
                ? Future.failedFuture(new DeliveryException("the " + channel + " account " + id + " of this chat is no longer registered",
                        false, -1))
                : Future.succeededFuture(bot));
    }
}
