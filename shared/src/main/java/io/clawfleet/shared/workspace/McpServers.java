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
 * Reads a bot's {@code .mcp.json}: the MCP servers whose tools its chats may use, in the Claude Desktop / Claude
 * Code form {@code {"mcpServers": {"<name>": {"command": "...", "args": [...], "env": {"NAME": "${NAME}"}}}}} for
 * stdio servers run on sandbox nodes, or {@code {"url": "https://..."}} for remote Streamable HTTP servers, plus
 * Clawfleet's {@code timeoutMs}, {@code network}, {@code access} and {@code tools}. A server entry with a problem
 * is left out and the problem says which server and what is wrong; the others stand. Secrets never come from the
 * file (every chat's bot can read it): each name listed under {@code env} is taken from the sandbox node's
 * environment, when {@code sandbox.allowedEnv} allows it, and a remote server's headers and tokens are given with
 * {@code PUT /api/v1/bots/{botId}/mcp-servers}, where they are sealed ({@link RemoteMcpServers}).
 *
 * <p>Who may use a server's tools follows the seeds (Corebot §12.2: {@code mcp__*} is admin-only): {@code access}
 * {@code "admin"} (the default) or {@code "everyone"}, and per tool in {@code tools}: {@code "admin"},
 * {@code "everyone"} or {@code "off"} ({@link Rules}).
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
    public record Server(String name, String command, List<String> args, List<String> env, long timeoutMs, boolean network,
                         Rules rules) {
        public Server {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(command, "command");
            Objects.requireNonNull(rules, "rules");
            args = List.copyOf(args);
            env = List.copyOf(env);
        }

        /** A server whose tools only admin chats get (the seeds' default). */
        public Server(String name, String command, List<String> args, List<String> env, long timeoutMs, boolean network) {
            this(name, command, args, env, timeoutMs, network, Rules.ADMIN_ONLY);
        }
    }

    /**
     * One remote server, reached over Streamable HTTP from the workers.
     *
     * @param name      its name; tools appear as {@code mcp__<name>__<tool>}
     * @param url       its MCP endpoint (http or https, no user info)
     * @param headers   headers sent with every request (credentials: only from the API, sealed at rest; never from the file)
     * @param timeoutMs the limit of one call; 0 for the default ({@code agent.toolTimeoutMs})
     * @param rules     who may use its tools
     */
    public record Remote(String name, String url, Map<String, String> headers, long timeoutMs, Rules rules) {
        public Remote {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(rules, "rules");
            headers = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(headers));
        }

        /** Without the header values, which are secrets. */
        @Override
        public String toString() {
            return "Remote[" + name + ", " + url + ", headers " + headers.keySet() + ", " + timeoutMs + " ms, " + rules + "]";
        }
    }

    /** Who may use a server's tools: admin chats only, every chat, or (for a single tool) nobody. */
    public enum Access {
        ADMIN, EVERYONE, OFF;

        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** Whether a chat with this role may use a tool under this access. */
        public boolean allows(boolean admin) {
            return this == EVERYONE || this == ADMIN && admin;
        }
    }

    /**
     * A server's access rules: its own ({@code access}), and exceptions per tool by the tool's name on the server
     * ({@code tools}).
     */
    public record Rules(Access server, Map<String, Access> tools) {
        public static final Rules ADMIN_ONLY = new Rules(Access.ADMIN, Map.of());

        public Rules {
            Objects.requireNonNull(server, "server");
            if (server == Access.OFF) {
                throw new IllegalArgumentException("\"access\" is \"admin\" or \"everyone\"; to switch a server off, remove it");
            }
            tools = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(tools));
        }

        /** The access of the server's tool named {@code tool} (its name on the server, not the wire name). */
        public Access of(String tool) {
            return tools.getOrDefault(tool, server);
        }

        /** Whether some chat of this role may use some tool of the server (else it need not be asked for its list). */
        public boolean anyFor(boolean admin) {
            return server.allows(admin) || tools.values().stream().anyMatch(a -> a.allows(admin));
        }

        /** As written in {@code .mcp.json} and the API. */
        public JsonObject json() {
            JsonObject tools = new JsonObject();
            this.tools.forEach((tool, access) -> tools.put(tool, access.id()));
            return new JsonObject().put("access", server.id()).put("tools", tools);
        }
    }

    /** The servers that can be used, in file order, the entries left out with why, and the limits applied. */
    public record ServerSet(List<Server> servers, List<Remote> remote, List<SkillParser.Problem> problems,
                            List<SkillParser.Problem> notes) {
        public ServerSet {
            servers = List.copyOf(servers);
            remote = List.copyOf(remote);
            problems = List.copyOf(problems);
            notes = List.copyOf(notes);
        }

        /** The stdio server of that name, or null. */
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
    private static final Set<String> KEYS = Set.of("command", "args", "env", "timeoutMs", "network", "type", "access", "tools");
    private static final Set<String> REMOTE_KEYS = Set.of("url", "type", "timeoutMs", "access", "tools", "headers");
    private static final int MAX_ARGS = 64;
    /** Per-tool rules a server may have at most. */
    public static final int MAX_TOOL_RULES = 256;
    /** The longest URL of a remote server. */
    public static final int MAX_URL = 2_048;
    /** The longest limit a remote server's call may have, whatever {@code agent.toolTimeoutMs} is. */
    public static final long MAX_REMOTE_TIMEOUT_MS = 600_000;

    private McpServers() {
    }

    /** The servers {@code content} declares; an empty or absent file declares none. */
    public static ServerSet parse(String content, long maxTimeoutMs) {
        if (content == null || content.isBlank()) {
            return new ServerSet(List.of(), List.of(), List.of(), List.of());
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
        List<Remote> remote = new ArrayList<>();
        List<SkillParser.Problem> problems = new ArrayList<>();
        List<SkillParser.Problem> notes = new ArrayList<>();
        for (Map.Entry<String, Object> entry : entries) {
            try {
                checkName(entry.getKey());
                if (entry.getValue() instanceof JsonObject object && object.containsKey("url")) {
                    remote.add(remote(entry.getKey(), object, null));
                } else {
                    found.add(server(entry.getKey(), entry.getValue(), maxTimeoutMs, notes));
                }
            } catch (IllegalArgumentException e) {
                problems.add(new SkillParser.Problem(WorkspacePaths.MCP, "server '" + entry.getKey() + "': " + e.getMessage()));
            }
        }
        return new ServerSet(found, remote, problems, notes);
    }

    /** A server's name must fit in its tools' wire names. */
    public static void checkName(String name) {
        if (name.length() > MAX_SERVER_NAME || !SERVER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("a server name is 1 to " + MAX_SERVER_NAME + " letters and digits, "
                    + "single '-' or '_' between them (it becomes part of the tool names mcp__<server>__<tool>)");
        }
    }

    private static Server server(String name, Object value, long maxTimeoutMs, List<SkillParser.Problem> notes) {
        if (!(value instanceof JsonObject entry)) {
            throw new IllegalArgumentException("expected an object with \"command\" (a stdio server) or \"url\" (a remote one)");
        }
        for (String key : entry.fieldNames()) {
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown key \"" + key + "\"; allowed: command, args, env, timeoutMs, network, "
                        + "type, access, tools (or url, headers for a remote server)");
            }
        }
        Object type = entry.getValue("type");
        if (type != null && !"stdio".equals(type)) {
            throw new IllegalArgumentException("a server with \"command\" is a stdio server (\"type\": \"stdio\"), not " + type
                    + "; a remote server has \"url\" instead of \"command\"");
        }
        if (!(entry.getValue("command") instanceof String command) || command.isBlank()) {
            throw new IllegalArgumentException("\"command\" must be a non-empty string: the program to start");
        }
        return new Server(name, command, args(entry.getValue("args")), env(entry.getValue("env")),
                timeout(name, entry.getValue("timeoutMs"), maxTimeoutMs, notes), network(entry.getValue("network")), rules(entry));
    }

    /**
     * A remote server's entry: {@code url}, {@code timeoutMs}, {@code access}, {@code tools}, and {@code type}
     * {@code "http"} (or {@code "streamable-http"}). {@code headers} are taken only when {@code headers} is given:
     * the API's sealed values; in {@code .mcp.json} (null) they are refused, since every chat's bot may read the file.
     */
    public static Remote remote(String name, JsonObject entry, Map<String, String> headers) {
        checkName(name);
        if (entry.containsKey("command")) {
            throw new IllegalArgumentException("\"command\" and \"url\" exclude each other: a server runs on a sandbox node "
                    + "(command) or is reached over HTTP (url)");
        }
        for (String key : entry.fieldNames()) {
            if (!REMOTE_KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown key \"" + key + "\" for a remote server; allowed: url, type, timeoutMs, "
                        + "access, tools" + (headers == null ? "" : ", headers, bearerToken"));
            }
        }
        Object type = entry.getValue("type");
        if ("sse".equals(type)) {
            throw new IllegalArgumentException("the old HTTP+SSE transport (\"type\": \"sse\") is not supported; give the "
                    + "server's Streamable HTTP endpoint (\"type\": \"http\")");
        }
        if (type != null && !"http".equals(type) && !"streamable-http".equals(type)) {
            throw new IllegalArgumentException("a server with \"url\" is a Streamable HTTP server (\"type\": \"http\"), not " + type);
        }
        if (headers == null && entry.containsKey("headers")) {
            throw new IllegalArgumentException("\"headers\" are not read from " + WorkspacePaths.MCP + ": every chat of the bot "
                    + "can read this file. Give a server's credentials with PUT /api/v1/bots/{botId}/mcp-servers, where they are "
                    + "stored sealed");
        }
        long timeoutMs = 0;
        Object timeout = entry.getValue("timeoutMs");
        if (timeout != null) {
            if (!(timeout instanceof Number number) || number.doubleValue() != number.longValue() || number.longValue() <= 0
                    || number.longValue() > MAX_REMOTE_TIMEOUT_MS) {
                throw new IllegalArgumentException("\"timeoutMs\" must be a whole number of milliseconds from 1 to "
                        + MAX_REMOTE_TIMEOUT_MS);
            }
            timeoutMs = number.longValue();
        }
        return new Remote(name, url(entry.getValue("url")), headers == null ? Map.of() : headers, timeoutMs, rules(entry));
    }

    /** A remote server's URL: http or https, a host, no user info, no fragment. */
    public static String url(Object value) {
        if (!(value instanceof String text) || text.isBlank() || text.length() > MAX_URL) {
            throw new IllegalArgumentException("\"url\" must be the server's MCP endpoint, e.g. \"https://mcp.example.com/mcp\" "
                    + "(at most " + MAX_URL + " characters)");
        }
        java.net.URI uri;
        try {
            uri = new java.net.URI(text);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException("\"url\" is not a URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(java.util.Locale.ROOT);
        if (!scheme.equals("https") && !scheme.equals("http")) {
            throw new IllegalArgumentException("\"url\" must start with https:// (or http://), not " + (scheme.isEmpty() ? "nothing" : scheme));
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new IllegalArgumentException("\"url\" has no host");
        }
        if (uri.getRawUserInfo() != null) {
            throw new IllegalArgumentException("\"url\" may not carry a user name or password; give credentials as headers "
                    + "with PUT /api/v1/bots/{botId}/mcp-servers");
        }
        if (uri.getRawFragment() != null) {
            throw new IllegalArgumentException("\"url\" may not have a fragment (#...)");
        }
        return text;
    }

    /** {@code access} and {@code tools} of an entry; admin-only when absent. */
    public static Rules rules(JsonObject entry) {
        Access server = Access.ADMIN;
        Object access = entry.getValue("access");
        if (access != null) {
            server = access(access, "\"access\"");
            if (server == Access.OFF) {
                throw new IllegalArgumentException("\"access\" is \"admin\" or \"everyone\"; to switch a server off, remove it");
            }
        }
        Object tools = entry.getValue("tools");
        if (tools == null) {
            return new Rules(server, Map.of());
        }
        if (!(tools instanceof JsonObject byTool) || byTool.size() > MAX_TOOL_RULES) {
            throw new IllegalArgumentException("\"tools\" must be an object of at most " + MAX_TOOL_RULES + " tool names, "
                    + "each \"admin\", \"everyone\" or \"off\", e.g. {\"delete_file\": \"off\", \"search\": \"everyone\"}");
        }
        Map<String, Access> rules = new java.util.TreeMap<>();
        for (Map.Entry<String, Object> rule : byTool) {
            if (rule.getKey().isEmpty() || rule.getKey().length() > 128) {
                throw new IllegalArgumentException("a tool name in \"tools\" is 1 to 128 characters");
            }
            rules.put(rule.getKey(), access(rule.getValue(), "\"tools\": " + rule.getKey()));
        }
        return new Rules(server, rules);
    }

    private static Access access(Object value, String what) {
        if (value instanceof String text) {
            for (Access access : Access.values()) {
                if (access.id().equals(text)) {
                    return access;
                }
            }
        }
        throw new IllegalArgumentException(what + " must be \"admin\", \"everyone\" or \"off\", not " + value);
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
        return new ServerSet(List.of(), List.of(), List.of(new SkillParser.Problem(WorkspacePaths.MCP, WorkspacePaths.MCP + " " + message)),
                List.of());
    }

    private static String firstLine(String message) {
        String text = String.valueOf(message);
        int newline = text.indexOf('\n');
        return newline < 0 ? text : text.substring(0, newline);
    }
}
