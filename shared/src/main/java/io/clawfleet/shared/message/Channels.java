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

    private static final Set<String> PUSH = Set.of(TELEGRAM);

    private Channels() {
    }

    /** Whether replies on this channel are delivered by a gateway (with retries) rather than fetched. */
    public static boolean isPush(String channel) {
        return PUSH.contains(channel);
    }
}
