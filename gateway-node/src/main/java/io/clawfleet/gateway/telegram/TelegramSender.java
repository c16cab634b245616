package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Sends replies to Telegram chats. A Telegram chat key is {@code <bot id>:<telegram chat id>}, so
 * the reply goes out through the bot the message came in on. Long replies are split at Telegram's
 * limit at the best boundary, and each part is sent as Telegram HTML made from the model's Markdown, paced to
 * Telegram's send rates ({@link SendPacer}).
 */
public final class TelegramSender implements ChannelSender {

    private static final long BOT_CACHE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private record Cached(ChannelBot bot, long until) {
    }

    private final Vertx vertx;
    private final TelegramApi api;
    private final ChannelBotStore bots;
    private final SendPacer pacer;
    private final Map<Long, Cached> cache = new ConcurrentHashMap<>();

    /** @param claimMs how long a delivery claim holds ({@code delivery.claimMs}): pacing never waits past a third of it */
    public TelegramSender(Vertx vertx, TelegramApi api, ChannelBotStore bots, long claimMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.pacer = new SendPacer(claimMs);
        this.api = Objects.requireNonNull(api);
        this.bots = Objects.requireNonNull(bots);
    }

    @Override
    public String channel() {
        return Channels.TELEGRAM;
    }

    @Override
    public Future<Void> send(String tenantId, String chatKey, String text, int partsSent, IntFunction<Future<?>> partDone) {
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
            List<String> parts = split(text);
            Future<Void> chain = Future.succeededFuture();
            for (int i = Math.min(partsSent, parts.size()); i < parts.size(); i++) {
                String part = parts.get(i);
                int done = i + 1;
                chain = chain.compose(v -> sendPart(bot, chatId, part))
                        // a one-part reply is recorded as delivered by the caller; a longer one part by part
                        .compose(v -> parts.size() == 1 ? Future.<Void>succeededFuture() : partDone.apply(done).<Void>mapEmpty());
            }
            return chain;
        });
    }

    /**
     * One part, as Telegram HTML ({@link TelegramMarkdown}); when Telegram cannot parse it, as the plain text it came
     * from: the user gets the words either way.
     */
    private Future<Void> sendPart(ChannelBot bot, String chatId, String part) {
        long wait = pacer.reserve(bot.id(), chatId, System.nanoTime());
        if (wait < 0) {
            return Future.failedFuture(DeliveryException.paced("held back: this chat or bot is at Telegram's send rate",
                    pacer.maxWaitNanos() / 1_000_000));
        }
        if (wait > 0) {
            Promise<Void> due = Promise.promise();
            vertx.setTimer(Math.max(1, wait / 1_000_000), id -> due.complete());
            return due.future().compose(v -> sendNow(bot, chatId, part));
        }
        return sendNow(bot, chatId, part);
    }

    private Future<Void> sendNow(ChannelBot bot, String chatId, String part) {
        return api.sendMessage(bot.apiUrl(), bot.token(), chatId, TelegramMarkdown.toHtml(part), "HTML").recover(failure -> {
            if (failure instanceof DeliveryException refused && !refused.retryable() && refused.getMessage() != null
                    && refused.getMessage().contains("can't parse entities")) {
                return api.sendMessage(bot.apiUrl(), bot.token(), chatId, part, null);
            }
            return Future.failedFuture(failure);
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
     * never inside a surrogate pair. A code block cut in two is closed at the end of one part and opened again at the
     * start of the next (the limit leaves room for that). Deterministic; only the whitespace at a cut is lost.
     */
    static List<String> split(String text) {
        List<String> parts = new ArrayList<>();
        String rest = text.isEmpty() ? " " : text;
        String reopen = "";
        while (reopen.length() + rest.length() > TelegramApi.MAX_TEXT) {
            int cut = cut(rest, TelegramApi.MAX_TEXT - FENCE_ROOM);
            String part = reopen + rest.substring(0, cut).stripTrailing();
            rest = rest.substring(cut).stripLeading();
            String open = openFence(part);
            reopen = open == null ? "" : open + "\n";
            parts.add(open == null ? part : part + "\n```");
        }
        parts.add(reopen + rest);
        return parts;
    }

    /** Room a part keeps to close a code block and open it again ({@code \n```} and {@code ```lang\n}). */
    private static final int FENCE_ROOM = 40;

    /** The opening fence line ({@code ```lang}) of a code block the text leaves open, or null. */
    private static String openFence(String text) {
        String open = null;
        for (String line : text.split("\n")) {
            if (line.strip().startsWith("```")) {
                open = open == null ? line.strip() : null;
            }
        }
        return open == null ? null : open.substring(0, Math.min(open.length(), FENCE_ROOM - 5));
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
