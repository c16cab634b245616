package io.clawfleet.gateway.mcp;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.McpSessionStore;
import io.clawfleet.shared.store.WorkspaceEntry;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.workspace.Skill;
import io.clawfleet.shared.workspace.SkillParser;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What a bot offers as an MCP server, besides talking to it ({@link McpTurns}): its chats and their history and its
 * memory through tools, its workspace files as resources, its skills as prompts. Every read is of this one bot of this
 * one tenant. Files whose path has a segment starting with '.' ({@code .mcp.json}: server commands and their
 * settings) are not offered.
 */
final class BotMcp {

    static final String SEND_MESSAGE = "send_message";
    /** The log levels of MCP (RFC 5424's), from the least severe. */
    static final List<String> LOG_LEVELS = List.of("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency");
    private static final int PAGE = 500;
    private static final int MAX_HISTORY = 200;
    private static final int MAX_CHATS = 200;
    private static final int MAX_SUBSCRIPTIONS = 100;
    private static final int MAX_MEMORY_FILES = 200;
    private static final int MAX_HITS = 100;

    private final ChatStore chats;
    private final WorkspaceStore workspace;
    private final McpSessionStore sessions;

    BotMcp(ChatStore chats, WorkspaceStore workspace, McpSessionStore sessions) {
        this.chats = Objects.requireNonNull(chats);
        this.workspace = Objects.requireNonNull(workspace);
        this.sessions = Objects.requireNonNull(sessions);
    }

    /** Whether a session set to {@code sessionLevel} is sent a log line of {@code level}. */
    static boolean logs(String sessionLevel, String level) {
        return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(sessionLevel);
    }

    static JsonObject capabilities() {
        return new JsonObject()
                .put("tools", new JsonObject().put("listChanged", false))
                .put("resources", new JsonObject().put("subscribe", true).put("listChanged", true))
                .put("prompts", new JsonObject().put("listChanged", true))
                .put("logging", new JsonObject());
    }

    /** The answer to one request of a session; a failed future with {@link JsonRpc.Failure} is a JSON-RPC error. */
    Future<JsonObject> handle(McpSessionStore.Session session, String method, JsonObject params) {
        BotRef bot = session.bot();
        return switch (method) {
            case "ping" -> Future.succeededFuture(new JsonObject());
            case "logging/setLevel" -> {
                String level = params.getValue("level") instanceof String l ? l : null;
                if (level == null || !LOG_LEVELS.contains(level)) {
                    yield Future.failedFuture(JsonRpc.invalidParams("params.level must be one of " + LOG_LEVELS));
                }
                yield sessions.setLogLevel(session.hash(), level).map(v -> new JsonObject());
            }
            case "tools/list" -> Future.succeededFuture(new JsonObject().put("tools", tools()));
            case "tools/call" -> callTool(session, params);
            case "resources/list" -> resources(bot, params);
            case "resources/templates/list" -> Future.succeededFuture(new JsonObject().put("resourceTemplates", new JsonArray()
                    .add(new JsonObject().put("uriTemplate", uriPrefix(bot) + "{+path}").put("name", "workspace-file")
                            .put("title", "A file of the bot's workspace")
                            .put("description", "Any file of the bot's workspace by its path, e.g. memory/MEMORY.md"))));
            case "resources/read" -> read(bot, params);
            case "resources/subscribe", "resources/unsubscribe" -> {
                String uri = stringParam(params, "uri");
                path(bot, uri);
                yield sessions.subscribe(session.hash(), uri, method.endsWith("/subscribe"), MAX_SUBSCRIPTIONS)
                        .compose(done -> done ? Future.succeededFuture(new JsonObject())
                                : Future.failedFuture(JsonRpc.invalidParams("a session may subscribe to " + MAX_SUBSCRIPTIONS
                                + " resources at most; unsubscribe from some first")));
            }
            case "prompts/list" -> skills(bot).map(skills -> {
                JsonArray prompts = new JsonArray();
                skills.forEach(skill -> prompts.add(new JsonObject().put("name", skill.name()).put("description", skill.description())
                        .put("arguments", new JsonArray())));
                return new JsonObject().put("prompts", prompts);
            });
            case "prompts/get" -> {
                String name = stringParam(params, "name");
                yield skills(bot).compose(skills -> skills.stream().filter(s -> s.name().equals(name)).findFirst()
                        .map(skill -> Future.succeededFuture(new JsonObject().put("description", skill.description())
                                .put("messages", new JsonArray().add(new JsonObject().put("role", "user")
                                        .put("content", new JsonObject().put("type", "text").put("text", skill.body()))))))
                        .orElseGet(() -> Future.failedFuture(JsonRpc.invalidParams("no prompt '" + name
                                + "': this bot's prompts are its skills (prompts/list)"))));
            }
            default -> Future.failedFuture(new JsonRpc.Failure(JsonRpc.METHOD_NOT_FOUND, "method not found: " + method));
        };
    }

