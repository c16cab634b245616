package io.clawfleet.gateway.discord;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.gateway.delivery.TypingKeeper;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Takes one Discord {@code MESSAGE_CREATE} into the inbox (or aside, while the tenant is over a quota). Only people's
 * messages with text count: a bot's (the account's own replies included) does not. A direct message is a chat; in a
 * server (guild) every channel or thread is a chat, answered when the bot is mentioned unless the account's
 * {@code groupPolicy} says otherwise. The idempotency key is the message's id (a snowflake): an event Discord sends again
 * when a session is resumed is the same message.
 *
 * <p>Chat keys: {@code <account>:<channel>} for a direct message, {@code <account>:g<channel>} in a server, so that a
 * key alone says whether the chat is a group ({@link Channels#isGroup}).
 */
public final class DiscordEvents {

    private static final Logger LOG = LoggerFactory.getLogger(DiscordEvents.class);
    private static final Pattern SNOWFLAKE = Pattern.compile("[0-9]{1,20}");

    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final DiscordApi api;
    private final TypingKeeper typing;
    /** Discord shows "typing…" for 10 s: shown again a little before. */
    static final long TYPING_EVERY_MS = 8_000;
    private final Metrics metrics;

    public DiscordEvents(Ingest ingest, Deferral deferral, SenderAccess access, DiscordApi api, TypingKeeper typing,
                         Metrics metrics) {
        this.typing = Objects.requireNonNull(typing);
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.access = Objects.requireNonNull(access);
        this.api = Objects.requireNonNull(api);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** The chat key of a channel of an account. */
    public static String chatKey(long accountId, String channelId, boolean guild) {
        return accountId + ":" + (guild ? "g" : "") + channelId;
    }

    /** The channel id in a Discord chat key, or null when it is not one. */
    public static String channelOf(String chatKey) {
        int colon = chatKey.indexOf(':');
        if (colon < 0) {
            return null;
        }
        String channel = chatKey.startsWith("g", colon + 1) ? chatKey.substring(colon + 2) : chatKey.substring(colon + 1);
        return SNOWFLAKE.matcher(channel).matches() ? channel : null;
    }

    /** The account id in a Discord chat key, or -1. */
    public static long accountOf(String chatKey) {
        int colon = chatKey.indexOf(':');
        try {
            return colon < 0 ? -1 : Long.parseLong(chatKey.substring(0, colon));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** @param message the {@code d} of a {@code MESSAGE_CREATE} */
    public Future<Void> accept(ChannelBot bot, JsonObject message) {
        JsonObject author = message.getValue("author") instanceof JsonObject a ? a : new JsonObject();
        String user = author.getValue("id") instanceof String u ? u : null;
        if (Boolean.TRUE.equals(author.getValue("bot")) || user == null || user.equals(bot.accountUserId())
                || message.getValue("webhook_id") != null) {
            return skip(bot, "from_bot");
        }
        String id = message.getValue("id") instanceof String i && SNOWFLAKE.matcher(i).matches() ? i : null;
        String channel = message.getValue("channel_id") instanceof String c && SNOWFLAKE.matcher(c).matches() ? c : null;
        if (!(message.getValue("content") instanceof String text) || text.isBlank() || id == null || channel == null) {
            return skip(bot, "not_text"); // an attachment, a sticker; or content withheld (no MESSAGE_CONTENT intent)
        }
        boolean guild = message.getValue("guild_id") != null;
        String chatKey = chatKey(bot.id(), channel, guild);
        String chatId = chatKey.substring(chatKey.indexOf(':') + 1);
        boolean mentioned = message.getValue("mentions") instanceof JsonArray mentions && mentions.stream()
                .anyMatch(m -> m instanceof JsonObject o && bot.accountUserId().equals(o.getValue("id")));
        return access.check(bot, new SenderAccess.Message(user, chatId, guild, guild && mentioned))
                .compose(verdict -> switch (verdict) {
                    case SenderAccess.Accept accept -> take(bot, chatKey, chatId, channel, id, user, plain(text, bot));
                    case SenderAccess.Ignore ignore -> skip(bot, ignore.reason());
                    case SenderAccess.Challenge challenge -> {
                        sendCode(bot, channel, challenge.challenge());
                        yield skip(bot, "pairing");
                    }
                });
    }

    /** The text as the model should read it: the bot's own mention ({@code <@id>}, {@code <@!id>}) written as {@code @name}. */
    static String plain(String text, ChannelBot bot) {
        return text.replace("<@!" + bot.accountUserId() + ">", "@" + bot.name()).replace("<@" + bot.accountUserId() + ">", "@" + bot.name());
    }

    private Future<Void> take(ChannelBot bot, String chatKey, String chatId, String channel, String messageId, String sender,
                              String text) {
        String idempotencyKey = "d" + messageId;
        return deferral.deferIfOver(bot, Channels.DISCORD, chatKey, idempotencyKey, sender, text, chatId)
                .compose(deferred -> deferred ? Future.<Void>succeededFuture()
                        : ingest.accept(bot.owner(), Channels.DISCORD, chatKey, idempotencyKey, sender, text, null)
                                .onSuccess(accepted -> {
                                    metrics.increment("clawfleet.discord.received", "tenant", bot.tenantId());
                                    if (accepted.created()) {
                                        // "typing…" until the reply (Discord shows it for 10 s, or until the bot's message)
                                        typing.keep(bot, accepted.message().id(), TYPING_EVERY_MS,
                                                () -> api.typing(bot.id(), bot.apiUrl(), bot.token(), channel));
                                    }
                                })
                                .mapEmpty());
    }

    private void sendCode(ChannelBot bot, String channel, ChannelAccessStore.Challenge challenge) {
        if (!challenge.sendCode()) {
            return;
        }
        api.createMessage(bot.id(), bot.apiUrl(), bot.token(), channel, SenderAccess.codeNotice(challenge))
                .onFailure(e -> LOG.warn("a pairing code was not sent [tenant: {}, bot: {}]: {}", bot.tenantId(), bot.name(),
                        e.getMessage()));
    }

    private Future<Void> skip(ChannelBot bot, String reason) {
        metrics.increment("clawfleet.discord.skipped", "reason", reason, "tenant", bot.tenantId());
        return Future.succeededFuture();
    }
}
