package io.clawfleet.worker.tools;

import io.clawfleet.shared.message.Channels;

import java.util.Set;

/**
 * Reads a chat reference a model gives: a chat key on the caller's own channel, or
 * {@code <channel>:<chat key>} to name one on another channel. Telegram and Slack keys contain a colon
 * themselves ({@code bot:chat}), so only a known channel name counts as a prefix.
 *
 * <p>The policy engine and the tools that act on a chat read a reference with this one method, so
 * the chat a call is judged for is the chat it acts on: an API chat whose key looks like
 * {@code telegram:bot:chat} is not itself to {@code message_send}, and {@code api:<own key>} is.
 */
public final class ChatTargets {

    private static final Set<String> CHANNELS = Set.of(Channels.API, Channels.OPENAI, Channels.TELEGRAM, Channels.SLACK, Channels.WHATSAPP,
            Channels.WEBHOOK);

    /** A chat of the tenant: its channel and its key on that channel. */
    public record Target(String channel, String chatKey) {

        /** Whether this is the chat making the call. */
        public boolean isCaller(ToolCallContext ctx) {
            return channel.equals(ctx.channel()) && chatKey.equals(ctx.chatKey());
        }
    }

    private ChatTargets() {
    }

    public static Target parse(String reference, String ownChannel) {
        int colon = reference.indexOf(':');
        if (colon > 0 && CHANNELS.contains(reference.substring(0, colon))) {
            return new Target(reference.substring(0, colon), reference.substring(colon + 1));
        }
        return new Target(ownChannel, reference);
    }
}
