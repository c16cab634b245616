package io.clawfleet.shared.workspace;

import io.clawfleet.shared.provider.BotProviders;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * A bot's remote MCP servers as the API keeps them ({@code PUT /api/v1/bots/{botId}/mcp-servers}, issue 16): the
 * same entries as a remote server in {@code .mcp.json} ({@link McpServers#remote}), plus the credentials the file
 * may not hold: {@code headers} and {@code bearerToken} (sent as {@code Authorization: Bearer <token>}). What is
 * stored in the clear ({@link #config()}) shows each header's value as a hint; the values ({@link #secrets()}) are
 * sealed with the tenant's data key for this bot alone.
 *
 * <p>A server sent without {@code headers} and {@code bearerToken} keeps the headers it has, so what a GET shows can
 * be edited and sent back; but not when its URL moved to another origin (scheme, host, port): credentials go only
 * where they were given for, so the request must give them again (or {@code "headers": {}} for none).
 */
public record RemoteMcpServers(Map<String, McpServers.Remote> servers) {

    public static final int MAX_SERVERS = 16;
    public static final int MAX_HEADERS = 16;
    public static final int MAX_HEADER_VALUE = 8_192;

    private static final Set<String> TOP_FIELDS = Set.of("servers");
    private static final Pattern HEADER_NAME = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}");
    /** Headers the client itself sets: a server entry may not replace them. */
    private static final Set<String> RESERVED = Set.of("host", "content-length", "content-type", "accept", "connection",
            "transfer-encoding", "mcp-session-id", "mcp-protocol-version", "last-event-id", "upgrade", "te", "trailer",
            "keep-alive", "proxy-authorization", "cookie");

    public RemoteMcpServers {
        servers = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(servers));
    }

    /**
     * Reads the servers as a request gives them, checking every field.
     *
     * @param previous what the bot has now; null when it has none
     * @throws IllegalArgumentException naming the field that is wrong and why
     */
    public static RemoteMcpServers parse(JsonObject body, RemoteMcpServers previous) {
        for (String key : body.fieldNames()) {
            if (!TOP_FIELDS.contains(key)) {
                throw new IllegalArgumentException("unknown field '" + key + "'; the body is {\"servers\": {\"<name>\": "
                        + "{\"url\": \"https://...\", \"bearerToken\": \"...\"}}}");
            }
        }
        if (!(body.getValue("servers") instanceof JsonObject given) || given.isEmpty() || given.size() > MAX_SERVERS) {
            throw new IllegalArgumentException("'servers' must be an object of 1 to " + MAX_SERVERS + " servers by name, e.g. "
                    + "{\"servers\": {\"search\": {\"url\": \"https://mcp.example.com/mcp\", \"bearerToken\": \"...\"}}}");
        }
        Map<String, McpServers.Remote> servers = new LinkedHashMap<>();
        for (String name : given.fieldNames()) {
            if (!(given.getValue(name) instanceof JsonObject spec)) {
                throw new IllegalArgumentException("'servers." + name + "' must be an object with \"url\"");
            }
            McpServers.Remote kept = previous == null ? null : previous.servers().get(name);
            try {
                servers.put(name, server(name, spec, kept));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("'servers." + name + "': " + e.getMessage());
            }
        }
        return new RemoteMcpServers(servers);
    }

    private static McpServers.Remote server(String name, JsonObject spec, McpServers.Remote kept) {
        JsonObject plain = spec.copy();
        Object headersGiven = plain.remove("headers");
        Object token = plain.remove("bearerToken");
        Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        if (headersGiven != null) {
            if (!(headersGiven instanceof JsonObject object) || object.size() > MAX_HEADERS) {
                throw new IllegalArgumentException("\"headers\" must be an object of at most " + MAX_HEADERS + " header names "
                        + "to values");
            }
            for (Map.Entry<String, Object> header : object) {
                headers.put(headerName(header.getKey()), headerValue(header.getKey(), header.getValue()));
            }
        }
        if (token != null) {
            if (headers.containsKey("authorization")) {
                throw new IllegalArgumentException("give \"bearerToken\" or an Authorization header, not both");
            }
            headers.put("Authorization", "Bearer " + headerValue("bearerToken", token));
        }
        McpServers.Remote server = McpServers.remote(name, plain, Map.of());
        if (headersGiven == null && token == null && kept != null && !kept.headers().isEmpty()) {
            if (!origin(kept.url()).equals(origin(server.url()))) {
                throw new IllegalArgumentException("its url moved to another origin (" + origin(server.url()) + "): its headers "
                        + "are not sent there unless given again (\"headers\", \"bearerToken\", or \"headers\": {} for none)");
            }
            headers.putAll(kept.headers());
        }
        return new McpServers.Remote(name, server.url(), headers, server.timeoutMs(), server.rules());
    }

    private static String headerName(String name) {
        if (!HEADER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("'" + name + "' is not an HTTP header name");
        }
        if (RESERVED.contains(name.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("the header " + name + " is set by Clawfleet's MCP client and cannot be given");
        }
        return name;
    }

    private static String headerValue(String name, Object value) {
        if (!(value instanceof String text) || text.isEmpty() || text.length() > MAX_HEADER_VALUE
                || text.chars().anyMatch(c -> c < 0x20 && c != '\t' || c == 0x7f)) {
            throw new IllegalArgumentException("'" + name + "' must be a non-empty string of at most " + MAX_HEADER_VALUE
                    + " characters without line breaks or control characters");
        }
        return text;
    }

    /** scheme://host:port of a URL, the port spelled out. */
    static String origin(String url) {
        URI uri = URI.create(url);
        String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        int port = uri.getPort() != -1 ? uri.getPort() : scheme.equals("https") ? 443 : 80;
        return scheme + "://" + uri.getHost().toLowerCase(Locale.ROOT) + ":" + port;
    }

    /** From storage: {@link #config()} as stored and the opened {@link #secrets()} (null when there are none). */
    public static RemoteMcpServers stored(JsonObject config, JsonObject secrets) {
        Map<String, McpServers.Remote> servers = new LinkedHashMap<>();
        JsonObject given = config.getJsonObject("servers", new JsonObject());
        for (String name : given.fieldNames()) {
            JsonObject spec = given.getJsonObject(name).copy();
            spec.remove("headers");
            JsonObject values = secrets == null ? null : secrets.getJsonObject(name);
            Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
            if (values != null) {
                values.forEach(header -> headers.put(header.getKey(), (String) header.getValue()));
            }
            McpServers.Remote server = McpServers.remote(name, spec, Map.of());
            servers.put(name, new McpServers.Remote(name, server.url(), headers, server.timeoutMs(), server.rules()));
        }
        return new RemoteMcpServers(servers);
    }

    /** What is stored in the clear and shown: every field, each header's value replaced by its hint. */
    public JsonObject config() {
        JsonObject all = new JsonObject();
        servers.forEach((name, server) -> {
            JsonObject hints = new JsonObject();
            server.headers().forEach((header, value) -> hints.put(header, hint(value)));
            JsonObject entry = new JsonObject().put("url", server.url());
            if (server.timeoutMs() > 0) {
                entry.put("timeoutMs", server.timeoutMs());
            }
            entry.mergeIn(server.rules().json()).put("headers", hints);
            all.put(name, entry);
        });
        return new JsonObject().put("servers", all);
    }

    /** The header values by server and header name, to be sealed; empty when there are none. */
    public JsonObject secrets() {
        JsonObject all = new JsonObject();
        servers.forEach((name, server) -> {
            if (!server.headers().isEmpty()) {
                all.put(name, new JsonObject(new LinkedHashMap<>(server.headers())));
            }
        });
        return all;
    }

    /** The header values, so they can be cut out of whatever text might carry one. */
    public List<String> secretValues() {
        return servers.values().stream().flatMap(s -> s.headers().values().stream())
                .flatMap(value -> value.startsWith("Bearer ") ? java.util.stream.Stream.of(value, value.substring(7))
                        : java.util.stream.Stream.of(value))
                .toList();
    }

    /** A bearer token's hint keeps the scheme: {@code Bearer sk-…abcd}. */
    private static String hint(String value) {
        return value.startsWith("Bearer ") ? "Bearer " + BotProviders.hint(value.substring(7)) : BotProviders.hint(value);
    }

    @Override
    public String toString() {
        return "RemoteMcpServers" + servers.values();
    }
}
