package io.clawfleet.testkit.mockllm;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The Anthropic Messages API face of the mock model ({@code POST /v1/messages}). It checks what the
 * real API checks (headers, alternating roles, every tool_use answered by a tool_result right after),
 * so a provider that translates wrongly fails here and not first in production.
 */
final class AnthropicMock {

    private final LongSupplier callIds;
    private final PromptCache cache = new PromptCache();

    AnthropicMock(LongSupplier callIds) {
        this.callIds = Objects.requireNonNull(callIds);
    }

    void answer(HttpServerRequest request, JsonObject body, long requestNumber) {
        HttpServerResponse response = request.response();
        String header = request.getHeader("x-api-key");
        if (header == null || header.isBlank()) {
            error(response, 401, "authentication_error", "x-api-key header is required");
            return;
        }
        if (request.getHeader("anthropic-version") == null) {
            error(response, 400, "invalid_request_error", "anthropic-version header is required");
            return;
        }
        String invalid = invalid(body);
        if (invalid != null) {
            error(response, 400, "invalid_request_error", invalid);
            return;
        }
        JsonArray messages = body.getJsonArray("messages");
        List<JsonObject> content = new ArrayList<>();
        List<String> toolNames = new ArrayList<>();
        body.getJsonArray("tools", new JsonArray()).forEach(tool -> toolNames.add(((JsonObject) tool).getString("name")));
        MockScript.Reply decision = reply(messages, body.containsKey("tools"), toolNames);
        switch (decision) {
            case MockScript.Fail fail -> {
                error(response, fail.status(), errorType(fail.status()), "scripted failure");
                return;
            }
            case MockScript.Calls calls -> {
                for (MockScript.Call call : calls.calls()) {
                    content.add(new JsonObject().put("type", "tool_use").put("id", "toolu_mock_" + callIds.getAsLong())
                            .put("name", call.name()).put("input", MockScript.argumentsObject(call.arguments())));
                }
            }
            case MockScript.Text reply -> content.add(text(reply.text()));
        }
        JsonObject message = message(body, content, decision instanceof MockScript.Calls ? "tool_use" : "end_turn", requestNumber);
        if (body.getBoolean("stream", false)) {
            stream(response, message);
        } else {
            json(response, 200, message);
        }
    }

    /**
     * The answer, with usage as Anthropic counts it: tools, system and messages are the input; with a system block
     * marked {@code cache_control}, the prefix up to it (tools, then the system blocks through that one) is read
     * from the cache when an earlier request had it ({@code cache_read_input_tokens}) and written otherwise
     * ({@code cache_creation_input_tokens}), from 1,024 tokens on; {@code input_tokens} is the rest.
     */
    private JsonObject message(JsonObject body, List<JsonObject> content, String stopReason, long requestNumber) {
        String tools = body.getJsonArray("tools", new JsonArray()).encode();
        Object system = body.getValue("system", "");
        int total = Math.max(1, (tools.length() + body.getJsonArray("messages").encode().length()
                + String.valueOf(system).length()) / 4);
        int read = 0;
        int written = 0;
        if (system instanceof JsonArray systemBlocks) {
            JsonArray through = new JsonArray();
            for (int i = 0; i < systemBlocks.size(); i++) {
                through.add(systemBlocks.getValue(i));
                if (systemBlocks.getValue(i) instanceof JsonObject block && block.containsKey("cache_control")) {
                    String prefix = tools + through.encode();
                    if (prefix.length() / 4 >= 1_024) {
                        if (cache.seenBefore(prefix)) {
                            read = prefix.length() / 4;
                        } else {
                            written = prefix.length() / 4;
                        }
                    }
                    break;
                }
            }
        }
        JsonArray blocks = new JsonArray(new ArrayList<>(content));
        return new JsonObject().put("id", "msg_mock_" + requestNumber).put("type", "message")
                .put("role", "assistant").put("model", body.getString("model")).put("content", blocks)
                .put("stop_reason", stopReason).putNull("stop_sequence")
                .put("usage", new JsonObject().put("input_tokens", Math.max(1, total - read - written))
                        .put("cache_read_input_tokens", read).put("cache_creation_input_tokens", written)
                        .put("output_tokens", Math.max(1, blocks.encode().length() / 4)));
    }

