package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

import java.time.Instant;

/**
 * A reply that is durably in the outbox. Workers publish it after the turn commit so gateways can
 * wake long polls and waiting callers; the outbox row, not this notice, is the record.
 *
 * @param id        deterministic outbox id
 * @param seq       the reply's position in its chat, starting at 1
 * @param inReplyTo inbox id of the message this answers
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
        Instant at) implements Versioned {

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
    }

    public OutboundReply(String id, String tenantId, String channel, String chatKey, long chatId, long seq,
                         long inReplyTo, String text, Instant at) {
        this(TYPE, id, tenantId, channel, chatKey, chatId, seq, inReplyTo, text, at);
    }
}
