package io.clawfleet.sandbox.mcp;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * One exchange with a stdio MCP server, as the MCP client side: JSON-RPC 2.0, one message per line.
 * {@code initialize} (waiting for its answer), {@code notifications/initialized}, then one request:
 * {@code tools/list} (every page) or {@code tools/call}. Requests the server makes of the client are
 * answered ({@code ping}) or refused (anything else: this client declares no capabilities); its
 * notifications are ignored. Blocking, on the sandbox's dialogue thread; the server is stopped after.
 */
public final class McpSession implements ProcessSandbox.Dialogue {

    public static final String PROTOCOL_VERSION = "2025-06-18";
    public static final String LIST = "tools/list";
    public static final String CALL = "tools/call";
    /** Pages of a tool list read at most: a server that pages for ever is cut off. */
    private static final int MAX_PAGES = 20;
    private static final int METHOD_NOT_FOUND = -32601;

    private final String method;
    private final JsonObject params;
    private volatile String stage = "initialize";
    private volatile JsonObject result;
    private volatile String failure;

    /** @param params the request's params (for {@code tools/list}, ignored) */
    public McpSession(String method, JsonObject params) {
        this.method = Objects.requireNonNull(method);
        this.params = Objects.requireNonNull(params);
    }

    @Override
    public void talk(OutputStream stdin, InputStream stdout) {
        BufferedReader reader = new BufferedReader(new InputStreamReader(stdout, StandardCharsets.UTF_8));
        Writer writer = new java.io.OutputStreamWriter(stdin, StandardCharsets.UTF_8);
        try {
            JsonObject initialized = request(reader, writer, 1, "initialize", new JsonObject()
                    .put("protocolVersion", PROTOCOL_VERSION).put("capabilities", new JsonObject())
                    .put("clientInfo", new JsonObject().put("name", "clawfleet").put("version", "1")));
            if (initialized == null) {
                return;
            }
            send(writer, new JsonObject().put("jsonrpc", "2.0").put("method", "notifications/initialized"));
            stage = method;
            result = method.equals(LIST) ? list(reader, writer) : request(reader, writer, 2, method, params);
        } catch (IOException e) {
            failure = e.getMessage() + " before answering " + stage;
        }
    }

    /** Every page of the tool list, as one {@code {"tools": [...]}}. */
    private JsonObject list(BufferedReader reader, Writer writer) throws IOException {
        JsonArray tools = new JsonArray();
        String cursor = null;
        for (int page = 0; page < MAX_PAGES; page++) {
            JsonObject answer = request(reader, writer, 2 + page, LIST, cursor == null ? new JsonObject()
                    : new JsonObject().put("cursor", cursor));
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
    private JsonObject request(BufferedReader reader, Writer writer, long id, String name, JsonObject parameters) throws IOException {
        send(writer, new JsonObject().put("jsonrpc", "2.0").put("id", id).put("method", name).put("params", parameters));
        while (true) {
            String line = reader.readLine();
            if (line == null) {
                failure = "the server closed its output before answering " + name;
                return null;
            }
            if (line.isBlank()) {
                continue;
            }
            JsonObject message;
            try {
                message = new JsonObject(line);
            } catch (DecodeException | ClassCastException e) {
                failure = "the server wrote something other than JSON-RPC on stdout before answering " + name + ": " + cut(line, 200);
                return null;
            }
            if (message.getValue("method") instanceof String asked) {
                if (message.containsKey("id")) {
                    answerServer(writer, message.getValue("id"), asked);
                }
                continue;
            }
            if (!(message.getValue("id") instanceof Number number) || number.longValue() != id) {
                continue;
            }
            if (message.getValue("error") instanceof JsonObject error) {
                failure = "the server answered " + name + " with error " + error.getValue("code") + ": " + error.getValue("message");
                return null;
            }
            if (!(message.getValue("result") instanceof JsonObject answer)) {
                failure = "the server's answer to " + name + " has no result object";
                return null;
            }
            return answer;
        }
    }

    private static void answerServer(Writer writer, Object id, String asked) throws IOException {
        JsonObject reply = new JsonObject().put("jsonrpc", "2.0").put("id", id);
        if (asked.equals("ping")) {
            reply.put("result", new JsonObject());
        } else {
            reply.put("error", new JsonObject().put("code", METHOD_NOT_FOUND).put("message", asked + " is not supported by this client"));
        }
        send(writer, reply);
    }

    private static void send(Writer writer, JsonObject message) throws IOException {
        try {
            writer.write(message.encode());
            writer.write('\n');
            writer.flush();
        } catch (IOException e) {
            throw new IOException("the server closed its input (" + e.getMessage() + ")", e);
        }
    }

    /** What the exchange was doing when it ended: {@code initialize}, or the request's method. */
    public String stage() {
        return stage;
    }

    /** The request's result, or null when it has none (see {@link #failure}, or the run's time or output limit). */
    public JsonObject result() {
        return result;
    }

    /** Why the exchange failed, or null. */
    public String failure() {
        return failure;
    }

    /**
     * A {@code tools/call} result as text for the model: text parts joined by newlines; other parts
     * described (an image or audio by type and size, a resource by its URI, an embedded text resource
     * by its text), never dropped silently; the structured content when there are no parts.
     */
    public static String text(JsonObject result) {
        StringBuilder out = new StringBuilder();
        JsonArray content = result.getValue("content") instanceof JsonArray parts ? parts : new JsonArray();
        for (Object item : content) {
            if (!out.isEmpty()) {
                out.append('\n');
            }
            out.append(item instanceof JsonObject part ? part(part) : "[content part that is not an object: " + cut(String.valueOf(item), 100) + "]");
        }
        if (content.isEmpty() && result.getValue("structuredContent") != null) {
            out.append(io.vertx.core.json.Json.encode(result.getValue("structuredContent")));
        }
        return out.toString();
    }

    private static String part(JsonObject part) {
        String type = String.valueOf(part.getValue("type"));
        return switch (type) {
            case "text" -> String.valueOf(part.getValue("text"));
            case "image", "audio" -> "[" + type + " " + part.getValue("mimeType") + ", about " + decodedBytes(part.getValue("data"))
                    + " bytes, not shown]";
            case "resource_link" -> "[resource link: " + part.getValue("uri") + (part.getValue("name") == null ? "" : " (" + part.getValue("name") + ")") + "]";
            case "resource" -> part.getValue("resource") instanceof JsonObject resource && resource.getValue("text") instanceof String text
                    ? text
                    : "[resource " + (part.getValue("resource") instanceof JsonObject r ? r.getValue("uri") + " (" + r.getValue("mimeType") + ")" : "")
                    + ", binary, not shown]";
            default -> "[" + type + " content, not shown]";
        };
    }

    private static long decodedBytes(Object data) {
        return data instanceof String base64 ? base64.length() * 3L / 4 : 0;
    }

    private static String cut(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max) + "...";
    }
}
