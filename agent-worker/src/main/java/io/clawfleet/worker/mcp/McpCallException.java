package io.clawfleet.worker.mcp;

import java.util.Objects;

/**
 * A call to a remote MCP server that failed, sorted by what went wrong so the caller can tell a tenant's
 * mistake (a refused URL, a tool's error) from a server in trouble (which its circuit breaker counts).
 * The message never holds the caller's header values (credentials).
 */
public final class McpCallException extends RuntimeException {

    /** What went wrong. */
    public enum Kind {
        /** The SSRF guard said no, or the URL is bad (or the session was closed): nothing was sent. */
        REFUSED,
        /** The connection failed or broke, or the server answered 429 or 5xx. */
        UNREACHABLE,
        /** No answer within the exchange's time limit; the request was reset. */
        TIMEOUT,
        /** The answer (a JSON body or one event) was over the size limit; the request was reset. */
        TOO_LARGE,
        /** The server broke the protocol: bad JSON, wrong content type, no response for the id, a 4xx. */
        PROTOCOL,
        /** The server answered with a JSON-RPC error: {@link #code()} and the message are the server's. */
        ERROR
    }

    private final Kind kind;
    private final int code;

    /**
     * @param code the JSON-RPC error code for {@link Kind#ERROR}, the HTTP status where there was one, else 0
     */
    public McpCallException(Kind kind, int code, String message) {
        this(kind, code, message, null);
    }

    public McpCallException(Kind kind, int code, String message, Throwable cause) {
        super(message, cause);
        this.kind = Objects.requireNonNull(kind);
        this.code = code;
    }

    public Kind kind() {
        return kind;
    }

    /** The JSON-RPC error code for {@link Kind#ERROR}, the HTTP status where there was one, else 0. */
    public int code() {
        return code;
    }

    /**
     * Whether the server may be at fault, so the failure counts against its circuit breaker: not for a refused
     * URL, a JSON-RPC error (the server worked and said no) or an answer over our own size limit.
     */
    public boolean serverFault() {
        return switch (kind) {
            case UNREACHABLE, TIMEOUT, PROTOCOL -> true;
            case REFUSED, ERROR, TOO_LARGE -> false;
        };
    }
}
