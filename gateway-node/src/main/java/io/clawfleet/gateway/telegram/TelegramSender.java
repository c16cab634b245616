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

    /**
     * Splits text into Telegram-sized parts at the best boundary in the second half of the limit: a paragraph (blank
     * line), else a line break, else the end of a sentence, else a space; a text with none of them is cut at the limit,
     * never inside a surrogate pair. Deterministic, and nothing but the whitespace at a cut is lost.
     */
    static List<String> split(String text) {
        List<String> parts = new ArrayList<>();
        String rest = text.isEmpty() ? " " : text;
        while (rest.length() > TelegramApi.MAX_TEXT) {
            int cut = cut(rest, TelegramApi.MAX_TEXT);
            parts.add(rest.substring(0, cut).stripTrailing());
            rest = rest.substring(cut).stripLeading();
        }
        parts.add(rest);
        return parts;
    }

    /** Where to end the first part of a text longer than {@code limit}. */
    static int cut(String text, int limit) {
        int floor = limit / 2;
        int paragraph = text.lastIndexOf("\n\n", limit - 2);
        if (paragraph >= floor) {
            return paragraph;
        }
        int line = text.lastIndexOf('\n', limit - 1);
        if (line >= floor) {
            return line;
        }
        for (int i = limit - 1; i > floor; i--) {
            char c = text.charAt(i - 1);
            if ((c == '.' || c == '!' || c == '?' || c == '\u3002') && Character.isWhitespace(text.charAt(i))) {
                return i;
            }
        }
        int space = text.lastIndexOf(' ', limit - 1);
        if (space >= floor) {
            return space;
        }
        return Character.isHighSurrogate(text.charAt(limit - 1)) ? limit - 1 : limit;
    }
}
