package io.clawfleet.gateway.discord;

import io.clawfleet.gateway.delivery.ChannelAccounts;
import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.TextParts;
import io.clawfleet.shared.message.Channels;
import io.vertx.core.Future;

import java.util.Objects;
import java.util.function.IntFunction;

/**
 * Sends replies to Discord channels with the REST API. A Discord chat key is {@code <account>:[g]<channel>}
 * ({@link DiscordEvents}): the reply goes out through the bot the message came in on, to the channel (or thread) it came
 * from. Long replies are cut under {@link DiscordApi#MAX_TEXT} at the best boundary ({@link TextParts}); Discord reads
 * the model's Markdown as it is. Discord's per-route buckets pace the sends ({@link DiscordRateLimits}); a {@code 429}
 * is retried after its {@code retry_after} by the delivery, a refusal (unknown channel, no access) dead-letters.
 */
public final class DiscordSender implements ChannelSender {

    private final DiscordApi api;
    private final ChannelAccounts accounts;

    public DiscordSender(DiscordApi api, ChannelAccounts accounts) {
        this.api = Objects.requireNonNull(api);
        this.accounts = Objects.requireNonNull(accounts);
    }

    @Override
    public String channel() {
        return Channels.DISCORD;
    }

    @Override
    public Future<Void> send(String tenantId, String chatKey, String text, int partsSent, IntFunction<Future<?>> partDone) {
        String channel = DiscordEvents.channelOf(chatKey);
        long account = DiscordEvents.accountOf(chatKey);
        if (channel == null || account < 0) {
            return Future.failedFuture(new DeliveryException("not a Discord chat key: " + chatKey, false, -1));
        }
        return accounts.sendingFor(tenantId, account, Channels.DISCORD).compose(bot -> TextParts.send(
                TextParts.split(text, DiscordApi.MAX_TEXT), partsSent, partDone,
                part -> api.createMessage(bot.id(), bot.apiUrl(), bot.token(), channel, part)));
    }
}
