package io.clawfleet.shared.node;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class LogThrottleTest {

    @Test
    void oneLinePerIntervalCarryingTheCountOfThoseHeldBack() {
        LogThrottle throttle = new LogThrottle(10, TimeUnit.SECONDS);
        long t = 1_000_000_000L;
        assertThat(throttle.admit(t)).isZero();
        assertThat(throttle.admit(t + 1)).isEqualTo(-1);
        assertThat(throttle.admit(t + TimeUnit.SECONDS.toNanos(9))).isEqualTo(-1);
        assertThat(throttle.admit(t + TimeUnit.SECONDS.toNanos(10))).isEqualTo(2);
        assertThat(throttle.admit(t + TimeUnit.SECONDS.toNanos(11))).isEqualTo(-1);
        assertThat(throttle.admit(t + TimeUnit.SECONDS.toNanos(30))).isEqualTo(1);
    }
}
