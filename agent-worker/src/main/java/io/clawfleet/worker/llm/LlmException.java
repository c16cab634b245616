package io.clawfleet.worker.llm;

/**
 * A model call that failed.
 *
 * @see #retryable() whether the same request may succeed later (429, 5xx, connection trouble)
 */
public final class LlmException extends RuntimeException {

    private final int status;
    private final boolean retryable;
    private final long retryAfterMs;

    public LlmException(String message, int status, boolean retryable, long retryAfterMs, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.retryable = retryable;
        this.retryAfterMs = retryAfterMs;
    }

    /** HTTP status, or 0 when no response came. */
    public int status() {
        return status;
    }

    public boolean retryable() {
        return retryable;
    }

    /** The server's Retry-After in ms, or -1. */
    public long retryAfterMs() {
        return retryAfterMs;
    }
}
