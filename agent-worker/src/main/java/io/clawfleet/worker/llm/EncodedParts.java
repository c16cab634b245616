package io.clawfleet.worker.llm;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The encoded JSON of request parts that come back call after call (a bot's system text, its tools), so that the
 * providers encode them once rather than per call. One cache serves a worker's providers, the operator's and every
 * tenant's, within a fixed bound ({@link #SHARED}: 4,096 parts, 8 MiB); the least recently used part goes first, and
 * a part that is not kept is encoded per call as before.
 *
 * <p>It is addressed by content: a key is the part itself, with the wire format it was encoded for
 * ({@link Key#format}), compared by value and kept as a copy no caller can change afterwards. The bytes are a pure
 * function of the key, so two tenants whose bots send the same text share one entry and neither can get anything but
 * the encoding of what it sent; no tenant or bot id is needed to keep them apart.
 */
final class EncodedParts {

    /** The worker's cache. */
    static final EncodedParts SHARED = new EncodedParts(4_096, 8 << 20);

    /** A part as one wire format encodes it: the same tools are different bytes for OpenAI and for Anthropic. */
    record Key(String format, Object part) {
    }

    private final int maxEntries;
    private final long maxBytes;
    private final LinkedHashMap<Key, byte[]> entries = new LinkedHashMap<>(64, 0.75f, true);
    private long bytes;

    EncodedParts(int maxEntries, long maxBytes) {
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
    }

    /**
     * The bytes of {@code part} in {@code format}, encoding it only when it is not kept yet.
     *
     * @param copy a copy of the part that its caller cannot change (the part itself when it is immutable)
     */
    private <K> byte[] get(String format, K part, UnaryOperator<K> copy, Supplier<byte[]> encode) {
        Key key = new Key(format, part);
        synchronized (entries) {
            byte[] kept = entries.get(key);
            if (kept != null) {
                return kept;
            }
        }
        byte[] encoded = encode.get();
        if (encoded.length > maxBytes / 8) {
            return encoded; // one huge part would push out the many it is kept for
        }
        Key own = new Key(format, copy.apply(part));
        synchronized (entries) {
            byte[] before = entries.put(own, encoded);
            bytes += encoded.length - (before == null ? 0 : before.length);
            Iterator<byte[]> eldest = entries.values().iterator();
            while (entries.size() > maxEntries || bytes > maxBytes) {
                bytes -= eldest.next().length;
                eldest.remove();
            }
        }
        return encoded;
    }

    /** The bytes of a text part (immutable, kept as it is). */
    byte[] text(String format, String text, Supplier<byte[]> encode) {
        return get(format, text, s -> s, encode);
    }

    /** The bytes of a tool list, kept under a copy of the definitions, whose parameters are mutable JSON. */
    byte[] tools(String format, List<ToolDefinition> tools, Supplier<byte[]> encode) {
        return get(format, tools, EncodedParts::frozen, encode);
    }

    private static List<ToolDefinition> frozen(List<ToolDefinition> tools) {
        return tools.stream().map(t -> new ToolDefinition(t.name(), t.description(),
                t.parameters() == null ? null : t.parameters().copy())).toList();
    }

    int size() {
        synchronized (entries) {
            return entries.size();
        }
    }

    long bytes() {
        synchronized (entries) {
            return bytes;
        }
    }
}
