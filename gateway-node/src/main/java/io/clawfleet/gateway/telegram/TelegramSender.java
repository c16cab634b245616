package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.ChannelAccounts;
import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.SendPacer;
import io.clawfleet.gateway.delivery.TextParts;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * Sends replies to Telegram chats. A Telegram chat key is {@code <bot id>:<telegram chat id>}, so
 * the reply goes out through the bot the message came in on. Long replies are split at Telegram's
 * limit at the best boundary, and each part is sent as Telegram HTML made from the model's Markdown, paced to
 * Telegram's send rates ({@link SendPacer}).
 */
public final class TelegramSender implements ChannelSender {

    private final Vertx vertx;
    private final TelegramApi api;
    private final ChannelAccounts accounts;
    private final SendPacer pacer;

    /** @param pacer keeps sends within Telegram's rates (shared with the other senders of this gateway: ids do not collide) */
    public TelegramSender(Vertx vertx, TelegramApi api, ChannelAccounts accounts, SendPacer pacer) {
        this.vertx = Objects.requireNonNull(vertx);
        this.pacer = Objects.requireNonNull(pacer);
        this.api = Objects.requireNonNull(api);
        this.accounts = Objects.requireNonNull(accounts);
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
        return accounts.sendingFor(tenantId, botId, Channels.TELEGRAM).compose(bot -> TextParts.send(split(text), partsSent, partDone,
                part -> pacer.pace(vertx, bot, chatId, SendPacer.Rates.TELEGRAM, "Telegram", () -> sendNow(bot, chatId, part))));
    }

    /**
     * One part, as Telegram HTML ({@link TelegramMarkdown}); when Telegram cannot parse it, as the plain text it came
     * from: the user gets the words either way.
     */
    private Future<Void> sendNow(ChannelBot bot, String chatId, String part) {
        return api.sendMessage(bot.apiUrl(), bot.token(), chatId, TelegramMarkdown.toHtml(part), "HTML").recover(failure -> {
            if (failure instanceof DeliveryException refused && !refused.retryable() && refused.getMessage() != null
                    && refused.getMessage().contains("can't parse entities")) {
                return api.sendMessage(bot.apiUrl(), bot.token(), chatId, part, null);
            }
            return Future.failedFuture(failure);
        });
    }

    /** Splits text into Telegram-sized parts ({@link TextParts}). */
    static List<String> split(String text) {
        return TextParts.split(text, TelegramApi.MAX_TEXT);
    }
}
