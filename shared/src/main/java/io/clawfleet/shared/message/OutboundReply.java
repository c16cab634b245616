package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.UsageStore;

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
 * @param tokens    the tokens the turn that wrote it used, summed over its model calls, as its {@code llm_usage} rows
 *                  hold them; set only on the notice of a turn's commit, null on a reply read from the outbox, on other
 *                  replies and on notices of workers older than this field. Absent from the JSON when null, so a notice
 *                  without it is byte for byte what older nodes send and sign.
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
        String botId,
        UsageStore.TurnTokens tokens) implements Versioned {

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
        this(id, bot, channel, chatKey, chatId, seq, inReplyTo, text, at, null);
    }

    /** A reply committed by a turn, with the tokens it used ({@code tokens}). */
    public OutboundReply(String id, BotRef bot, String channel, String chatKey, long chatId, long seq,
                         long inReplyTo, String text, Instant at, UsageStore.TurnTokens tokens) {
        this(TYPE, id, bot.tenantId(), channel, chatKey, chatId, seq, inReplyTo, text, at, bot.botId(), tokens);
    }

    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }
}
