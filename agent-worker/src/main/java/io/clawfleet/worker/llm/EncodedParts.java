package io.clawfleet.worker.llm;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The encoded JSON of request parts that come back call after call (a bot's system text, its tools), so that a
 * provider encodes them once rather than per call. Keys are compared by value, as a copy the caller cannot change
 * afterwards; the least recently used entry goes when the cache is full, so a worker serving many bots holds at most
 * {@code maxEntries} of them and encodes the others as before.
 */
final class EncodedParts {

    /** Two parts per bot: enough for 128 busy bots per provider endpoint. */
    static final int DEFAULT_ENTRIES = 256;

    private final Map<Object, byte[]> entries;

    EncodedParts(int maxEntries) {
        this.entries = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Object, byte[]> eldest) {
                return size() > maxEntries;
            }
        };
    }

    /** The bytes of {@code key} encoded, encoding it only when it is not kept yet. */
    <K> byte[] get(K key, UnaryOperator<K> copy, Supplier<byte[]> encode) {
        synchronized (entries) {
            byte[] bytes = entries.get(key);
            if (bytes != null) {
                return bytes;
            }
        }
        byte[] bytes = encode.get();
        synchronized (entries) {
            entries.put(copy.apply(key), bytes);
        }
        return bytes;
    }

    int size() {
        synchronized (entries) {
            return entries.size();
        }
    }
}
