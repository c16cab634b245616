package io.clawfleet.gateway.mcp;

import io.vertx.core.json.JsonObject;

/** JSON-RPC 2.0 messages as MCP uses them, and its error codes. */
final class JsonRpc {

    static final int PARSE_ERROR = -32700;
    static final int INVALID_REQUEST = -32600;
    static final int METHOD_NOT_FOUND = -32601;
    static final int INVALID_PARAMS = -32602;
    static final int INTERNAL_ERROR = -32603;
    /** MCP: a session the server does not know (sent with HTTP 404). */
    static final int SESSION_NOT_FOUND = -32001;
    /** MCP: a resource that does not exist. */
    static final int RESOURCE_NOT_FOUND = -32002;
    /** Server-defined: the tenant is at a limit (sessions, rates); the data says when to retry. */
    static final int LIMIT_REACHED = -32029;

    private JsonRpc() {
    }

    /** A request's failure, told to the client as a JSON-RPC error. */
    static final class Failure extends RuntimeException {
        final int code;
        final JsonObject data;

        Failure(int code, String message) {
            this(code, message, null);
        }

        Failure(int code, String message, JsonObject data) {
            super(message, null, false, false);
            this.code = code;
            this.data = data;
        }
    }

    static Failure invalidParams(String message) {
        return new Failure(INVALID_PARAMS, message);
    }

    static JsonObject result(Object id, JsonObject result) {
        return new JsonObject().put("jsonrpc", "2.0").put("id", id).put("result", result);
    }

    static JsonObject error(Object id, int code, String message, JsonObject data) {
        JsonObject error = new JsonObject().put("code", code).put("message", message);
        if (data != null) {
            error.put("data", data);
        }
        return new JsonObject().put("jsonrpc", "2.0").put("id", id).put("error", error);
    }

    static JsonObject notification(String method, JsonObject params) {
        JsonObject message = new JsonObject().put("jsonrpc", "2.0").put("method", method);
        if (params != null) {
            message.put("params", params);
        }
        return message;
    }

    /** Whether a value may be a request id: a string or a number (MCP: never null). */
    static boolean validId(Object id) {
        return id instanceof String || id instanceof Number;
    }
}
