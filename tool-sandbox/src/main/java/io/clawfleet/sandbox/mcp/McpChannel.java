package io.clawfleet.sandbox.mcp;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * The client side of one stdio MCP connection: JSON-RPC 2.0, one message per line, request ids counted up over
 * the connection's life. Requests the server makes of the client are answered ({@code ping}) or refused (anything
 * else: this client declares no capabilities); its notifications, and answers to ids not asked for, are skipped.
 * A request returns its result, or null with {@link #failure()} saying why; {@link #usable()} tells whether the
 * connection can take another request after that. Blocking; one request at a time.
 */
final class McpChannel {

    /** Pages of a tool list read at most: a server that pages for ever is cut off. */
    private static final int MAX_PAGES = 20;
    private static final int METHOD_NOT_FOUND = -32601;

    private final BufferedReader reader;
    private final Writer writer;
    private long nextId = 1;
    private long sent;
    private String failure;
    private boolean usable = true;

    McpChannel(InputStream stdout, OutputStream stdin) {
        this.reader = new BufferedReader(new InputStreamReader(stdout, StandardCharsets.UTF_8));
        this.writer = new OutputStreamWriter(stdin, StandardCharsets.UTF_8);
    }

    /** {@code initialize} (waiting for its answer), then {@code notifications/initialized}: the server's answer, or null. */
    JsonObject initialize() {
        JsonObject answer = request("initialize", new JsonObject().put("protocolVersion", McpSession.PROTOCOL_VERSION)
                .put("capabilities", new JsonObject()).put("clientInfo", new JsonObject().put("name", "clawfleet").put("version", "1")));
        if (answer == null) {
            return null;
        }
        try {
            send(new JsonObject().put("jsonrpc", "2.0").put("method", "notifications/initialized"));
        } catch (IOException e) {
            fail(e.getMessage() + " before answering initialize", false);
            return null;
        }
        return answer;
    }

    /** {@code tools/list} (every page, as one {@code {"tools": [...]}}) or one other request: its result, or null. */
    JsonObject exchange(String method, JsonObject params) {
        return method.equals(McpSession.LIST) ? list() : request(method, params);
    }

    private JsonObject list() {
        JsonArray tools = new JsonArray();
        String cursor = null;
        for (int page = 0; page < MAX_PAGES; page++) {
            JsonObject answer = request(McpSession.LIST, cursor == null ? new JsonObject() : new JsonObject().put("cursor", cursor));
            if (answer == null) {
                return null;
            }
            if (answer.getValue("tools") instanceof JsonArray some) {
                tools.addAll(some);
            }
            if (!(answer.getValue("nextCursor") instanceof String next) || next.isEmpty()) {
                break;
            }
            cursor = next;
        }
        return new JsonObject().put("tools", tools);
    }

    /** Sends a request and reads until its answer: its result, or null with {@link #failure} set. */
    private JsonObject request(String name, JsonObject parameters) {
        long id = nextId++;
        try {
            send(new JsonObject().put("jsonrpc", "2.0").put("id", id).put("method", name).put("params", parameters));
            return answer(id, name);
        } catch (IOException e) {
            return fail(e.getMessage() + " before answering " + name, false);
        }
    }

    private JsonObject answer(long id, String name) throws IOException {
        while (true) {
            String line = reader.readLine();
            if (line == null) {
                return fail("the server closed its output before answering " + name, false);
            }
            if (line.isBlank()) {
                continue;
            }
            JsonObject message;
            try {
                message = new JsonObject(line);
            } catch (DecodeException | ClassCastException e) {
                return fail("the server wrote something other than JSON-RPC on stdout before answering " + name + ": "
                        + McpSession.cut(line, 200), false);
            }
            if (message.getValue("method") instanceof String asked) {
                if (message.containsKey("id")) {
                    answerServer(message.getValue("id"), asked);
                }
                continue;
            }
            if (!(message.getValue("id") instanceof Number number) || number.longValue() != id) {
                continue;
            }
            if (message.getValue("error") instanceof JsonObject error) {
                return fail("the server answered " + name + " with error " + error.getValue("code") + ": " + error.getValue("message"), true);
            }
            if (!(message.getValue("result") instanceof JsonObject answer)) {
                return fail("the server's answer to " + name + " has no result object", true);
            }
            failure = null;
            return answer;
        }
    }

    private JsonObject fail(String why, boolean stillUsable) {
        failure = why;
        usable = usable && stillUsable;
        return null;
    }

    private void answerServer(Object id, String asked) throws IOException {
        JsonObject reply = new JsonObject().put("jsonrpc", "2.0").put("id", id);
        if (asked.equals("ping")) {
            reply.put("result", new JsonObject());
        } else {
            reply.put("error", new JsonObject().put("code", METHOD_NOT_FOUND).put("message", asked + " is not supported by this client"));
        }
        send(reply);
    }

    private void send(JsonObject message) throws IOException {
        try {
            writer.write(message.encode());
            writer.write('\n');
            writer.flush();
            sent++;
        } catch (IOException e) {
            throw new IOException("the server closed its input (" + e.getMessage() + ")", e);
        }
    }

    /** Why the last request failed, or null. */
    String failure() {
        return failure;
    }

    /**
     * Whether the connection is still in step after the last request: false once the server's output ended, broke,
     * or carried something other than JSON-RPC, so that nothing more can be read from it with confidence.
     */
    boolean usable() {
        return usable;
    }

    /** Messages written so far: unchanged across a request means the server never received it. */
    long sent() {
        return sent;
    }
}
