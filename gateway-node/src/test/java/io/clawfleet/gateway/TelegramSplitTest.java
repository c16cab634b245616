package io.clawfleet.gateway;

import io.clawfleet.gateway.telegram.TelegramSenderAccess;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TelegramSplitTest {

    @Test
    void longRepliesAreSplitAtTelegramsLimitPreferringLineBreaks() {
        String line = "x".repeat(3000);
        List<String> parts = TelegramSenderAccess.split(line + "\n" + line + "\n" + line);
        assertThat(parts).hasSize(3).allSatisfy(part -> assertThat(part).hasSizeLessThanOrEqualTo(4096));
        assertThat(String.join("\n", parts)).isEqualTo(line + "\n" + line + "\n" + line);
    }

    @Test
    void aLongLineWithoutBreaksIsCutAtTheLimit() {
        List<String> parts = TelegramSenderAccess.split("y".repeat(9000));
        assertThat(parts).extracting(String::length).containsExactly(4096, 4096, 808);
    }
}
