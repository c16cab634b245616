package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * Best-effort notice to a partition's owner that a message is waiting in the inbox. It carries the
 * message so the owner need not read it back; losing it costs latency, never the message.
 */
public record WakeUp(String type, InboundMessage message) implements Versioned {

    public static final String TYPE = "wake-up-v1";

    @JsonCreator
    public WakeUp {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(message, "message");
    }

    public WakeUp(InboundMessage message) {
        this(TYPE, message);
    }
}
