package io.clawfleet.shared.bus;

import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.message.Versioned;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;

import java.util.Objects;

/**
 * Event-bus codec for a versioned record: JSON on the wire between nodes, the record itself
 * (immutable) within a node. Decoding checks the type and the required fields.
 */
public final class JsonCodec<T extends Versioned> implements MessageCodec<T, T> {

    private final Class<T> type;
    private final String name;

    public JsonCodec(Class<T> type, String name) {
        this.type = Objects.requireNonNull(type);
        this.name = Objects.requireNonNull(name);
    }

    @Override
    public void encodeToWire(Buffer buffer, T value) {
        byte[] bytes = Json.toBytes(value);
        buffer.appendInt(bytes.length);
        buffer.appendBytes(bytes);
    }

    @Override
    public T decodeFromWire(int pos, Buffer buffer) {
        int length = buffer.getInt(pos);
        byte[] bytes = buffer.getBytes(pos + 4, pos + 4 + length);
        return Json.fromBytes(bytes, type);
    }

    @Override
    public T transform(T value) {
        return value;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public byte systemCodecID() {
        return -1;
    }
}
