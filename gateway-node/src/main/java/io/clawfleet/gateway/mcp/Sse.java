package io.clawfleet.gateway.mcp;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;

/**
 * One Server-Sent Events stream of an MCP response or of a session's notifications. It keeps the connection alive
 * through proxies with a comment every {@link #KEEP_ALIVE_MS}; all calls run on the request's event loop.
 */
final class Sse {

    static final long KEEP_ALIVE_MS = 15_000;

    private final HttpServerResponse response;
    private final Vertx vertx;
    private final long keepAlive;

    private Sse(Vertx vertx, HttpServerResponse response) {
        this.vertx = vertx;
        this.response = response;
        this.keepAlive = vertx.setPeriodic(KEEP_ALIVE_MS, id -> {
            if (open()) {
                response.write(": keep-alive\n\n");
            }
        });
        response.endHandler(v -> vertx.cancelTimer(keepAlive));
        response.closeHandler(v -> vertx.cancelTimer(keepAlive));
    }

    static Sse start(Vertx vertx, HttpServerResponse response, String sessionId) {
        response.setStatusCode(200).setChunked(true)
                .putHeader("content-type", "text/event-stream")
                .putHeader("cache-control", "no-cache, no-transform")
                .putHeader("x-accel-buffering", "no");
        if (sessionId != null) {
            response.putHeader(McpEndpoint.SESSION_HEADER, sessionId);
        }
        return new Sse(vertx, response);
    }

    boolean open() {
        return !response.ended() && !response.closed();
    }

    /** An event; {@code id} may be null (not resumable). */
    void send(String id, JsonObject message) {
        if (open()) {
            response.write((id == null ? "" : "id: " + id + "\n") + "data: " + message.encode() + "\n\n");
        }
    }

    /** An event with an id and empty data: primes the client to reconnect with Last-Event-ID (SEP-1699). */
    void prime(String id) {
        if (open()) {
            response.write("id: " + id + "\ndata: \n\n");
        }
    }

    void end() {
        vertx.cancelTimer(keepAlive);
        if (open()) {
            response.end();
        }
    }

    void onClose(Runnable action) {
        response.closeHandler(v -> {
            vertx.cancelTimer(keepAlive);
            action.run();
        });
    }
}