    // ---- tools

    static JsonArray tools() {
        return new JsonArray()
                .add(tool(SEND_MESSAGE, "Send a message to the bot and get its reply",
                        "Sends a message to the bot in a chat and returns the bot's reply. The chat keeps its history: later "
                                + "messages to the same chat continue the conversation. With a progressToken the reply is "
                                + "streamed as progress notifications.",
                        props().put("text", string("What to say to the bot"))
                                .put("chat", string("The chat to talk in (default: this session's own chat)"))
                                .put("messageId", string("Your id of this message: sending it again (a retry) gives the same "
                                        + "single reply. Default: derived from the session and the request id")),
                        List.of("text"), false))
                .add(tool("list_chats", "List the bot's chats",
                        "The bot's chats on every channel, the most recently active first.",
                        props().put("limit", integer("How many (1 to " + MAX_CHATS + ", default 50)"))
                                .put("before", string("Only chats last active before this time (ISO-8601), to page on")),
                        List.of(), true))
                .add(tool("read_history", "Read a chat's history",
                        "The last messages of one of the bot's chats (what users said and what the bot answered), oldest first.",
                        props().put("chat", string("The chat (as list_chats names it; default: this session's own chat)"))
                                .put("channel", string("Its channel (default: mcp)"))
                                .put("limit", integer("How many messages (1 to " + MAX_HISTORY + ", default 20)")),
                        List.of(), true))
                .add(tool("search_memory", "Search the bot's memory",
                        "Finds the lines of the bot's long-term memory files (memory/) that contain every word of the query, "
                                + "case-insensitively.",
                        props().put("query", string("Words to look for"))
                                .put("limit", integer("How many lines at most (1 to " + MAX_HITS + ", default 20)")),
                        List.of("query"), true));
    }

    private static JsonObject tool(String name, String title, String description, JsonObject properties, List<String> required,
                                   boolean readOnly) {
        return new JsonObject().put("name", name).put("title", title).put("description", description)
                .put("inputSchema", new JsonObject().put("type", "object").put("properties", properties)
                        .put("required", new JsonArray(required)).put("additionalProperties", false))
                .put("annotations", new JsonObject().put("title", title).put("readOnlyHint", readOnly)
                        .put("destructiveHint", false).put("idempotentHint", readOnly).put("openWorldHint", false));
    }

    private static JsonObject props() {
        return new JsonObject();
    }

    private static JsonObject string(String description) {
        return new JsonObject().put("type", "string").put("description", description);
    }

    private static JsonObject integer(String description) {
        return new JsonObject().put("type", "integer").put("description", description);
    }

    private Future<JsonObject> callTool(McpSessionStore.Session session, JsonObject params) {
        BotRef bot = session.bot();
        String name = stringParam(params, "name");
        JsonObject args = params.getValue("arguments") == null ? new JsonObject()
                : params.getValue("arguments") instanceof JsonObject a ? a : null;
        if (args == null) {
            return Future.failedFuture(JsonRpc.invalidParams("params.arguments must be an object"));
        }
        return switch (name) {
            case "list_chats" -> listChats(bot, args);
            case "read_history" -> readHistory(bot, args, McpTurns.defaultChat(session));
            case "search_memory" -> searchMemory(bot, args);
            default -> Future.failedFuture(JsonRpc.invalidParams("unknown tool '" + name + "'; this bot's tools: send_message, "
                    + "list_chats, read_history, search_memory"));
        };
    }

    private Future<JsonObject> listChats(BotRef bot, JsonObject args) {
        int limit = intArg(args, "limit", 50, 1, MAX_CHATS);
        Instant before;
        try {
            before = args.getValue("before") == null ? null : Instant.parse(stringArg(args, "before", 64));
        } catch (java.time.format.DateTimeParseException e) {
            return Future.failedFuture(JsonRpc.invalidParams("arguments.before must be an ISO-8601 time like 2026-11-25T10:00:00Z"));
        }
        return chats.list(bot, limit, before).map(list -> {
            JsonArray items = new JsonArray();
            StringBuilder text = new StringBuilder(list.isEmpty() ? "The bot has no chats yet." : "");
            for (ChatStore.Listed chat : list) {
                items.add(new JsonObject().put("channel", chat.channel()).put("chat", chat.chatKey())
                        .put("name", chat.displayName()).put("messages", chat.messages())
                        .put("lastMessageAt", chat.lastMessageAt().toString()));
                text.append(chat.channel()).append('/').append(chat.chatKey()).append(" — ").append(chat.messages())
                        .append(" messages, last at ").append(chat.lastMessageAt()).append('\n');
            }
            return toolResult(text.toString().strip(), new JsonObject().put("chats", items));
        });
    }

