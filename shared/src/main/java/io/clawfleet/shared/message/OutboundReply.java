package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;
import io.clawfleet.shared.store.BotRef;

import java.time.Instant;

/**
 * A reply that is durably in the outbox, field for field as the row holds it. Workers publish it after the turn commit
 * so gateways can wake long polls and waiting callers, and serve it where notices are authentic (SECURITY.md rule 5);
 * the outbox row, not this notice, is the record.
 *
 * @param id        deterministic outbox id
 * @param seq       the reply's position in its chat, starting at 1
 * @param inReplyTo inbox id of the message this answers
 * @param botId     the bot of the chat ({@code main} when absent: notices of nodes older than bots)
 */
public record OutboundReply(
        String type,
        String id,
        String tenantId,
        String channel,
        String chatKey,
        long chatId,
        long seq,
        long inReplyTo,
        String text,
        Instant at,
        String botId) implements Versioned {

    public static final String TYPE = "outbound-reply-v1";

    @JsonCreator
    public OutboundReply {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(id, "id");
        Versioned.require(tenantId, "tenantId");
        Versioned.require(channel, "channel");
        Versioned.require(chatKey, "chatKey");
        Versioned.require(text, "text");
        Versioned.require(at, "at");
        botId = botId == null ? BotRef.MAIN : botId;
    }

    public OutboundReply(String id, BotRef bot, String channel, String chatKey, long chatId, long seq,
                         long inReplyTo, String text, Instant at) {
        this(TYPE, id, bot.tenantId(), channel, chatKey, chatId, seq, inReplyTo, text, at, bot.botId());
    }

    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }
}
