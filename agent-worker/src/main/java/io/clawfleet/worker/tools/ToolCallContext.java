package io.clawfleet.worker.tools;

import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.BotRef;

/**
 * Who is calling a tool, from where: the chat of the turn, its role, and the lease the turn runs
 * under.
 *
 * @param chatId     database id of the chat
 * @param chatKey    the chat's id on its channel
 * @param admin      whether the chat has the admin role (seed 000 §12.2)
 * @param inboxId    the message being answered
 * @param callIndex  position of this call in the turn, for deterministic ids of what it creates
 * @param traceParent the W3C {@code traceparent} of the call's span, passed on to sandbox runs; null when not traced
 */
public record ToolCallContext(String tenantId, String botId, long chatId, String channel, String chatKey, String senderId,
                              boolean admin, long inboxId, int callIndex, Fence fence, String traceParent) {

    /** A call that is not traced. */
    public ToolCallContext(String tenantId, String botId, long chatId, String channel, String chatKey, String senderId,
                           boolean admin, long inboxId, int callIndex, Fence fence) {
        this(tenantId, botId, chatId, channel, chatKey, senderId, admin, inboxId, callIndex, fence, null);
    }

    /** The bot of the chat: whose workspace, tasks and chats the call works on. */
    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }

    public String role() {
        return admin ? "admin" : "normal";
    }
}
