package io.clawfleet.shared.workspace;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads a tenant's {@code .mcp.json}: the stdio MCP servers its admin chats may use, in the Claude Desktop
 * form {@code {"mcpServers": {"<name>": {"command": "...", "args": [...], "env": {"NAME": "${NAME}"}}}}},
 * plus Clawfleet's {@code timeoutMs} and {@code network}. A server entry with a problem is left out and
 * the problem says which server and what is wrong; the others stand. Environment values never come from
 * the file: each name listed under {@code env} is taken from the sandbox node's environment, when
 * {@code sandbox.allowedEnv} allows it, as for code skills.
 */
public final class McpServers {

    /**
     * One stdio server.
     *
     * @param name      its name in the file; tools appear as {@code mcp__<name>__<tool>}
     * @param command   the program to start on the sandbox node (a name looked up on the run's PATH, or an absolute path)
     * @param args      its arguments
     * @param env       names of sandbox node variables to pass (given only where {@code sandbox.allowedEnv} allows them)
     * @param timeoutMs the wall-clock limit of one start-and-exchange, cut to the sandbox's longest; 0 for the default
     * @param network   whether the server asks for network egress (granted only where {@code sandbox.egress} has {@code mcp})
     */
    public record Server(String name, String command, List<String> args, List<String> env, long timeoutMs, boolean network) {
        public Server {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(command, "command");
            args = List.copyOf(args);
            env = List.copyOf(env);
        }
    }

    /** The servers that can be used, in file order, the entries left out with why, and the limits applied. */
    public record ServerSet(List<Server> servers, List<SkillParser.Problem> problems, List<SkillParser.Problem> notes) {
        public ServerSet {
            servers = List.copyOf(servers);
            problems = List.copyOf(problems);
            notes = List.copyOf(notes);
        }

        public Server server(String name) {
            return servers.stream().filter(s -> s.name().equals(name)).findFirst().orElse(null);
        }
    }

    /** Every MCP tool's wire name starts with this. */
    public static final String PREFIX = "mcp__";
    /** Between server and tool in a wire name. */
    public static final String SEPARATOR = "__";

    private static final Pattern SERVER_NAME = Pattern.compile("[A-Za-z0-9]+([-_][A-Za-z0-9]+)*");
    private static final int MAX_SERVER_NAME = 32;
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final Pattern WIRE_UNSAFE = Pattern.compile("[^A-Za-z0-9_-]");
    private static final Set<String> KEYS = Set.of("command", "args", "env", "timeoutMs", "network", "type");
    private static final int MAX_ARGS = 64;

    private McpServers() {
    }

    /** The servers {@code content} declares; an empty or absent file declares none. */
    public static ServerSet parse(String content, long maxTimeoutMs) {
        if (content == null || content.isBlank()) {
            return new ServerSet(List.of(), List.of(), List.of());
        }
        JsonObject root;
        try {
            root = new JsonObject(content);
        } catch (DecodeException | ClassCastException e) {
            return fileProblem("is not a JSON object: " + firstLine(e.getMessage()));
        }
        Object servers = root.getValue("mcpServers");
        if (!(servers instanceof JsonObject entries)) {
            return fileProblem("needs an object \"mcpServers\" of servers by name, e.g. "
                    + "{\"mcpServers\": {\"files\": {\"command\": \"mcp-files\", \"args\": []}}}");
        }
        List<Server> found = new ArrayList<>();
        List<SkillParser.Problem> problems = new ArrayList<>();
        List<SkillParser.Problem> notes = new ArrayList<>();
        for (Map.Entry<String, Object> entry : entries) {
            try {
                Server server = server(entry.getKey(), entry.getValue(), maxTimeoutMs, notes);
                found.add(server);
            } catch (IllegalArgumentException e) {
                problems.add(new SkillParser.Problem(WorkspacePaths.MCP, "server '" + entry.getKey() + "': " + e.getMessage()));
            }
        }
        return new ServerSet(found, problems, notes);
    }

