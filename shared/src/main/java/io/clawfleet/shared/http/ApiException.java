package io.clawfleet.shared.http;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.UUID;

/**
 * A failure that knows its HTTP status and error code. Raised anywhere, turned into a response once,
 * at the edge, as {@code {"error":{"code","message"}}}.
 */
public final class ApiException extends RuntimeException {

    private static final Logger LOG = LoggerFactory.getLogger(ApiException.class);

    private final int status;
    private final String code;
    private final long retryAfterSeconds;
    /** Response headers beyond Retry-After (the RateLimit headers of a 429); insertion order. */
    private final java.util.Map<String, String> headers = new java.util.LinkedHashMap<>();

    public ApiException(int status, String code, String message) {
        this(status, code, message, -1);
    }

    public ApiException(int status, String code, String message, long retryAfterSeconds) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** Adds a response header to send with this error; returns this. */
    public ApiException withHeader(String name, String value) {
        headers.put(name, value);
        return this;
    }

    public java.util.Map<String, String> headers() {
        return java.util.Collections.unmodifiableMap(headers);
    }

    public static ApiException badRequest(String message) {
        return new ApiException(400, "invalid_request", message);
    }

    public static ApiException invalidJson(String message) {
        return new ApiException(400, "invalid_json", message);
    }

    public static ApiException unauthorized(String message) {
        return new ApiException(401, "unauthorized", message);
    }

    public static ApiException notFound(String message) {
        return new ApiException(404, "not_found", message);
    }

    public static ApiException unavailable(String message, long retryAfterSeconds) {
        return new ApiException(503, "unavailable", message, retryAfterSeconds);
    }

    /**
     * A 503 for a failure whose text (a database's or an exception's words) must not reach the caller:
     * it is logged under a short error id, and the answer says what could not be done and names the id.
     */
    public static ApiException unavailable(String what, Throwable cause, long retryAfterSeconds) {
        String errorId = errorId(cause, what);
        return new ApiException(503, "unavailable", what + " right now (error id " + errorId + ")", retryAfterSeconds);
    }

    /** Logs {@code cause} under a new short id, for answers that must not carry its text; returns the id. */
    public static String errorId(Throwable cause, String what) {
        String errorId = UUID.randomUUID().toString().substring(0, 8);
        LOG.warn("{} [error id: {}]: {}", what, errorId, String.valueOf(cause));
        return errorId;
    }

    public int status() {
        return status;
    }

    public String code() {
        return code;
    }

    /** Seconds for a Retry-After header, or -1 for none. */
    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
