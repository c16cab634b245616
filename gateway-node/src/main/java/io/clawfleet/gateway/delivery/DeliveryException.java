package io.clawfleet.gateway.delivery;

/**
 * A send that failed.
 *
 * @see #retryable() whether trying again later may work (rate limit, server error, network)
 */
public final class DeliveryException extends RuntimeException {

    private final boolean retryable;
    private final long retryAfterMs;

    public DeliveryException(String message, boolean retryable, long retryAfterMs) {
        super(message, null, false, false);
        this.retryable = retryable;
        this.retryAfterMs = retryAfterMs;
    }

    public boolean retryable() {
        return retryable;
    }

    /** What the channel asked us to wait, or -1. */
    public long retryAfterMs() {
        return retryAfterMs;
    }
}
