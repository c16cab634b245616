package io.clawfleet.shared.partition;

import java.nio.charset.StandardCharsets;

/**
 * MurmurHash3 x86_32. Partition placement must hash the same on every JVM and release, which rules
 * out {@code String.hashCode}'s weak mixing and any library-internal hash that may change.
 */
public final class Murmur3 {

    private static final int C1 = 0xcc9e2d51;
    private static final int C2 = 0x1b873593;

    private Murmur3() {
    }

    public static int hash32(String text) {
        return hash32(text.getBytes(StandardCharsets.UTF_8), 0);
    }

    public static int hash32(byte[] data, int seed) {
        int h = seed;
        int length = data.length;
        int blocks = length / 4;
        for (int i = 0; i < blocks; i++) {
            int k = (data[i * 4] & 0xff)
                    | (data[i * 4 + 1] & 0xff) << 8
                    | (data[i * 4 + 2] & 0xff) << 16
                    | (data[i * 4 + 3] & 0xff) << 24;
            h ^= mixK(k);
            h = Integer.rotateLeft(h, 13);
            h = h * 5 + 0xe6546b64;
        }
        int tail = blocks * 4;
        int k = 0;
        switch (length & 3) {
            case 3:
                k ^= (data[tail + 2] & 0xff) << 16;
                // fall through
            case 2:
                k ^= (data[tail + 1] & 0xff) << 8;
                // fall through
            case 1:
                k ^= data[tail] & 0xff;
                h ^= mixK(k);
                break;
            default:
                break;
        }
        h ^= length;
        return fmix(h);
    }

    private static int mixK(int k) {
        k *= C1;
        k = Integer.rotateLeft(k, 15);
        return k * C2;
    }

    private static int fmix(int h) {
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h;
    }
}
