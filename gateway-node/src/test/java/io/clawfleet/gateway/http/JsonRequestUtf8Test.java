package io.clawfleet.gateway.http;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link JsonRequest#isUtf8}: the same verdict as the JDK's strict decoder of the whole body, without its text. */
class JsonRequestUtf8Test {

    /** The check as it was: the whole body decoded strictly into a string. */
    private static boolean decodesStrictly(byte[] bytes) {
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    private static byte[] bytes(int... values) {
        byte[] bytes = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            bytes[i] = (byte) values[i];
        }
        return bytes;
    }

    @Test
    void wellFormedTextOfEveryWidthIsUtf8() {
        String text = "{\"content\":\"plain, \u00e9t\u00e9, \u4e2d\u6587, \ud83d\ude00, \u0000 and \uffff\"}";
        assertThat(JsonRequest.isUtf8(text.getBytes(StandardCharsets.UTF_8))).isTrue();
        assertThat(JsonRequest.isUtf8(new byte[0])).isTrue();
    }

    @Test
    void whatTheStrictDecoderRefusesIsRefused() {
        byte[][] malformed = {
                bytes(0x80),                         // a continuation byte alone
                bytes(0xC3),                         // a two-byte form cut at the end
                bytes(0xC0, 0xAF),                   // overlong '/'
                bytes(0xE0, 0x80, 0xAF),             // overlong, three bytes
                bytes(0xED, 0xA0, 0x80),             // a UTF-16 surrogate written as UTF-8
                bytes(0xF4, 0x90, 0x80, 0x80),       // past U+10FFFF
                bytes(0xF8, 0x88, 0x80, 0x80, 0x80), // a five-byte form
                bytes(0xFF),
        };
        for (byte[] bad : malformed) {
            assertThat(decodesStrictly(bad)).as(Arrays.toString(bad)).isFalse();
            assertThat(JsonRequest.isUtf8(bad)).as(Arrays.toString(bad)).isFalse();
        }
    }

    @Test
    void aLongBodyIsJudgedWholeAcrossTheSlicesItIsCheckedIn() {
        // a long ASCII body with a four-byte character placed over each position around the slice size
        for (int at = 4_090; at < 4_100; at++) {
            byte[] body = new byte[12_000];
            Arrays.fill(body, (byte) 'a');
            byte[] emoji = "\ud83d\ude00".getBytes(StandardCharsets.UTF_8);
            System.arraycopy(emoji, 0, body, at, emoji.length);
            assertThat(JsonRequest.isUtf8(body)).as("a whole character at %d", at).isTrue();
            body[at + 3] = 'a'; // its last byte gone: cut short in the middle of the body
            assertThat(JsonRequest.isUtf8(body)).as("a cut character at %d", at).isFalse();
        }
        byte[] cutAtTheEnd = new byte[9_000];
        Arrays.fill(cutAtTheEnd, (byte) 'a');
        cutAtTheEnd[8_999] = (byte) 0xE2;
        assertThat(JsonRequest.isUtf8(cutAtTheEnd)).isFalse();
    }

    @Test
    void randomBytesGetTheStrictDecodersVerdict() {
        Random random = new Random(19);
        int refused = 0;
        for (int i = 0; i < 20_000; i++) {
            // mostly text with a few stray bytes, so both verdicts come up often
            String text = "x\u00e9\u4e2d\ud83d\ude00 ".repeat(random.nextInt(2_000));
            byte[] body = text.getBytes(StandardCharsets.UTF_8);
            int strays = body.length == 0 ? 0 : random.nextInt(3);
            for (int s = 0; s < strays; s++) {
                body[random.nextInt(body.length)] = (byte) random.nextInt(256);
            }
            boolean expected = decodesStrictly(body);
            refused += expected ? 0 : 1;
            assertThat(JsonRequest.isUtf8(body)).as("body %d", i).isEqualTo(expected);
        }
        assertThat(refused).isBetween(2_000, 18_000);
    }
}