    private static Server server(String name, Object value, long maxTimeoutMs, List<SkillParser.Problem> notes) {
        if (name.length() > MAX_SERVER_NAME || !SERVER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("a server name is 1 to " + MAX_SERVER_NAME + " letters and digits, "
                    + "single '-' or '_' between them (it becomes part of the tool names mcp__<server>__<tool>)");
        }
        if (!(value instanceof JsonObject entry)) {
            throw new IllegalArgumentException("expected an object with \"command\"");
        }
        for (String key : entry.fieldNames()) {
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown key \"" + key + "\"; allowed: command, args, env, timeoutMs, network, type");
            }
        }
        Object type = entry.getValue("type");
        if (type != null && !"stdio".equals(type)) {
            throw new IllegalArgumentException("only stdio servers are supported (\"type\": \"stdio\"), not " + type);
        }
        if (!(entry.getValue("command") instanceof String command) || command.isBlank()) {
            throw new IllegalArgumentException("\"command\" must be a non-empty string: the program to start");
        }
        return new Server(name, command, args(entry.getValue("args")), env(entry.getValue("env")),
                timeout(name, entry.getValue("timeoutMs"), maxTimeoutMs, notes), network(entry.getValue("network")));
    }

    private static List<String> args(Object value) {
        if (value == null) {
            return List.of();
        }
        if (!(value instanceof JsonArray array) || array.size() > MAX_ARGS || array.stream().anyMatch(a -> !(a instanceof String))) {
            throw new IllegalArgumentException("\"args\" must be an array of at most " + MAX_ARGS + " strings");
        }
        return array.stream().map(String.class::cast).toList();
    }

    /** Names only: a value is a reference to the sandbox node's variable of the same name, never a literal. */
    private static List<String> env(Object value) {
        if (value == null) {
            return List.of();
        }
        if (!(value instanceof JsonObject object)) {
            throw new IllegalArgumentException("\"env\" must be an object of variable names, e.g. {\"API_TOKEN\": \"${API_TOKEN}\"}");
        }
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, Object> variable : object) {
            String name = variable.getKey();
            if (!ENV_NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("'" + name + "' in \"env\" is not an environment variable name");
            }
            if (!("${" + name + "}").equals(variable.getValue()) && !"".equals(variable.getValue())) {
                throw new IllegalArgumentException("\"env\": " + name + " must be \"${" + name + "}\": values come from the "
                        + "sandbox node's environment (where sandbox.allowedEnv allows them), never from this file");
            }
            names.add(name);
        }
        return names;
    }

    private static long timeout(String name, Object value, long maxTimeoutMs, List<SkillParser.Problem> notes) {
        if (value == null) {
            return 0;
        }
        if (!(value instanceof Number number) || number.doubleValue() != number.longValue() || number.longValue() <= 0) {
            throw new IllegalArgumentException("\"timeoutMs\" must be a positive whole number of milliseconds");
        }
        if (number.longValue() > maxTimeoutMs) {
            notes.add(new SkillParser.Problem(WorkspacePaths.MCP, "server '" + name + "': timeoutMs " + number.longValue()
                    + " is cut to the sandbox's longest run, " + maxTimeoutMs + " ms (sandbox.maxTimeoutMs)"));
            return maxTimeoutMs;
        }
        return number.longValue();
    }

    private static boolean network(Object value) {
        if (value != null && !(value instanceof Boolean)) {
            throw new IllegalArgumentException("\"network\" must be true or false");
        }
        return Boolean.TRUE.equals(value);
    }

    /**
     * The name a server's tool has on the wire: {@code mcp__<server>__<tool>}, every character an OpenAI
     * function name does not allow (letters, digits, '_' and '-' only) replaced by '_', and a name longer
     * than 64 characters cut, with a hash of the tool's real name, so two long names stay apart.
     */
    public static String wireName(String server, String tool) {
        String name = PREFIX + server + SEPARATOR + WIRE_UNSAFE.matcher(tool).replaceAll("_");
        if (name.length() <= CodeSkillParser.MAX_WIRE_NAME) {
            return name;
        }
        String hash = hash(tool);
        return name.substring(0, CodeSkillParser.MAX_WIRE_NAME - hash.length() - 1) + "_" + hash;
    }

    /** The server a wire name or sandbox tool name ({@code mcp__<server>[__<tool>]}) names, or null. */
    public static String serverOf(String name) {
        if (!name.startsWith(PREFIX)) {
            return null;
        }
        int end = name.indexOf(SEPARATOR, PREFIX.length());
        return end < 0 ? name.substring(PREFIX.length()) : name.substring(PREFIX.length(), end);
    }

    private static String hash(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 4);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private static ServerSet fileProblem(String message) {
        return new ServerSet(List.of(), List.of(new SkillParser.Problem(WorkspacePaths.MCP, WorkspacePaths.MCP + " " + message)),
                List.of());
    }

    private static String firstLine(String message) {
        String text = String.valueOf(message);
        int newline = text.indexOf('\n');
        return newline < 0 ? text : text.substring(0, newline);
    }
}
