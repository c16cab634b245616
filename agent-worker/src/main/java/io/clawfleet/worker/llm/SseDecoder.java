package io.clawfleet.worker.llm;

import io.vertx.core.buffer.Buffer;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Splits a server-sent-events byte stream into events, across chunk boundaries (a chunk may end in
 * the middle of a line or of a UTF-8 character). Lines are split on bytes and decoded whole.
 * Bounded: an event larger than {@code maxEventBytes} fails the stream. Public because the MCP client reads
 * the same streams.
 */
public final class SseDecoder {

    /**
     * One event: its {@code event:} name ({@code message} when absent), its data lines joined by newlines, and the
     * stream's last event id so far (ids carry over to later events, as in a browser; null before any), which a
     * reconnecting client sends back as Last-Event-ID.
     */
    public record Event(String name, String data, String id) {

        /** An event of a stream that gave no ids. */
        public Event(String name, String data) {
            this(name, data, null);
        }
    }

    private final Consumer<Event> onEvent;
    private final int maxEventBytes;
    private Buffer pending = Buffer.buffer();
    private String name;
    private StringBuilder data;
    private String lastId;

    public SseDecoder(int maxEventBytes, Consumer<Event> onEvent) {
        this.maxEventBytes = maxEventBytes;
        this.onEvent = Objects.requireNonNull(onEvent);
    }

    /** Feeds the next chunk; complete events are handed on before this returns. */
    public void feed(Buffer chunk) {
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
    public void end() {
        if (pending.length() > 0) {
            line(pending.toString(StandardCharsets.UTF_8));
            pending = Buffer.buffer();
        }
        line("");
    }

    private void line(String line) {
        if (line.isEmpty()) {
            if (data != null) {
                Event event = new Event(name == null ? "message" : name, data.toString(), lastId);
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
            case "id" -> {
                // A NUL in an id is ignored by the standard: it could not be sent back in a header.
                if (value.indexOf('\0') < 0) {
                    lastId = value.isEmpty() ? null : value;
                }
            }
            default -> {
                // retry is a server's hint for reconnecting; callers that reconnect keep their own backoff.
            }
        }
    }
}