    /** What the script says to the last user text, given the tool rounds since (their results when there were some). */
    private static MockScript.Reply reply(JsonArray messages, boolean toolsOffered, List<String> toolNames) {
        List<JsonObject> last = blocks(messages.getJsonObject(messages.size() - 1));
        List<String> results = toolResults(messages, last);
        int lastUser = messages.size() - 1;
        while (lastUser > 0 && !isUserText(messages.getJsonObject(lastUser))) {
            lastUser--;
        }
        int rounds = 0;
        for (int i = lastUser + 1; i < messages.size(); i++) {
            JsonObject m = messages.getJsonObject(i);
            if ("assistant".equals(m.getString("role"))
                    && blocks(m).stream().anyMatch(b -> "tool_use".equals(b.getString("type")))) {
                rounds++;
            }
        }
        return MockScript.decide(textOf(blocks(messages.getJsonObject(lastUser))), toolsOffered, toolNames, rounds,
                String.join("\n", results));
    }

    private static boolean isUserText(JsonObject message) {
        return "user".equals(message.getString("role"))
                && blocks(message).stream().noneMatch(b -> "tool_result".equals(b.getString("type")));
    }

    /** The real API's event sequence: start, per block start/deltas/stop, delta with stop reason, stop. */
    private static void stream(HttpServerResponse response, JsonObject message) {
        response.setChunked(true).putHeader("content-type", "text/event-stream").putHeader("cache-control", "no-cache");
        JsonObject usage = message.getJsonObject("usage");
        JsonObject start = message.copy().put("content", new JsonArray()).putNull("stop_reason")
                .put("usage", usage.copy().put("output_tokens", 1));
        event(response, "message_start", new JsonObject().put("message", start));
        event(response, "ping", new JsonObject());
        JsonArray content = message.getJsonArray("content");
        for (int i = 0; i < content.size(); i++) {
            JsonObject block = content.getJsonObject(i);
            if ("tool_use".equals(block.getString("type"))) {
                event(response, "content_block_start", new JsonObject().put("index", i)
                        .put("content_block", block.copy().put("input", new JsonObject())));
                for (String piece : MockScript.pieces(block.getJsonObject("input").encode(), 7)) {
                    event(response, "content_block_delta", new JsonObject().put("index", i)
                            .put("delta", new JsonObject().put("type", "input_json_delta").put("partial_json", piece)));
                }
            } else {
                event(response, "content_block_start", new JsonObject().put("index", i).put("content_block", text("")));
                for (String word : block.getString("text").split("(?<= )")) {
                    event(response, "content_block_delta", new JsonObject().put("index", i)
                            .put("delta", new JsonObject().put("type", "text_delta").put("text", word)));
                }
            }
            event(response, "content_block_stop", new JsonObject().put("index", i));
        }
        event(response, "message_delta", new JsonObject()
                .put("delta", new JsonObject().put("stop_reason", message.getString("stop_reason")).putNull("stop_sequence"))
                .put("usage", new JsonObject().put("output_tokens", usage.getInteger("output_tokens"))));
        event(response, "message_stop", new JsonObject());
        response.end();
    }

    private static void event(HttpServerResponse response, String type, JsonObject data) {
        response.write("event: " + type + "\ndata: " + data.copy().put("type", type).encode() + "\n\n");
    }

    /** What the real API would refuse with 400, or null. */
    private static String invalid(JsonObject body) {
        if (!(body.getValue("model") instanceof String model) || model.isBlank()) {
            return "model: field required";
        }
        if (!(body.getValue("max_tokens") instanceof Number max) || max.intValue() < 1) {
            return "max_tokens: field required, a positive integer";
        }
        if (!(body.getValue("messages") instanceof JsonArray messages) || messages.isEmpty()) {
            return "messages: at least one message is required";
        }
        String invalid = invalidMessages(messages);
        return invalid != null ? invalid : invalidTools(body.getValue("tools"));
    }

