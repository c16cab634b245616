package io.clawfleet.gateway.delivery;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SendPacerTest {

    private static final long SECOND = 1_000_000_000L;

    @Test
    void aChatGetsABurstThenOneMessageASecond() {
        SendPacer pacer = new SendPacer(30_000);
        long now = 0;
        for (int i = 0; i < SendPacer.CHAT_BURST; i++) {
            assertThat(pacer.reserve(1, "42", now)).as("burst " + i).isZero();
        }
        assertThat(pacer.reserve(1, "42", now)).isEqualTo(SECOND);
        assertThat(pacer.reserve(1, "42", now)).isEqualTo(2 * SECOND);
        // another chat of the same bot is not held back by this one
        assertThat(pacer.reserve(1, "43", now)).isZero();
        // a second later one more token is there
        assertThat(pacer.reserve(1, "42", now + 3 * SECOND)).isZero();
    }

    @Test
    void aGroupGetsTwentyAMinute() {
        SendPacer pacer = new SendPacer(30_000);
        for (int i = 0; i < SendPacer.CHAT_BURST; i++) {
            pacer.reserve(1, "-100123", 0);
        }
        assertThat(pacer.reserve(1, "-100123", 0)).isEqualTo(3 * SECOND);
    }

    @Test
    void aBotGetsThirtyASecondAcrossItsChatsAndALongWaitIsNotTaken() {
        SendPacer pacer = new SendPacer(30_000);
        for (int i = 0; i < SendPacer.BOT_BURST; i++) {
            assertThat(pacer.reserve(7, "chat-" + i, 0)).isZero();
        }
        assertThat(pacer.reserve(7, "chat-x", 0)).isEqualTo(SECOND / 30 + 1);
        // a chat far behind: a wait over 5 s is refused and costs nothing
        for (int i = 0; i < 8; i++) {
            assertThat(pacer.reserve(8, "busy", 0)).isEqualTo(Math.max(0, i - 2) * SECOND);
        }
        assertThat(pacer.reserve(8, "busy", 0)).isEqualTo(-1);
        assertThat(pacer.reserve(8, "busy", 0)).isEqualTo(-1);
        assertThat(pacer.reserve(8, "busy", SECOND)).isEqualTo(5 * SECOND);
    }

    @Test
    void aWaitStaysWellInsideTheDeliveryClaim() {
        // with claims of 3 s, no wait over 1 s: another gateway must not take the reply over while this one waits
        SendPacer pacer = new SendPacer(3_000);
        assertThat(pacer.maxWaitNanos()).isEqualTo(SECOND);
        for (int i = 0; i < SendPacer.CHAT_BURST + 1; i++) {
            assertThat(pacer.reserve(9, "c", 0)).isLessThanOrEqualTo(SECOND);
        }
        assertThat(pacer.reserve(9, "c", 0)).isEqualTo(-1);
    }
}
