package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The sessions of MCP clients of bots ({@code mcp_sessions}, issue 16) and the resumable streams of their tool calls
 * ({@code mcp_streams}). A session is bound to its tenant, its bot and the API key that opened it: looked up with any
 * other, it does not exist. Ids are kept as SHA-256 digests.
 */
public final class McpSessionStore {

    /** A live session as a gateway needs it for each request. */
    public record Session(String hash, BotRef bot, String keyId, String protocolVersion, String logLevel,
                          Set<String> subscriptions, Instant lastSeenAt) {
    }

    /** A tool call's stream: enough to resume it on any gateway. */
    public record Stream(String id, String sessionHash, Object requestId, Object progressToken, long inboxId) {
    }

    /** How often a session's last use is written at most: a request does not cost a write. */
    public static final Duration TOUCH_EVERY = Duration.ofMinutes(1);

    private final Pool pool;

    public McpSessionStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** The digest a session id is kept as. */
    public static String hash(String sessionId) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(sessionId.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Opens a session unless the tenant has {@code maxPerTenant} already (one statement); false then.
     */
    public Future<Boolean> open(String sessionId, BotRef bot, String keyId, String protocolVersion, String clientName,
                                String clientVersion, int maxPerTenant) {
        return pool.preparedQuery("""
                        INSERT INTO mcp_sessions (id, tenant_id, bot_id, key_id, protocol_version, client_name, client_version)
                        SELECT $1, $2, $3, $4, $5, $6, $7
                         WHERE (SELECT count(*) FROM mcp_sessions WHERE tenant_id = $2) < $8""")
                .execute(Tuple.of(hash(sessionId), bot.tenantId(), bot.botId(), keyId, protocolVersion,
                        clean(clientName), clean(clientVersion)).addValue(maxPerTenant))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * The session of that id for this bot and key, when it was used within {@code idle}; its last use is written
     * when the one recorded is older than {@link #TOUCH_EVERY} (after the answer, not waited for).
     */
    public Future<Optional<Session>> find(String sessionId, BotRef bot, String keyId, Duration idle) {
        String hash = hash(sessionId);
        return pool.preparedQuery("""
                        SELECT protocol_version, log_level, subscriptions::text, last_seen_at FROM mcp_sessions
                         WHERE id = $1 AND tenant_id = $2 AND bot_id = $3 AND key_id = $4
                           AND last_seen_at > now() - make_interval(secs => $5)""")
                .execute(Tuple.of(hash, bot.tenantId(), bot.botId(), keyId, (double) idle.toSeconds()))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.<Session>empty();
                    }
                    Row row = rows.iterator().next();
                    Instant seen = row.getOffsetDateTime("last_seen_at").toInstant();
                    if (seen.isBefore(Instant.now().minus(TOUCH_EVERY))) {
                        pool.preparedQuery("UPDATE mcp_sessions SET last_seen_at = now() WHERE id = $1").execute(Tuple.of(hash));
                    }
                    return Optional.of(new Session(hash, bot, keyId, row.getString("protocol_version"), row.getString("log_level"),
                            uris(row.getString("subscriptions")), seen));
                });
    }

    /** The URIs a session subscribed to now (a gateway holding its notification stream asks at each change). */
    public Future<Set<String>> subscriptions(String sessionHash) {
        return pool.preparedQuery("SELECT subscriptions::text FROM mcp_sessions WHERE id = $1").execute(Tuple.of(sessionHash))
                .map(rows -> rows.size() == 0 ? Set.<String>of() : uris(rows.iterator().next().getString(0)));
    }

    /** Of these sessions, those subscribed to {@code uri}: one statement for every stream of a bot a change reaches. */
    public Future<Set<String>> subscribedTo(java.util.Collection<String> sessionHashes, String uri) {
        if (sessionHashes.isEmpty()) {
            return Future.succeededFuture(Set.of());
        }
        return pool.preparedQuery("SELECT id FROM mcp_sessions WHERE id = ANY($1) AND subscriptions ? $2")
                .execute(Tuple.tuple().addArrayOfString(sessionHashes.toArray(String[]::new)).addString(uri))
                .map(rows -> {
                    Set<String> subscribed = new java.util.HashSet<>();
                    rows.forEach(row -> subscribed.add(row.getString(0)));
                    return subscribed;
                });
    }

    public Future<Void> setLogLevel(String sessionHash, String level) {
        return pool.preparedQuery("UPDATE mcp_sessions SET log_level = $2 WHERE id = $1").execute(Tuple.of(sessionHash, level))
                .mapEmpty();
    }

    /** Adds or removes a subscription; at most {@code max} per session (false when that many already). */
    public Future<Boolean> subscribe(String sessionHash, String uri, boolean on, int max) {
        String sql = on ? """
                UPDATE mcp_sessions SET subscriptions = subscriptions || to_jsonb($2::text)
                 WHERE id = $1 AND NOT subscriptions ? $2 AND jsonb_array_length(subscriptions) < $3"""
                : "UPDATE mcp_sessions SET subscriptions = subscriptions - $2 WHERE id = $1 AND $3 >= 0";
        return pool.preparedQuery(sql).execute(Tuple.of(sessionHash, uri, max))
                .compose(rows -> rows.rowCount() == 1 || !on ? Future.succeededFuture(true)
                        : subscriptions(sessionHash).map(now -> now.contains(uri)));
    }

    /** Ends a session; false when there was none of that id for this bot and key. */
    public Future<Boolean> close(String sessionId, BotRef bot, String keyId) {
        return pool.preparedQuery("DELETE FROM mcp_sessions WHERE id = $1 AND tenant_id = $2 AND bot_id = $3 AND key_id = $4")
                .execute(Tuple.of(hash(sessionId), bot.tenantId(), bot.botId(), keyId))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Drops the sessions (and their streams) unused for {@code idle}; returns how many. */
    public Future<Integer> dropIdle(Duration idle) {
        return pool.preparedQuery("DELETE FROM mcp_sessions WHERE last_seen_at < now() - make_interval(secs => $1)")
                .execute(Tuple.of((double) idle.toSeconds()))
                .map(rows -> rows.rowCount());
    }

    public Future<Void> openStream(Stream stream, BotRef bot) {
        return pool.preparedQuery("""
                        INSERT INTO mcp_streams (id, session_id, tenant_id, bot_id, request_id, progress_token, inbox_id)
                        VALUES ($1, $2, $3, $4, $5, $6, $7)""")
                // a String or a Number bound to a jsonb parameter is that JSON value (not its encoding)
                .execute(Tuple.of(stream.id(), stream.sessionHash(), bot.tenantId(), bot.botId(), stream.requestId(),
                        stream.progressToken(), stream.inboxId()))
                .mapEmpty();
    }

    /** A stream of this session; empty when there is none of that id (or it is another session's). */
    public Future<Optional<Stream>> stream(String id, String sessionHash) {
        return pool.preparedQuery("""
                        SELECT request_id, progress_token, inbox_id FROM mcp_streams WHERE id = $1 AND session_id = $2""")
                .execute(Tuple.of(id, sessionHash))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.<Stream>empty();
                    }
                    Row row = rows.iterator().next();
                    return Optional.of(new Stream(id, sessionHash, row.getJson(0), row.getJson(1), row.getLong(2)));
                });
    }

    private static Set<String> uris(String json) {
        Set<String> uris = new LinkedHashSet<>();
        new JsonArray(json).forEach(uri -> uris.add(String.valueOf(uri)));
        return uris;
    }

    private static String clean(String text) {
        return text == null ? null : PgText.clean(text.length() > 200 ? text.substring(0, 200) : text);
    }
}