    /** read_history of a chat; {@code defaultChat} is the session's own. */
    private Future<JsonObject> readHistory(BotRef bot, JsonObject args, String defaultChat) {
        String chat = args.getValue("chat") == null ? defaultChat : stringArg(args, "chat", 256);
        String channel = args.getValue("channel") == null ? McpTurns.CHANNEL : stringArg(args, "channel", 64);
        int limit = intArg(args, "limit", 20, 1, MAX_HISTORY);
        return chats.history(bot, channel, chat, limit).map(lines -> {
            JsonArray items = new JsonArray();
            StringBuilder text = new StringBuilder(lines.isEmpty() ? "No messages in " + channel + "/" + chat + "." : "");
            for (ChatStore.Line line : lines) {
                items.add(new JsonObject().put("role", line.role()).put("sender", line.senderId()).put("text", line.text())
                        .put("at", line.at().toString()));
                text.append(line.role().equals("user") ? "user" : "bot").append(": ").append(line.text()).append("\n\n");
            }
            return toolResult(text.toString().strip(), new JsonObject().put("channel", channel).put("chat", chat)
                    .put("messages", items));
        });
    }

    private Future<JsonObject> searchMemory(BotRef bot, JsonObject args) {
        String query = stringArg(args, "query", 1_000);
        int limit = intArg(args, "limit", 20, 1, MAX_HITS);
        List<String> words = List.of(query.toLowerCase(Locale.ROOT).split("\\s+")).stream().filter(w -> !w.isEmpty()).toList();
        if (words.isEmpty()) {
            return Future.failedFuture(JsonRpc.invalidParams("arguments.query must contain a word"));
        }
        return workspace.entries(bot, "memory").compose(entries -> workspace.readAll(bot, entries.stream()
                        .map(WorkspaceEntry::path).filter(BotMcp::offered).limit(MAX_MEMORY_FILES).toList()))
                .map(files -> {
                    JsonArray hits = new JsonArray();
                    StringBuilder text = new StringBuilder();
                    outer:
                    for (var file : files.values()) {
                        String[] lines = file.content().split("\n", -1);
                        for (int i = 0; i < lines.length; i++) {
                            String lower = lines[i].toLowerCase(Locale.ROOT);
                            if (words.stream().allMatch(lower::contains)) {
                                hits.add(new JsonObject().put("path", file.path()).put("line", i + 1).put("text", lines[i]));
                                text.append(file.path()).append(':').append(i + 1).append(": ").append(lines[i]).append('\n');
                                if (hits.size() >= limit) {
                                    break outer;
                                }
                            }
                        }
                    }
                    return toolResult(hits.isEmpty() ? "Nothing in the bot's memory matches '" + query + "'." : text.toString().strip(),
                            new JsonObject().put("matches", hits));
                });
    }

    static JsonObject toolResult(String text, JsonObject structured) {
        JsonObject result = new JsonObject().put("content", new JsonArray().add(new JsonObject().put("type", "text").put("text", text)));
        if (structured != null) {
            result.put("structuredContent", structured);
        }
        return result.put("isError", false);
    }

    static JsonObject toolError(String text) {
        return new JsonObject().put("content", new JsonArray().add(new JsonObject().put("type", "text").put("text", text)))
                .put("isError", true);
    }

    // ---- resources

    static String uriPrefix(BotRef bot) {
        return "clawfleet://bots/" + bot.botId() + "/workspace/";
    }

    static String uri(BotRef bot, String path) {
        StringBuilder uri = new StringBuilder(uriPrefix(bot));
        String[] segments = path.split("/");
        for (int i = 0; i < segments.length; i++) {
            uri.append(i == 0 ? "" : "/").append(URLEncoder.encode(segments[i], StandardCharsets.UTF_8).replace("+", "%20"));
        }
        return uri.toString();
    }

