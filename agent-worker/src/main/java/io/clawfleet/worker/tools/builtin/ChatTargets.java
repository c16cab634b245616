package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.message.Channels;

import java.util.Set;

/**
 * Reads a chat reference a model gives: a chat key on the caller's own channel, or
 * {@code <channel>:<chat key>} to name one on another channel. Telegram keys contain a colon
 * themselves ({@code bot:chat}), so only a known channel name counts as a prefix.
 */
final class ChatTargets {

    private static final Set<String> CHANNELS = Set.of(Channels.API, Channels.OPENAI, Channels.TELEGRAM);

    record Target(String channel, String chatKey) {
    }

    private ChatTargets() {
    }

    static Target parse(String reference, String ownChannel) {
        int colon = reference.indexOf(':');
        if (colon > 0 && CHANNELS.contains(reference.substring(0, colon))) {
            return new Target(reference.substring(0, colon), reference.substring(colon + 1));
        }
        return new Target(ownChannel, reference);
    }
}
