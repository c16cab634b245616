package io.clawfleet.shared.partition;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class Murmur3Test {

    private static int hash(String text, int seed) {
        return Murmur3.hash32(text.getBytes(StandardCharsets.UTF_8), seed);
    }

    @Test
    void matchesReferenceVectors() {
        // given the published MurmurHash3_x86_32 test vectors / when hashed / then equal
        assertThat(hash("", 0)).isEqualTo(0);
        assertThat(hash("", 1)).isEqualTo(0x514E28B7);
        assertThat(hash("", 0xffffffff)).isEqualTo(0x81F16F39);
        assertThat(hash("abc", 0)).isEqualTo(0xB3DD93FA);
        assertThat(hash("aaaa", 0x9747b28c)).isEqualTo(0x5A97808A);
        assertThat(hash("Hello, world!", 0x9747b28c)).isEqualTo(0x24884CBA);
        assertThat(hash("The quick brown fox jumps over the lazy dog", 0x9747b28c)).isEqualTo(0x2FA826CD);
    }
}
