package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The audit trail (seed 000 §12.9, issue 22): one row per tool call whatever its outcome, per HTTP
 * configuration write, per role change, and per burst of failed authentications from one source.
 */
public final class AuditStore {

    /**
     * One audited event.
     *
     * @param outcome success, denied, error, invalid_args, or approval_requested (a call waiting for the chat)
     * @param args    the call's arguments, already redacted
     * @param keyId   the API key that acted: the first 12 hex digits of its SHA-256 digest, never the key
     * @param route   an HTTP write's route template, like {@code /api/v1/chats/:channel/:chatKey/role}
     * @param errorId the id a failed request's answer named (the cause is in the node's log under it)
     */
    public record Event(long id, String tenantId, Instant at, String eventType, String toolName, Long chatId,
                        String channel, String chatKey, String actorRole, String outcome, String reason,
                        JsonObject args, JsonObject metadata, String keyId, String keyName, String httpMethod,
                        String route, Integer statusCode, String errorId, String botId) {
    }

    /**
     * An event other than a tool call, to {@link #append}. Only {@code tenantId} (null for a cluster event
     * such as {@link #AUTH_FAILURE_BURST}), {@code eventType} and {@code outcome} are required.
     */
    public record NewEvent(String tenantId, String eventType, String outcome, String keyId, String keyName,
                           String httpMethod, String route, Integer statusCode, String errorId, String channel,
                           String chatKey, String reason, JsonObject metadata, String botId) {
        public NewEvent {
            Objects.requireNonNull(eventType);
            Objects.requireNonNull(outcome);
        }
    }

    /** A tool call (written by the worker with {@link #record}). */
    public static final String TOOL_CALL = "tool_call";
    /** A POST, PUT, PATCH or DELETE on the gateway's API, message intake excepted. */
    public static final String HTTP_WRITE = "http_write";
    /** A chat made admin or normal, by the API or the CLI (the tool chat_set_role is a tool_call). */
    public static final String ROLE_CHANGE = "role_change";
    /** Failed authentications from one source address above a threshold within a window; no tenant. */
    public static final String AUTH_FAILURE_BURST = "auth_failure_burst";
    /** The most events one {@link #list} answers. */
    public static final int MAX_LIST = 500;

    private static final String COLUMNS = """
            id, tenant_id, at, event_type, tool_name, chat_id, channel, chat_key, actor_role, outcome, reason,
            args_json, metadata_json, key_id, key_name, http_method, route, status_code, error_id, bot_id""";

    /**
     * A tenant's events after an id, oldest first: tenant $1, after $2, at most $3, of type $4 and bot $5 unless null.
     * Both pages walk {@code audit_events_tenant_id (tenant_id, id)}: their cost is the tenant's own events (V46).
     */
    static final String LIST = "SELECT " + COLUMNS + " " + """
              FROM audit_events WHERE tenant_id = $1 AND id > $2 AND ($4::text IS NULL OR event_type = $4)
               AND ($5::text IS NULL OR bot_id = $5)
             ORDER BY id LIMIT $3""";
    /** A tenant's events before an id, newest first: as {@link #LIST}, and with $6 only tool calls run on a sandbox. */
    static final String LIST_BEFORE = "SELECT " + COLUMNS + " " + """
              FROM audit_events WHERE tenant_id = $1 AND id < $2 AND ($4::text IS NULL OR event_type = $4)
               AND ($5::text IS NULL OR bot_id = $5)
               AND (NOT $6 OR (metadata_json ->> 'sandbox') = 'true')
             ORDER BY id DESC LIMIT $3""";

    private final Pool pool;

    public AuditStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public Future<Void> record(String tenantId, String eventType, String toolName, long chatId, String channel,
                               String chatKey, String actorRole, String outcome, String reason, JsonObject args,
                               JsonObject metadata) {
        return pool.preparedQuery("""
                        INSERT INTO audit_events (tenant_id, event_type, tool_name, chat_id, channel, chat_key, actor_role,
                                                  outcome, reason, args_json, metadata_json, bot_id)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, (SELECT c.bot_id FROM chats c WHERE c.id = $4))""")
                .execute(Tuple.tuple().addString(tenantId).addString(eventType).addString(toolName).addLong(chatId)
                        .addString(channel).addString(chatKey).addString(actorRole).addString(outcome)
                        .addString(PgText.clean(reason))
                        .addValue(args == null ? null : new JsonObject(PgText.cleanJson(args.encode())))
                        .addValue(metadata))
                .mapEmpty();
    }

