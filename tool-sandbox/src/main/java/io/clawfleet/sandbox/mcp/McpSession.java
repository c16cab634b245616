package io.clawfleet.sandbox.mcp;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.Objects;

/**
 * One exchange with a stdio MCP server, as the MCP client side ({@link McpChannel}): {@code initialize}
 * (waiting for its answer), {@code notifications/initialized}, then one request: {@code tools/list} (every
 * page) or {@code tools/call}. Blocking, on the sandbox's dialogue thread; the server is stopped after. Warm
 * servers that serve many calls are {@link WarmSessions}'; this is the path of a call that runs on its own.
 */
public final class McpSession implements ProcessSandbox.Dialogue {

    public static final String PROTOCOL_VERSION = "2025-06-18";
    public static final String LIST = "tools/list";
    public static final String CALL = "tools/call";

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
        McpChannel channel = new McpChannel(stdout, stdin);
        if (channel.initialize() == null) {
            failure = channel.failure();
            return;
        }
        stage = method;
        result = channel.exchange(method, params);
        failure = channel.failure();
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

    static String cut(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max) + "...";
    }
}
