package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.TypingKeeper;
import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.Locale;
import java.util.Objects;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes one Telegram update into the inbox (or aside, while the bot's tenant is over a quota), whichever way it came:
 * polled or posted to the webhook. The idempotency key is the update's own id, so an update that comes twice (a
 * poll re-read after a crash, a webhook retried by Telegram or to another gateway, a switch between polling and
 * webhook) is one message. A message of a sender the bot does not take ({@link SenderAccess}) is not stored at all; an
 * unknown sender of a bot in pairing mode is sent a code. A refusal (rate limit, backlog) fails the future with an
 * {@link io.clawfleet.shared.http.ApiException} that says when to come back.
 */
public final class TelegramUpdates {

    private static final Logger LOG = LoggerFactory.getLogger(TelegramUpdates.class);

    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final TelegramApi telegram;
    private final TypingKeeper typing;
    /** Telegram shows "typing…" for 5 s: shown again a little before. */
    static final long TYPING_EVERY_MS = 4_500;
    private final Metrics metrics;

    /**
     * @param deferral keeps a message aside, instead of the inbox, while its tenant is over a quota
     * @param access   whether a sender may talk to the bot ({@code dmPolicy}, {@code groupPolicy}, pairing)
     * @param telegram sends a pairing code to an unknown sender
     */
    public TelegramUpdates(Ingest ingest, Deferral deferral, SenderAccess access, TelegramApi telegram, TypingKeeper typing,
                           Metrics metrics) {
        this.typing = Objects.requireNonNull(typing);
        this.access = Objects.requireNonNull(access);
        this.telegram = Objects.requireNonNull(telegram);
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** @param via how the update came ("poll" or "webhook"), for the metrics */
    public Future<Void> accept(ChannelBot bot, JsonObject update, String via) {
        JsonObject message = update.getJsonObject("message");
        if (message == null || !(message.getValue("text") instanceof String text) || text.isBlank()) {
            metrics.increment("clawfleet.telegram.skipped", "reason", "not_text", "tenant", bot.tenantId());
            return Future.succeededFuture();
        }
        JsonObject chat = message.getJsonObject("chat", new JsonObject());
        JsonObject from = message.getJsonObject("from", new JsonObject());
        String chatId = String.valueOf(chat.getValue("id"));
        String sender = String.valueOf(from.getValue("id", chat.getValue("id")));
        boolean group = !"private".equals(chat.getString("type", "private"));
        return access.check(bot, new SenderAccess.Message(sender, chatId, group, group && mentions(bot, message, text)))
                .compose(verdict -> switch (verdict) {
                    case SenderAccess.Accept accept -> take(bot, update, text, chatId, sender, via);
                    case SenderAccess.Ignore ignore -> {
                        metrics.increment("clawfleet.telegram.skipped", "reason", ignore.reason(), "tenant", bot.tenantId());
                        yield Future.<Void>succeededFuture();
                    }
                    case SenderAccess.Challenge challenge -> {
                        metrics.increment("clawfleet.telegram.skipped", "reason", "pairing", "tenant", bot.tenantId());
                        sendCode(bot, chatId, challenge.challenge());
                        yield Future.<Void>succeededFuture();
                    }
                });
    }

    /** Whether a group message is meant for the bot: it names it ({@code @bot}, {@code /cmd@bot}) or answers it. */
    static boolean mentions(ChannelBot bot, JsonObject message, String text) {
        String name = bot.name().toLowerCase(Locale.ROOT);
        if (text.toLowerCase(Locale.ROOT).contains("@" + name)) {
            return true;
        }
        JsonObject repliedTo = message.getJsonObject("reply_to_message");
        JsonObject author = repliedTo == null ? null : repliedTo.getJsonObject("from");
        return author != null && name.equalsIgnoreCase(author.getString("username", ""));
    }

    /**
     * Tells an unknown sender its pairing code, without waiting (the update is taken either way: it is not stored).
     * A sender that keeps writing gets its code again only every {@link ChannelAccessStore#RENOTIFY}.
     */
    private void sendCode(ChannelBot bot, String chatId, ChannelAccessStore.Challenge challenge) {
        if (!challenge.sendCode()) {
            return;
        }
        String text = SenderAccess.codeNotice(challenge);
        telegram.sendMessage(bot.apiUrl(), bot.token(), chatId, text).onFailure(e -> LOG.warn(
                "a pairing code was not sent [tenant: {}, bot: {}]: {}", bot.tenantId(), bot.name(), e.getMessage()));
    }


    private Future<Void> take(ChannelBot bot, JsonObject update, String text, String chatId, String sender, String via) {
        String chatKey = bot.id() + ":" + chatId;
        String idempotencyKey = "u" + update.getLong("update_id");
        return deferral.deferIfOver(bot, Channels.TELEGRAM, chatKey, idempotencyKey, sender, text, chatId)
                .compose(deferred -> deferred ? Future.<Void>succeededFuture()
                        : ingest.accept(bot.owner(), Channels.TELEGRAM, chatKey, idempotencyKey, sender, text, null)
                                .onSuccess(accepted -> {
                                    metrics.increment("clawfleet.telegram.received", "tenant", bot.tenantId(), "via", via);
                                    if (accepted.created()) {
                                        // "typing…" until the reply (Telegram shows it for 5 s, or until the bot's message)
                                        typing.keep(bot, accepted.message().id(), TYPING_EVERY_MS,
                                                () -> telegram.sendChatAction(bot.apiUrl(), bot.token(), chatId, "typing"));
                                    }
                                })
                                .mapEmpty());
    }
}
