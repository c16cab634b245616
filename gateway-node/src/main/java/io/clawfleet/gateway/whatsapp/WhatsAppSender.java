package io.clawfleet.gateway.whatsapp;

import io.clawfleet.gateway.delivery.ChannelAccounts;
import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.SendPacer;
import io.clawfleet.gateway.delivery.TextParts;
import io.clawfleet.shared.message.Channels;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.util.Objects;
import java.util.function.IntFunction;

/**
 * Sends replies to WhatsApp users from the business number the message came to. A WhatsApp chat key is
 * {@code <account id>:<user's WhatsApp id>}. Long replies are cut at {@link WhatsAppApi#MAX_TEXT} ({@link TextParts}),
 * each part in WhatsApp's marks ({@link WhatsAppFormat}), paced to WhatsApp's pair rate and the number's throughput
 * ({@link SendPacer.Rates#WHATSAPP}).
 */
public final class WhatsAppSender implements ChannelSender {

    private final Vertx vertx;
    private final WhatsAppApi api;
    private final ChannelAccounts accounts;
    private final SendPacer pacer;

    public WhatsAppSender(Vertx vertx, WhatsAppApi api, ChannelAccounts accounts, SendPacer pacer) {
        this.vertx = Objects.requireNonNull(vertx);
        this.api = Objects.requireNonNull(api);
        this.accounts = Objects.requireNonNull(accounts);
        this.pacer = Objects.requireNonNull(pacer);
    }

    @Override
    public String channel() {
        return Channels.WHATSAPP;
    }

    @Override
    public Future<Void> send(String tenantId, String chatKey, String text, int partsSent, IntFunction<Future<?>> partDone) {
        int colon = chatKey.indexOf(':');
        long accountId;
        try {
            accountId = Long.parseLong(chatKey.substring(0, Math.max(colon, 0)));
        } catch (NumberFormatException e) {
            return Future.failedFuture(new DeliveryException("not a WhatsApp chat key: " + chatKey, false, -1));
        }
        String to = chatKey.substring(colon + 1);
        return accounts.sendingFor(tenantId, accountId, Channels.WHATSAPP).compose(bot -> TextParts.send(
                TextParts.split(text, WhatsAppApi.MAX_TEXT), partsSent, partDone,
                part -> pacer.pace(vertx, bot, to, SendPacer.Rates.WHATSAPP, "WhatsApp",
                        () -> api.sendText(bot.apiUrl(), bot.token(), bot.accountUserId(), to, WhatsAppFormat.fromMarkdown(part)))));
    }
}
