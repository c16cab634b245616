package io.clawfleet.gateway.auth;

import io.vertx.core.http.HttpMethod;

import java.util.List;
import java.util.Set;

/**
 * What a tenant key's scopes allow (issue 13), decided in one place from the method and path, so a
 * route added later is covered without anyone remembering to: {@code chat} sends messages, reads
 * replies and uses the OpenAI-compatible endpoint; {@code read} makes any GET except the admin's own
 * (audit, keys, approvals, export); {@code admin} does everything of the tenant. Anything not named
 * here is a change and needs {@code admin}: the default is the narrowest. A bot's MCP endpoint
 * ({@code /mcp/v1/bots/{botId}}) is for {@code chat} keys: what its tools and resources show is what the bot knows.
 */
public final class Scopes {

    public static final String CHAT = "chat";
    public static final String READ = "read";
    public static final String ADMIN = "admin";
    public static final Set<String> ALL = Set.of(CHAT, READ, ADMIN);

    private static final Set<String> CHAT_OR_ADMIN = Set.of(CHAT, ADMIN);
    private static final Set<String> ANY = ALL;
    private static final Set<String> READ_OR_ADMIN = Set.of(READ, ADMIN);
    private static final Set<String> ADMIN_ONLY = Set.of(ADMIN);
    /** GETs that show what only the tenant's admin may see. */
    private static final List<String> ADMIN_READS = List.of("/api/v1/audit", "/api/v1/keys", "/api/v1/approvals",
            "/api/v1/export", "/api/v1/deferred", "/api/v1/pairings");

    private Scopes() {
    }

    /** The scopes any one of which lets a key make this request. */
    public static Set<String> required(HttpMethod method, String path) {
        String p = unscoped(path.endsWith("/") && path.length() > 1 ? path.substring(0, path.length() - 1) : path);
        if (p.startsWith("/mcp/")) {
            // A bot as an MCP server: talking to it, its chats, memory, workspace files and skills (issue 16).
            return CHAT_OR_ADMIN;
        }
        if (method == HttpMethod.POST && (p.equals("/api/v1/messages") || p.equals("/v1/chat/completions"))) {
            return CHAT_OR_ADMIN;
        }
        if (method == HttpMethod.GET || method == HttpMethod.HEAD) {
            if (p.equals("/v1/models") || (p.startsWith("/api/v1/chats/") && p.endsWith("/replies"))) {
                return ANY;
            }
            for (String prefix : ADMIN_READS) {
                if (p.equals(prefix) || p.startsWith(prefix + "/")) {
                    return ADMIN_ONLY;
                }
            }
            return READ_OR_ADMIN;
        }
        return ADMIN_ONLY;
    }

    /** A bot's route ({@code /api/v1/bots/{botId}/messages}) needs what the same route of the default bot needs. */
    private static String unscoped(String path) {
        String prefix = "/api/v1/bots/";
        if (!path.startsWith(prefix)) {
            return path;
        }
        int slash = path.indexOf('/', prefix.length());
        return slash < 0 ? path : "/api/v1" + path.substring(slash);
    }

    /** Whether a key with {@code scopes} may make the request. */
    public static boolean allows(Set<String> scopes, HttpMethod method, String path) {
        for (String scope : required(method, path)) {
            if (scopes.contains(scope)) {
                return true;
            }
        }
        return false;
    }
}
