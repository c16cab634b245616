package io.clawfleet.worker.llm;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class CircuitBreakerTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final CircuitBreaker breaker = new CircuitBreaker(3, 30_000, now::get);

    @Test
    void opensAfterTheThresholdOfConsecutiveFailures() {
        breaker.onFailure();
        breaker.onFailure();
        assertThat(breaker.tryAcquire()).isTrue();
        assertThat(breaker.onFailure()).isTrue();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
        assertThat(breaker.tryAcquire()).isFalse();
    }

    @Test
    void aSuccessResetsTheCount() {
        breaker.onFailure();
        breaker.onFailure();
        breaker.onSuccess();
        breaker.onFailure();
        breaker.onFailure();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    @Test
    void afterTheCooldownOneTrialGoesAndItsSuccessCloses() {
        open();
        now.addAndGet(29_999);
        assertThat(breaker.tryAcquire()).isFalse();
        assertThat(breaker.remainingCooldownMs()).isEqualTo(1);
        now.addAndGet(1);
        assertThat(breaker.tryAcquire()).isTrue();
        assertThat(breaker.tryAcquire()).as("only one trial at a time").isFalse();
        breaker.onSuccess();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(breaker.tryAcquire()).isTrue();
    }

    @Test
    void aFailedTrialOpensAgainForAFullCooldown() {
        open();
        now.addAndGet(30_000);
        assertThat(breaker.tryAcquire()).isTrue();
        assertThat(breaker.onFailure()).isTrue();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
        assertThat(breaker.remainingCooldownMs()).isEqualTo(30_000);
    }

    @Test
    void lateResultsOfCallsStartedBeforeOpeningChangeNothing() {
        open();
        breaker.onSuccess();
        breaker.onFailure();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
        assertThat(breaker.remainingCooldownMs()).isEqualTo(30_000);
    }

    private void open() {
        for (int i = 0; i < 3; i++) {
            breaker.onFailure();
        }
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
    }
}
