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

/** The audit trail of tool calls (seed 000 §12.9): one row per call, whatever its outcome. */
public final class AuditStore {

    /**
     * One audited event.
     *
     * @param outcome success, denied, error, invalid_args, or approval_requested (a call waiting for the chat)
     * @param args    the call's arguments, already redacted
     */
    public record Event(long id, String tenantId, Instant at, String eventType, String toolName, Long chatId,
                        String channel, String chatKey, String actorRole, String outcome, String reason,
                        JsonObject args, JsonObject metadata) {
    }

    private final Pool pool;

    public AuditStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public Future<Void> record(String tenantId, String eventType, String toolName, long chatId, String channel,
                               String chatKey, String actorRole, String outcome, String reason, JsonObject args,
                               JsonObject metadata) {
        return pool.preparedQuery("""
                        INSERT INTO audit_events (tenant_id, event_type, tool_name, chat_id, channel, chat_key, actor_role,
                                                  outcome, reason, args_json, metadata_json)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)""")
                .execute(Tuple.tuple().addString(tenantId).addString(eventType).addString(toolName).addLong(chatId)
                        .addString(channel).addString(chatKey).addString(actorRole).addString(outcome)
                        .addString(PgText.clean(reason))
                        .addValue(args == null ? null : new JsonObject(PgText.cleanJson(args.encode())))
                        .addValue(metadata))
                .mapEmpty();
    }

    /** A tenant's events with id above {@code afterId}, oldest first. */
    public Future<List<Event>> list(String tenantId, long afterId, int limit) {
        return pool.preparedQuery("""
                        SELECT id, tenant_id, at, event_type, tool_name, chat_id, channel, chat_key, actor_role, outcome,
                               reason, args_json, metadata_json
                          FROM audit_events WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3""")
                .execute(Tuple.of(tenantId, afterId, limit))
                .map(rows -> {
                    List<Event> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new Event(row.getLong("id"), row.getString("tenant_id"), InboxStore.instant(row, "at"),
                                row.getString("event_type"), row.getString("tool_name"), row.getLong("chat_id"),
                                row.getString("channel"), row.getString("chat_key"), row.getString("actor_role"),
                                row.getString("outcome"), row.getString("reason"), json(row.getValue("args_json")),
                                json(row.getValue("metadata_json"))));
                    }
                    return out;
                });
    }

    private static JsonObject json(Object value) {
        return value == null ? null : value instanceof JsonObject object ? object : new JsonObject(value.toString());
    }
}
