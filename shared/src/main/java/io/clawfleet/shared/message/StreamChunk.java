package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * A piece of a reply as the model produces it, sent straight to the gateway holding the caller's
 * connection. Best effort: the durable reply is always the outbox row.
 *
 * @param inboxId the message being answered
 * @param index   position of this chunk, from 0
 */
public record StreamChunk(String type, long inboxId, int index, String delta) implements Versioned {

    public static final String TYPE = "stream-chunk-v1";

    @JsonCreator
    public StreamChunk {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(delta, "delta");
    }

    public StreamChunk(long inboxId, int index, String delta) {
        this(TYPE, inboxId, index, delta);
    }
}
