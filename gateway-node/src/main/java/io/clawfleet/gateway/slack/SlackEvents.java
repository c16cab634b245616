package io.clawfleet.gateway.slack;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;

/**
 * Takes one Slack event into the inbox (or aside, while the tenant is over a quota). Only new messages of people count:
 * {@code message} events without a subtype (an edit, a deletion, a join, a bot's message is not one) and
 * {@code app_mention} events; the app's own messages never do.
 *
 * <p>The idempotency key is the message's own id on Slack, its conversation and {@code ts}, not the event's id: Slack
 * retries an event with the same {@code event_id}, but a mention in a channel the app reads comes as two events (a
 * {@code message} and an {@code app_mention}) with two ids, and must still be one turn and one reply.
 */
public final class SlackEvents {

    private static final Logger LOG = LoggerFactory.getLogger(SlackEvents.class);

    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final SlackApi slack;
    private final Metrics metrics;

    public SlackEvents(Ingest ingest, Deferral deferral, SenderAccess access, SlackApi slack, Metrics metrics) {
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.access = Objects.requireNonNull(access);
        this.slack = Objects.requireNonNull(slack);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** @param event the {@code event} of an {@code event_callback} */
    public Future<Void> accept(ChannelBot bot, JsonObject event) {
        String type = event.getString("type", "");
        if (!"message".equals(type) && !"app_mention".equals(type) || event.getValue("subtype") != null) {
            return skip(bot, "not_message");
        }
        String user = event.getValue("user") instanceof String u ? u : null;
        if (event.getValue("bot_id") != null || user == null || user.equals(bot.accountUserId())) {
            return skip(bot, "from_bot"); // the app's own replies come back as events too
        }
        String conversation = event.getValue("channel") instanceof String c ? c : null;
        String ts = event.getValue("ts") instanceof String t ? t : null;
        if (!(event.getValue("text") instanceof String text) || text.isBlank() || conversation == null || ts == null
                || !conversation.matches("[A-Z0-9]{1,32}") || !ts.matches("[0-9]{1,20}\\.[0-9]{1,12}")) {
            return skip(bot, "not_text");
        }
        String threadTs = event.getValue("thread_ts") instanceof String t && t.matches("[0-9]{1,20}\\.[0-9]{1,12}") ? t : null;
        SlackChat chat = SlackChat.of(bot.id(), conversation, ts, threadTs);
        boolean group = !SlackChat.isDirect(conversation);
        String mention = "<@" + bot.accountUserId() + ">";
        boolean mentioned = "app_mention".equals(type) || text.contains(mention);
        return access.check(bot, new SenderAccess.Message(user, chat.chatId(), group, group && mentioned))
                .compose(verdict -> switch (verdict) {
                    case SenderAccess.Accept accept -> take(bot, chat, conversation + ":" + ts, user, plain(text, mention, bot));
                    case SenderAccess.Ignore ignore -> skip(bot, ignore.reason());
                    case SenderAccess.Challenge challenge -> {
                        sendCode(bot, chat, challenge.challenge());
                        yield skip(bot, "pairing");
                    }
                });
    }

    /**
     * The text as the model should read it: Slack's escapes undone, and the app's own mention ({@code <@U123>}) written
     * as {@code @name}.
     */
    static String plain(String text, String mention, ChannelBot bot) {
        return text.replace(mention, "@" + bot.name()).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    }

    private Future<Void> take(ChannelBot bot, SlackChat chat, String messageId, String sender, String text) {
        String idempotencyKey = "m" + messageId;
        return deferral.deferIfOver(bot, Channels.SLACK, chat.chatKey(), idempotencyKey, sender, text, chat.chatId())
                .compose(deferred -> deferred ? Future.<Void>succeededFuture()
                        : ingest.accept(bot.owner(), Channels.SLACK, chat.chatKey(), idempotencyKey, sender, text, null)
                                .onSuccess(accepted -> metrics.increment("clawfleet.slack.received", "tenant", bot.tenantId()))
                                .mapEmpty());
    }

    private void sendCode(ChannelBot bot, SlackChat chat, ChannelAccessStore.Challenge challenge) {
        if (!challenge.sendCode()) {
            return;
        }
        String text = SenderAccess.codeNotice(challenge);
        slack.notice(bot, chat.chatId(), text).onFailure(e -> LOG.warn("a pairing code was not sent [tenant: {}, bot: {}]: {}",
                bot.tenantId(), bot.name(), e.getMessage()));
    }

    private Future<Void> skip(ChannelBot bot, String reason) {
        metrics.increment("clawfleet.slack.skipped", "reason", reason, "tenant", bot.tenantId());
        return Future.succeededFuture();
    }
}
