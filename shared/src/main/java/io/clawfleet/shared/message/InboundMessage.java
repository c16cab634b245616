package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;
import io.clawfleet.shared.store.BotRef;

import java.time.Instant;

/**
 * A message accepted into the durable inbox: who sent what to which conversation, and where it
 * sits in that conversation's order ({@code seq}, assigned at intake in commit order).
 *
 * @param id        inbox row id; the id {@code POST /api/v1/messages} returns
 * @param kind      {@code user} for a person's message, {@code task} for a scheduled firing, {@code approval} for
 *                  an admin's decision on the chat's waiting call
 * @param replyNode node id of the gateway holding the caller's connection, for streaming; may be null
 * @param modelRole the model role asked for (OpenAI-compatible API's "model"); null = the default role
 * @param contextMode {@code group} (chat history included) or {@code isolated} (minimal context); null = group.
 *                  A scheduled task's firing carries its task's mode; the worker passes it on in the TurnRequest.
 * @param botId     the bot the chat belongs to ({@code main} when absent: messages of nodes older than bots)
 * @param traceParent the W3C {@code traceparent} of the intake's span, kept with the inbox row so that the turn, on
 *                  whichever worker runs it, continues the message's trace; null when tracing is off
 * @param adminChat whether the chat had the admin role when the inbox accepted (or the worker read) this message;
 *                  null when not known. Only {@code false} is ever acted on, and only to withhold admin rights: a
 *                  turn that would run as admin reads the role again (AgentTurns), so a revoke applies to every
 *                  turn that starts after it, and a forged {@code false} can only take rights away
 */
public record InboundMessage(
        String type,
        long id,
        String tenantId,
        String channel,
        String chatKey,
        long chatId,
        int partition,
        long seq,
        String senderId,
        String text,
        String kind,
        Instant receivedAt,
        String replyNode,
        String modelRole,
        String contextMode,
        String botId,
        String traceParent,
        Boolean adminChat) implements Versioned {

    public static final String TYPE = "inbound-message-v1";
    public static final String KIND_USER = "user";
    public static final String KIND_TASK = "task";
    /** An admin's decision on the chat's waiting tool call (see ApprovalStore), text {@code /approval <id> <decision>}. */
    public static final String KIND_APPROVAL = "approval";

    @JsonCreator
    public InboundMessage {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(tenantId, "tenantId");
        Versioned.require(channel, "channel");
        Versioned.require(chatKey, "chatKey");
        Versioned.require(senderId, "senderId");
        Versioned.require(text, "text");
        kind = kind == null ? KIND_USER : kind;
        Versioned.require(receivedAt, "receivedAt");
        botId = botId == null ? BotRef.MAIN : botId;
    }

    /** The bot that answers: whose workspace, settings and tools the turn uses. */
    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }

    public InboundMessage(long id, String tenantId, String channel, String chatKey, long chatId, int partition,
                          long seq, String senderId, String text, String kind, Instant receivedAt, String replyNode) {
        this(TYPE, id, tenantId, channel, chatKey, chatId, partition, seq, senderId, text, kind, receivedAt, replyNode, null,
                null, null, null, null);
    }

    public InboundMessage(long id, String tenantId, String channel, String chatKey, long chatId, int partition,
                          long seq, String senderId, String text, String kind, Instant receivedAt, String replyNode,
                          String modelRole) {
        this(TYPE, id, tenantId, channel, chatKey, chatId, partition, seq, senderId, text, kind, receivedAt, replyNode,
                modelRole, null, null, null, null);
    }

    public InboundMessage(long id, String tenantId, String channel, String chatKey, long chatId, int partition,
                          long seq, String senderId, String text, String kind, Instant receivedAt, String replyNode,
                          String modelRole, String contextMode) {
        this(TYPE, id, tenantId, channel, chatKey, chatId, partition, seq, senderId, text, kind, receivedAt, replyNode,
                modelRole, contextMode, null, null, null);
    }

    public InboundMessage(long id, BotRef bot, String channel, String chatKey, long chatId, int partition,
                          long seq, String senderId, String text, String kind, Instant receivedAt, String replyNode,
                          String modelRole, String contextMode) {
        this(id, bot, channel, chatKey, chatId, partition, seq, senderId, text, kind, receivedAt, replyNode, modelRole,
                contextMode, null);
    }

    public InboundMessage(long id, BotRef bot, String channel, String chatKey, long chatId, int partition,
                          long seq, String senderId, String text, String kind, Instant receivedAt, String replyNode,
                          String modelRole, String contextMode, String traceParent) {
        this(TYPE, id, bot.tenantId(), channel, chatKey, chatId, partition, seq, senderId, text, kind, receivedAt, replyNode,
                modelRole, contextMode, bot.botId(), traceParent, null);
    }

    /** This message with {@link #adminChat()} set: what the statement that accepted or read it saw of the chat's role. */
    public InboundMessage withAdminChat(Boolean adminChat) {
        return new InboundMessage(type, id, tenantId, channel, chatKey, chatId, partition, seq, senderId, text, kind,
                receivedAt, replyNode, modelRole, contextMode, botId, traceParent, adminChat);
    }
}
