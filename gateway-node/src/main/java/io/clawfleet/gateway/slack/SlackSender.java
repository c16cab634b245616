package io.clawfleet.gateway.slack;

import io.clawfleet.gateway.delivery.ChannelAccounts;
import io.clawfleet.gateway.delivery.ChannelSender;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.SendPacer;
import io.clawfleet.gateway.delivery.TextParts;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.util.Objects;
import java.util.function.IntFunction;

/**
 * Sends replies to Slack conversations with {@code chat.postMessage}. A Slack chat key is
 * {@code <account id>:<conversation>[:<thread ts>]} ({@link SlackChat}): the reply goes out through the app the message
 * came in on, in the thread the chat is. Long replies are cut at {@link SlackApi#MAX_TEXT} at the best boundary
 * ({@link TextParts}), each part is Slack {@code mrkdwn} made from the model's Markdown ({@link SlackMarkdown}), paced to
 * Slack's rate for posting ({@link SendPacer}). A {@code 429} is retried after its {@code Retry-After} by the delivery.
 */
public final class SlackSender implements ChannelSender {

    private final Vertx vertx;
    private final SlackApi api;
    private final ChannelAccounts accounts;
    private final SendPacer pacer;

    public SlackSender(Vertx vertx, SlackApi api, ChannelAccounts accounts, SendPacer pacer) {
        this.vertx = Objects.requireNonNull(vertx);
        this.api = Objects.requireNonNull(api);
        this.accounts = Objects.requireNonNull(accounts);
        this.pacer = Objects.requireNonNull(pacer);
    }

    @Override
    public String channel() {
        return Channels.SLACK;
    }

    @Override
    public Future<Void> send(String tenantId, String chatKey, String text, int partsSent, IntFunction<Future<?>> partDone) {
        SlackChat chat = SlackChat.parse(chatKey);
        if (chat == null) {
            return Future.failedFuture(new DeliveryException("not a Slack chat key: " + chatKey, false, -1));
        }
        return accounts.sendingFor(tenantId, chat.accountId(), Channels.SLACK).compose(bot -> TextParts.send(
                TextParts.split(text, SlackApi.MAX_TEXT), partsSent, partDone,
                part -> pacer.pace(vertx, bot, chat.conversation(), SendPacer.Rates.SLACK, "Slack", () -> post(bot, chat, part))));
    }

    private Future<Void> post(ChannelBot bot, SlackChat chat, String part) {
        return api.postMessage(bot.apiUrl(), bot.token(), chat.conversation(), chat.threadTs(), SlackMarkdown.toMrkdwn(part));
    }
}
