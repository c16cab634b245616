package io.clawfleet.gateway.delivery;

/**
 * A send that failed.
 *
 * @see #retryable() whether trying again later may work (rate limit, server error, network)
 */
public final class DeliveryException extends RuntimeException {

    private final boolean retryable;
    private final long retryAfterMs;
    private final boolean paced;

    public DeliveryException(String message, boolean retryable, long retryAfterMs) {
        this(message, retryable, retryAfterMs, false);
    }

    private DeliveryException(String message, boolean retryable, long retryAfterMs, boolean paced) {
        super(message, null, false, false);
        this.retryable = retryable;
        this.retryAfterMs = retryAfterMs;
        this.paced = paced;
    }

    /** Not sent, and not tried: the channel's send rate says wait. It does not count as an attempt. */
    public static DeliveryException paced(String message, long retryAfterMs) {
        return new DeliveryException(message, true, retryAfterMs, true);
    }

    /** Whether the send was held back by pacing rather than tried (it costs no attempt). */
    public boolean paced() {
        return paced;
    }

    public boolean retryable() {
        return retryable;
    }

    /** What the channel asked us to wait, or -1. */
    public long retryAfterMs() {
        return retryAfterMs;
    }
}