    private static String invalidMessages(JsonArray messages) {
        Set<String> openToolUses = new HashSet<>();
        for (int i = 0; i < messages.size(); i++) {
            JsonObject message = messages.getJsonObject(i);
            String role = message.getString("role");
            String expected = i % 2 == 0 ? "user" : "assistant";
            if (!expected.equals(role)) {
                return "messages." + i + ".role: expected '" + expected + "' (roles alternate, starting with user), got '" + role + "'";
            }
            Set<String> asked = new HashSet<>();
            for (JsonObject block : blocks(message)) {
                String type = block.getString("type");
                if ("text".equals(type) && block.getString("text", "").isEmpty()) {
                    return "messages." + i + ": text content blocks must be non-empty";
                }
                if ("tool_use".equals(type)) {
                    if (!"assistant".equals(role) || !(block.getValue("input") instanceof JsonObject)) {
                        return "messages." + i + ": tool_use blocks belong to assistant messages and need an object input";
                    }
                    asked.add(block.getString("id"));
                }
                if ("tool_result".equals(type) && !openToolUses.remove(block.getString("tool_use_id"))) {
                    return "messages." + i + ": tool_result block(s) with id " + block.getString("tool_use_id")
                            + " do not answer a tool_use block of the previous message";
                }
            }
            if (!openToolUses.isEmpty()) {
                return "messages." + i + ": tool_use ids were found without tool_result blocks immediately after: " + openToolUses;
            }
            openToolUses.addAll(asked);
        }
        return null;
    }

    private static String invalidTools(Object tools) {
        if (tools != null) {
            for (Object tool : (JsonArray) tools) {
                if (!(tool instanceof JsonObject t) || t.getString("name") == null || t.getJsonObject("input_schema") == null) {
                    return "tools: every tool needs a name and an input_schema object";
                }
            }
        }
        return null;
    }

    /** "tool <name> said: <result>" for each tool_result in the last message, names from the tool_use blocks before. */
    private static List<String> toolResults(JsonArray messages, List<JsonObject> last) {
        Map<String, String> names = new HashMap<>();
        if (messages.size() > 1) {
            for (JsonObject block : blocks(messages.getJsonObject(messages.size() - 2))) {
                if ("tool_use".equals(block.getString("type"))) {
                    names.put(block.getString("id"), block.getString("name"));
                }
            }
        }
        List<String> out = new ArrayList<>();
        for (JsonObject block : last) {
            if ("tool_result".equals(block.getString("type"))) {
                Object content = block.getValue("content");
                String text = content instanceof JsonArray parts ? textOf(blocks(new JsonObject().put("content", parts)))
                        : String.valueOf(content == null ? "" : content);
                out.add("tool " + names.getOrDefault(block.getString("tool_use_id"), "?") + " said: " + text);
            }
        }
        return out;
    }

    private static List<JsonObject> blocks(JsonObject message) {
        Object content = message.getValue("content");
        List<JsonObject> out = new ArrayList<>();
        if (content instanceof String text) {
            out.add(text(text));
        } else if (content instanceof JsonArray parts) {
            for (Object part : parts) {
                if (part instanceof JsonObject block) {
                    out.add(block);
                }
            }
        }
        return out;
    }

    private static String textOf(List<JsonObject> blocks) {
        StringBuilder out = new StringBuilder();
        for (JsonObject block : blocks) {
            if ("text".equals(block.getString("type"))) {
                out.append(block.getString("text", ""));
            }
        }
        return out.toString();
    }

    private static JsonObject text(String text) {
        return new JsonObject().put("type", "text").put("text", text);
    }

    private static String errorType(int status) {
        return switch (status) {
            case 400 -> "invalid_request_error";
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 404 -> "not_found_error";
            case 429 -> "rate_limit_error";
            case 529 -> "overloaded_error";
            default -> "api_error";
        };
    }

    static void error(HttpServerResponse response, int status, String type, String message) {
        json(response, status, new JsonObject().put("type", "error")
                .put("error", new JsonObject().put("type", type).put("message", message)));
    }

    private static void json(HttpServerResponse response, int status, JsonObject body) {
        response.setStatusCode(status).putHeader("content-type", "application/json").end(Buffer.buffer(body.encode()));
    }
}
