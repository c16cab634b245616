package io.clawfleet.shared.message;

import java.util.Set;

/** The channels a message can arrive on, and which of them need their replies pushed out. */
public final class Channels {

    /** The native HTTP API; replies are fetched by long poll. */
    public static final String API = "api";
    /** The OpenAI-compatible API; replies go back on the caller's connection. */
    public static final String OPENAI = "openai";
    /** Telegram bots; replies are sent with the Bot API by a gateway. */
    public static final String TELEGRAM = "telegram";

    /** Slack apps (Events API); replies are sent with {@code chat.postMessage} by a gateway. */
    public static final String SLACK = "slack";

    /** WhatsApp business numbers (Cloud API); replies are sent with the Graph API by a gateway. */
    public static final String WHATSAPP = "whatsapp";

    /**
     * Messages posted by the tenant's own systems, signed per the Standard Webhooks spec; replies go back as the bot's
     * {@code reply.sent} webhook events (they are fetched, not pushed by a channel sender).
     */
    public static final String WEBHOOK = "webhook";

    /**
     * The end users of a tenant's own site, through the web chat widget over a WebSocket to any gateway; replies go
     * back on the user's connection (fetched from the outbox after a reconnect), not pushed by a channel sender.
     */
    public static final String WEBCHAT = "webchat";

    /** Discord bots (messages over the Gateway WebSocket); replies are sent with the REST API by a gateway. */
    public static final String DISCORD = "discord";

    private static final Set<String> PUSH = Set.of(TELEGRAM, SLACK, WHATSAPP, DISCORD);

    private Channels() {
    }

    /**
     * Whether a chat is shared by several people, so that what one sender may do is not what the chat
     * may do (issue 22: in a group, admin is a property of the sender). Telegram names groups and
     * supergroups with negative ids ({@code <bot>:-100...}), a private chat with the user's own positive
     * id. A Slack chat key is {@code <account>:<conversation>[:<thread>]}, and only a direct message (a conversation
     * id starting with {@code D}) is private. Chats of the HTTP APIs are named by the caller, who speaks for everyone
     * in them, and a WhatsApp chat is one person's (the Cloud API has no groups).
     */
    public static boolean isGroup(String channel, String chatKey) {
        if (DISCORD.equals(channel)) {
            // <account>:<channel>, and a guild's channels are marked: <account>:g<channel>; a DM is <account>:<channel>
            int colon = chatKey.indexOf(':');
            return colon < 0 || chatKey.startsWith("g", colon + 1);
        }
        if (SLACK.equals(channel)) {
            int colon = chatKey.indexOf(':');
            return colon < 0 || !chatKey.startsWith("D", colon + 1);
        }
        if (!TELEGRAM.equals(channel)) {
            return false;
        }
        int colon = chatKey.lastIndexOf(':');
        return chatKey.startsWith("-", colon + 1);
    }

    /** Whether replies on this channel are delivered by a gateway (with retries) rather than fetched. */
    public static boolean isPush(String channel) {
        return PUSH.contains(channel);
    }
}
