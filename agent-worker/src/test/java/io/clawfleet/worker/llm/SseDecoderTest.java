package io.clawfleet.worker.llm;

import io.vertx.core.buffer.Buffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SseDecoderTest {

    private final List<SseDecoder.Event> events = new ArrayList<>();
    private final SseDecoder decoder = new SseDecoder(1_024, events::add);

    @Test
    void eventsSurviveAnyChunkBoundaryEvenInsideACharacter() {
        // given a stream cut into 1-byte chunks, through a two-byte character / when fed / then the events are whole
        byte[] bytes = "event: content_block_delta\r\ndata: {\"text\":\"héllo\"}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n"
                .getBytes(StandardCharsets.UTF_8);
        for (byte b : bytes) {
            decoder.feed(Buffer.buffer(new byte[] {b}));
        }
        assertThat(events).containsExactly(
                new SseDecoder.Event("content_block_delta", "{\"text\":\"héllo\"}"),
                new SseDecoder.Event("message", "[DONE]"));
    }

    @Test
    void dataLinesOfOneEventAreJoinedByNewlines() {
        decoder.feed(Buffer.buffer("data: first\ndata: second\n\n"));
        assertThat(events).containsExactly(new SseDecoder.Event("message", "first\nsecond"));
    }

    @Test
    void aLastEventWithoutItsBlankLineStillCounts() {
        decoder.feed(Buffer.buffer("data: tail"));
        decoder.end();
        assertThat(events).containsExactly(new SseDecoder.Event("message", "tail"));
    }

    @Test
    void anEventIdCarriesOverToLaterEventsUntilTheServerClearsIt() {
        // given a priming event with only an id, then events with and without ids
        decoder.feed(Buffer.buffer("id: 7\n\ndata: a\n\nid: 8\ndata: b\n\nid\ndata: c\n\n"));
        // then each event names the last id the stream gave before it ended
        assertThat(events).containsExactly(new SseDecoder.Event("message", "a", "7"),
                new SseDecoder.Event("message", "b", "8"), new SseDecoder.Event("message", "c"));
    }

    @Test
    void anOversizedEventFailsTheStream() {
        assertThatThrownBy(() -> decoder.feed(Buffer.buffer("data: " + "x".repeat(2_000))))
                .isInstanceOf(LlmException.class).hasMessageContaining("over 1024 bytes");
    }
}