    /** Stores an event other than a tool call; answers its id. */
    public Future<Long> append(NewEvent event) {
        return pool.preparedQuery("""
                        INSERT INTO audit_events (tenant_id, event_type, outcome, key_id, key_name, http_method, route,
                                                  status_code, error_id, channel, chat_key, reason, metadata_json, bot_id)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id""")
                .execute(Tuple.tuple().addString(event.tenantId()).addString(event.eventType()).addString(event.outcome())
                        .addString(event.keyId()).addString(PgText.clean(event.keyName())).addString(event.httpMethod())
                        .addString(event.route()).addValue(event.statusCode()).addString(event.errorId())
                        .addString(PgText.clean(event.channel())).addString(PgText.clean(event.chatKey()))
                        .addString(PgText.clean(event.reason()))
                        .addValue(event.metadata() == null ? null : new JsonObject(PgText.cleanJson(event.metadata().encode())))
                        .addString(event.botId()))
                .map(rows -> rows.iterator().next().getLong(0));
    }

    /** Replaces the metadata of a cluster event (an auth-failure burst's final count). */
    public Future<Void> updateClusterMetadata(long id, JsonObject metadata) {
        return pool.preparedQuery("UPDATE audit_events SET metadata_json = $2 WHERE id = $1 AND tenant_id IS NULL")
                .execute(Tuple.of(id, metadata)).mapEmpty();
    }

    /** A tenant's events with id above {@code afterId}, oldest first. */
    public Future<List<Event>> list(String tenantId, long afterId, int limit) {
        return list(tenantId, afterId, limit, null);
    }

    /** A tenant's events with id above {@code afterId} and, unless null, of {@code eventType}, oldest first. */
    public Future<List<Event>> list(String tenantId, long afterId, int limit, String eventType) {
        return list(tenantId, afterId, limit, eventType, null);
    }

    /** As {@link #list(String, long, int, String)}, and unless {@code botId} is null only the events naming that bot. */
    public Future<List<Event>> list(String tenantId, long afterId, int limit, String eventType, String botId) {
        Objects.requireNonNull(tenantId, "a tenant's events only: cluster events have no tenant");
        return pool.preparedQuery(LIST)
                .execute(Tuple.of(tenantId, afterId, Math.min(limit, MAX_LIST), eventType, botId))
                .map(AuditStore::events);
    }

    /**
     * A tenant's events below {@code beforeId}, newest first (the console pages back in time); unless null, only
     * those of {@code eventType} and naming {@code botId}; with {@code sandboxOnly}, only tool calls that ran on a
     * sandbox node (the worker marks them in their metadata).
     */
    public Future<List<Event>> listBefore(String tenantId, long beforeId, int limit, String eventType, String botId,
                                          boolean sandboxOnly) {
        Objects.requireNonNull(tenantId, "a tenant's events only: cluster events have no tenant");
        return pool.preparedQuery(LIST_BEFORE)
                .execute(Tuple.of(tenantId, beforeId, Math.min(limit, MAX_LIST), eventType, botId, sandboxOnly))
                .map(AuditStore::events);
    }

    /** Cluster events (no tenant) of a type with id above {@code afterId}, oldest first: for operators and tests. */
    public Future<List<Event>> listCluster(String eventType, long afterId, int limit) {
        return pool.preparedQuery("SELECT " + COLUMNS + " " + """
                          FROM audit_events WHERE tenant_id IS NULL AND event_type = $1 AND id > $2 ORDER BY id LIMIT $3""")
                .execute(Tuple.of(eventType, afterId, Math.min(limit, MAX_LIST)))
                .map(AuditStore::events);
    }

    private static List<Event> events(Iterable<Row> rows) {
        List<Event> out = new ArrayList<>();
        for (Row row : rows) {
            out.add(new Event(row.getLong("id"), row.getString("tenant_id"), InboxStore.instant(row, "at"),
                    row.getString("event_type"), row.getString("tool_name"), row.getLong("chat_id"),
                    row.getString("channel"), row.getString("chat_key"), row.getString("actor_role"),
                    row.getString("outcome"), row.getString("reason"), json(row.getValue("args_json")),
                    json(row.getValue("metadata_json")), row.getString("key_id"), row.getString("key_name"),
                    row.getString("http_method"), row.getString("route"), row.getInteger("status_code"),
                    row.getString("error_id"), row.getString("bot_id")));
        }
        return out;
    }

    private static JsonObject json(Object value) {
        return value == null ? null : value instanceof JsonObject object ? object : new JsonObject(value.toString());
    }
}
