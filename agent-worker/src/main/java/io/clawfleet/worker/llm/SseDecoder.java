package io.clawfleet.worker.llm;

import io.vertx.core.buffer.Buffer;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Splits a server-sent-events byte stream into events, across chunk boundaries (a chunk may end in
 * the middle of a line or of a UTF-8 character). Lines are split on bytes and decoded whole.
 * Bounded: an event larger than {@code maxEventBytes} fails the stream.
 */
final class SseDecoder {

    /** One event: its {@code event:} name ({@code message} when absent) and its data lines joined by newlines. */
    record Event(String name, String data) {
    }

    private final Consumer<Event> onEvent;
    private final int maxEventBytes;
    private Buffer pending = Buffer.buffer();
    private String name;
    private StringBuilder data;

    SseDecoder(int maxEventBytes, Consumer<Event> onEvent) {
        this.maxEventBytes = maxEventBytes;
        this.onEvent = Objects.requireNonNull(onEvent);
    }

    /** Feeds the next chunk; complete events are handed on before this returns. */
    void feed(Buffer chunk) {
        pending.appendBuffer(chunk);
        int start = 0;
        for (int i = 0; i < pending.length(); i++) {
            if (pending.getByte(i) == '\n') {
                int end = i > start && pending.getByte(i - 1) == '\r' ? i - 1 : i;
                line(pending.getString(start, end, StandardCharsets.UTF_8.name()));
                start = i + 1;
            }
        }
        pending = start == 0 ? pending : pending.getBuffer(start, pending.length());
        if (pending.length() + (data == null ? 0 : data.length()) > maxEventBytes) {
            throw new LlmException("model stream sent an event over " + maxEventBytes + " bytes", 200, false, -1, null);
        }
    }

    /** The stream ended: an event not followed by a blank line still counts. */
    void end() {
        if (pending.length() > 0) {
            line(pending.toString(StandardCharsets.UTF_8));
            pending = Buffer.buffer();
        }
        line("");
    }

    private void line(String line) {
        if (line.isEmpty()) {
            if (data != null) {
                Event event = new Event(name == null ? "message" : name, data.toString());
                name = null;
                data = null;
                onEvent.accept(event);
            }
            name = null;
            return;
        }
        if (line.startsWith(":")) {
            return;
        }
        int colon = line.indexOf(':');
        String field = colon < 0 ? line : line.substring(0, colon);
        String value = colon < 0 ? "" : line.substring(colon + 1);
        if (value.startsWith(" ")) {
            value = value.substring(1);
        }
        switch (field) {
            case "event" -> name = value;
            case "data" -> data = data == null ? new StringBuilder(value) : data.append('\n').append(value);
            default -> {
                // id and retry concern reconnecting clients; a model call never reconnects.
            }
        }
    }
}
