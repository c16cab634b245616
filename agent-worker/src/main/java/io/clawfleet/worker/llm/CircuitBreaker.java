package io.clawfleet.worker.llm;

import java.util.function.LongSupplier;

/**
 * The circuit breaker of one model provider: it opens after a number of consecutive failures, so a
 * provider that is down is skipped instead of costing every call its timeouts and retries; after a
 * cooldown it lets one trial call through (half-open), which closes it on success and opens it again
 * on failure. Results that arrive while open (calls started before it opened) change nothing.
 */
public final class CircuitBreaker {

    /** Where the breaker stands. */
    public enum State { CLOSED, OPEN, HALF_OPEN }

    private final int failureThreshold;
    private final long cooldownMs;
    private final LongSupplier clockMs;
    private State state = State.CLOSED;
    private int failures;
    private long openedAtMs;

    /**
     * @param failureThreshold consecutive failures that open the circuit
     * @param cooldownMs       how long it stays open before a trial call
     * @param clockMs          the time in ms (injected so tests need not wait)
     */
    public CircuitBreaker(int failureThreshold, long cooldownMs, LongSupplier clockMs) {
        if (failureThreshold < 1 || cooldownMs < 0) {
            throw new IllegalArgumentException("failureThreshold must be at least 1 and cooldownMs not negative");
        }
        this.failureThreshold = failureThreshold;
        this.cooldownMs = cooldownMs;
        this.clockMs = clockMs;
    }

    // Methods are synchronized although the router runs on one event loop: uncontended, it costs
    // nothing, and a second caller thread would otherwise corrupt the state silently.

    /** Whether a call may go now. When the cooldown is over, exactly one caller gets the trial. */
    public synchronized boolean tryAcquire() {
        return switch (state) {
            case CLOSED -> true;
            case HALF_OPEN -> false;
            case OPEN -> {
                if (clockMs.getAsLong() - openedAtMs < cooldownMs) {
                    yield false;
                }
                state = State.HALF_OPEN;
                yield true;
            }
        };
    }

    public synchronized void onSuccess() {
        if (state != State.OPEN) {
            state = State.CLOSED;
            failures = 0;
        }
    }

    /** @return true when this failure opened the circuit */
    public synchronized boolean onFailure() {
        switch (state) {
            case OPEN -> {
                return false;
            }
            case HALF_OPEN -> {
                open();
                return true;
            }
            default -> {
                if (++failures >= failureThreshold) {
                    open();
                    return true;
                }
                return false;
            }
        }
    }

    private void open() {
        state = State.OPEN;
        openedAtMs = clockMs.getAsLong();
        failures = 0;
    }

    public synchronized State state() {
        return state;
    }

    /** Milliseconds until a trial call is allowed; 0 unless open. */
    public synchronized long remainingCooldownMs() {
        return state == State.OPEN ? Math.max(0, cooldownMs - (clockMs.getAsLong() - openedAtMs)) : 0;
    }
}
