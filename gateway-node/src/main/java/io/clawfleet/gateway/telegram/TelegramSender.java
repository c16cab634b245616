package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Sends replies to Telegram chats. A Telegram chat key is {@code <bot id>:<telegram chat id>}, so
 * the reply goes out through the bot the message came in on. Long replies are split at Telegram's
 * limit, on line breaks where possible.
 */
public final class TelegramSender implements ChannelSender {

    private static final long BOT_CACHE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private record Cached(ChannelBot bot, long until) {
    }

    private final TelegramApi api;
    private final ChannelBotStore bots;
    private final Map<Long, Cached> cache = new ConcurrentHashMap<>();

    public TelegramSender(TelegramApi api, ChannelBotStore bots) {
        this.api = Objects.requireNonNull(api);
        this.bots = Objects.requireNonNull(bots);
    }

    @Override
    public String channel() {
        return Channels.TELEGRAM;
    }

    @Override
    public Future<Void> send(String tenantId, String chatKey, String text) {
        int colon = chatKey.indexOf(':');
        long botId;
        try {
            botId = Long.parseLong(chatKey.substring(0, Math.max(colon, 0)));
        } catch (NumberFormatException e) {
            return Future.failedFuture(new DeliveryException("not a Telegram chat key: " + chatKey, false, -1));
        }
        String chatId = chatKey.substring(colon + 1);
        return bot(botId).compose(bot -> {
            if (bot == null || !bot.enabled() || !bot.tenantId().equals(tenantId)) {
                return Future.failedFuture(new DeliveryException("the Telegram bot " + botId + " of this chat is no longer registered", false, -1));
            }
            Future<Void> chain = Future.succeededFuture();
            for (String part : split(text)) {
                chain = chain.compose(v -> api.sendMessage(bot.apiUrl(), bot.token(), chatId, part));
            }
            return chain;
        });
    }

    private Future<ChannelBot> bot(long id) {
        Cached cached = cache.get(id);
        if (cached != null && cached.until() - System.nanoTime() > 0) {
            return Future.succeededFuture(cached.bot());
        }
        return bots.get(id).map(found -> {
            ChannelBot bot = found.orElse(null);
            cache.put(id, new Cached(bot, System.nanoTime() + BOT_CACHE_NANOS));
            return bot;
        });
    }

    /** Splits text into Telegram-sized parts, preferring line breaks; deterministic. */
    static List<String> split(String text) {
        List<String> parts = new ArrayList<>();
        String rest = text.isEmpty() ? " " : text;
        while (rest.length() > TelegramApi.MAX_TEXT) {
            int cut = rest.lastIndexOf('\n', TelegramApi.MAX_TEXT);
            if (cut < TelegramApi.MAX_TEXT / 2) {
                cut = TelegramApi.MAX_TEXT;
            }
            parts.add(rest.substring(0, cut));
            rest = rest.substring(cut).stripLeading();
        }
        parts.add(rest);
        return parts;
    }
}
