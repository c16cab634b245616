package io.clawfleet.gateway.admission;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class RateLimiterTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final RateLimiter limiter = new RateLimiter(3, 1, TimeUnit.SECONDS, 100, now::get);

    @Test
    void allowsABurstUpToThePermitsThenSaysHowLongToWait() {
        assertThat(limiter.tryAcquire("a")).isZero();
        assertThat(limiter.tryAcquire("a")).isZero();
        assertThat(limiter.tryAcquire("a")).isZero();
        long wait = limiter.tryAcquire("a");
        assertThat(wait).isBetween(TimeUnit.MILLISECONDS.toNanos(300), TimeUnit.MILLISECONDS.toNanos(340));
    }

    @Test
    void refillsOverTime() {
        for (int i = 0; i < 3; i++) {
            limiter.tryAcquire("a");
        }
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(340));
        assertThat(limiter.tryAcquire("a")).isZero();
        assertThat(limiter.tryAcquire("a")).isPositive();
    }

    @Test
    void keysAreIndependent() {
        for (int i = 0; i < 3; i++) {
            limiter.tryAcquire("a");
        }
        assertThat(limiter.tryAcquire("b")).isZero();
    }

    @Test
    void idleBucketsAreForgottenSoTheMapStaysBounded() {
        RateLimiter small = new RateLimiter(1, 1, TimeUnit.SECONDS, 10, now::get);
        for (int i = 0; i < 10; i++) {
            small.tryAcquire("k" + i);
        }
        now.addAndGet(TimeUnit.SECONDS.toNanos(2));
        small.tryAcquire("new");
        assertThat(small.size()).isEqualTo(1);
    }
}