    /** The workspace path a resource URI of this bot names; invalid params otherwise. */
    static String path(BotRef bot, String uri) {
        String prefix = uriPrefix(bot);
        if (!uri.startsWith(prefix) || uri.length() == prefix.length()) {
            throw JsonRpc.invalidParams("resource URIs of this bot look like " + prefix + "<path>, got '" + uri + "'");
        }
        try {
            String path = WorkspacePaths.normalize(URLDecoder.decode(uri.substring(prefix.length()).replace("+", "%2B"),
                    StandardCharsets.UTF_8));
            if (!offered(path)) {
                throw new JsonRpc.Failure(JsonRpc.RESOURCE_NOT_FOUND, "Resource not found", new JsonObject().put("uri", uri));
            }
            return path;
        } catch (IllegalArgumentException e) {
            throw JsonRpc.invalidParams("'" + uri + "' names no valid workspace path: " + e.getMessage());
        }
    }

    /** Whether a workspace file is offered: not when a segment of its path starts with '.'. */
    static boolean offered(String path) {
        for (String segment : path.split("/")) {
            if (segment.startsWith(".")) {
                return false;
            }
        }
        return true;
    }

    static String mimeType(String path) {
        String lower = path.toLowerCase(Locale.ROOT);
        if (lower.endsWith(".md")) {
            return "text/markdown";
        }
        if (lower.endsWith(".json")) {
            return "application/json";
        }
        if (lower.endsWith(".yaml") || lower.endsWith(".yml")) {
            return "application/yaml";
        }
        return "text/plain";
    }

    private Future<JsonObject> resources(BotRef bot, JsonObject params) {
        String after;
        try {
            after = params.getValue("cursor") == null ? null
                    : new String(Base64.getUrlDecoder().decode(stringParam(params, "cursor")), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(JsonRpc.invalidParams("params.cursor is not a cursor this server gave"));
        }
        return workspace.entries(bot, "").map(entries -> {
            JsonArray resources = new JsonArray();
            String last = null;
            for (WorkspaceEntry entry : entries) {
                if (!offered(entry.path()) || (after != null && entry.path().compareTo(after) <= 0)) {
                    continue;
                }
                if (resources.size() == PAGE) {
                    break;
                }
                resources.add(new JsonObject().put("uri", uri(bot, entry.path())).put("name", entry.path())
                        .put("mimeType", mimeType(entry.path())).put("size", entry.size()));
                last = entry.path();
            }
            JsonObject result = new JsonObject().put("resources", resources);
            String lastListed = last;
            if (lastListed != null && entries.stream().anyMatch(e -> offered(e.path()) && e.path().compareTo(lastListed) > 0)) {
                result.put("nextCursor", Base64.getUrlEncoder().withoutPadding().encodeToString(last.getBytes(StandardCharsets.UTF_8)));
            }
            return result;
        });
    }

    private Future<JsonObject> read(BotRef bot, JsonObject params) {
        String uri = stringParam(params, "uri");
        String path = path(bot, uri);
        return workspace.read(bot, path).compose(file -> file
                .map(f -> Future.succeededFuture(new JsonObject().put("contents", new JsonArray().add(new JsonObject()
                        .put("uri", uri).put("mimeType", mimeType(path)).put("text", f.content())))))
                .orElseGet(() -> Future.failedFuture(new JsonRpc.Failure(JsonRpc.RESOURCE_NOT_FOUND, "Resource not found",
                        new JsonObject().put("uri", uri)))));
    }

    // ---- prompts

    private Future<List<Skill>> skills(BotRef bot) {
        return workspace.list(bot, WorkspacePaths.SKILLS_DIR).map(files -> {
            List<Skill> skills = new ArrayList<>();
            for (var file : files) {
                if (WorkspacePaths.isSkillFile(file.path())) {
                    try {
                        skills.add(SkillParser.parse(file.path(), file.content()));
                    } catch (RuntimeException e) {
                        // A skill that does not parse is not offered (the workspace API and the bot's turns say why).
                    }
                }
            }
            return skills;
        });
    }

    // ---- parameters

    static String stringParam(JsonObject params, String name) {
        if (params.getValue(name) instanceof String value && !value.isEmpty()) {
            return value;
        }
        throw JsonRpc.invalidParams("params." + name + " must be a non-empty string");
    }

    static String stringArg(JsonObject args, String name, int max) {
        if (args.getValue(name) instanceof String value && !value.isBlank() && value.length() <= max) {
            return value;
        }
        throw JsonRpc.invalidParams("arguments." + name + " must be a string of 1 to " + max + " characters");
    }

    static int intArg(JsonObject args, String name, int defaultValue, int min, int max) {
        Object value = args.getValue(name);
        if (value == null) {
            return defaultValue;
        }
        if (value instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()) && n.longValue() >= min && n.longValue() <= max) {
            return n.intValue();
        }
        throw JsonRpc.invalidParams("arguments." + name + " must be an integer from " + min + " to " + max);
    }
}
