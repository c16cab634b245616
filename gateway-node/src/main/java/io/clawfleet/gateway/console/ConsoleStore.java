package io.clawfleet.gateway.console;

import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What the operator console reads that no other API does: the tenants with their usage against their limits, a
 * tenant's summary for the live stream, a bot's chats by search, and a chat's whole transcript (tool calls, their
 * results, the trace of each turn, approvals). Each is one statement on the indexes the rest of the system keeps.
 */
public final class ConsoleStore {

    /** Most messages a transcript shows: the latest ones. */
    public static final int TRANSCRIPT_MESSAGES = 500;

    private final Pool pool;

    public ConsoleStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Tenants in id order after {@code afterId} (null: from the first), each with its limits and what it used: bots,
     * open dead letters, messages received today and tokens today and this month (UTC, the quotas' own sums).
     */
    public Future<List<JsonObject>> tenants(String afterId, int limit, Instant now) {
        LocalDate today = now.atOffset(ZoneOffset.UTC).toLocalDate();
        OffsetDateTime dayStart = today.atStartOfDay().atOffset(ZoneOffset.UTC);
        OffsetDateTime monthStart = today.withDayOfMonth(1).atStartOfDay().atOffset(ZoneOffset.UTC);
        return pool.preparedQuery("""
                        SELECT t.id, t.name, t.status, t.limits,
                               (SELECT count(*) FROM bots b WHERE b.tenant_id = t.id) AS bots,
                               (SELECT count(*) FROM dead_letters d WHERE d.tenant_id = t.id AND d.replayed_at IS NULL) AS dead,
                               (SELECT count(*) FROM inbox i WHERE i.tenant_id = t.id AND i.received_at >= $3) AS messages_today,
                               (SELECT coalesce(sum(u.input_tokens + u.output_tokens), 0) FROM llm_usage u
                                 WHERE u.tenant_id = t.id AND u.created_at >= $3)
                               + (SELECT coalesce(sum(d.input_tokens + d.output_tokens), 0) FROM usage_calls_daily d
                                   WHERE d.tenant_id = t.id AND d.day >= ($3 AT TIME ZONE 'UTC')::date) AS tokens_today,
                               (SELECT coalesce(sum(u.input_tokens + u.output_tokens), 0) FROM llm_usage u
                                 WHERE u.tenant_id = t.id AND u.created_at >= $4)
                               + (SELECT coalesce(sum(d.input_tokens + d.output_tokens), 0) FROM usage_calls_daily d
                                   WHERE d.tenant_id = t.id AND d.day >= ($4 AT TIME ZONE 'UTC')::date) AS tokens_month
                          FROM tenants t WHERE ($1::text IS NULL OR t.id > $1) ORDER BY t.id LIMIT $2""")
                .execute(Tuple.of(afterId, limit, dayStart, monthStart))
                .map(rows -> {
                    List<JsonObject> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        Object limits = row.getValue("limits");
                        out.add(new JsonObject().put("id", row.getString("id")).put("name", row.getString("name"))
                                .put("status", row.getString("status"))
                                .put("limits", limits instanceof JsonObject json ? json : new JsonObject())
                                .put("bots", row.getLong("bots")).put("openDeadLetters", row.getLong("dead"))
                                .put("usage", new JsonObject().put("messagesToday", row.getLong("messages_today"))
                                        .put("tokensToday", row.getLong("tokens_today"))
                                        .put("tokensThisMonth", row.getLong("tokens_month"))));
                    }
                    return out;
                });
    }

    /**
     * What the live stream tells a console showing the tenant, so it knows to fetch again: open dead letters, pending
     * approvals, chats, the last message. Empty when there is no such tenant.
     */
    public Future<Optional<JsonObject>> summary(String tenantId) {
        return pool.preparedQuery("""
                        SELECT (SELECT count(*) FROM dead_letters d WHERE d.tenant_id = t.id AND d.replayed_at IS NULL) AS dead,
                               (SELECT count(*) FROM pending_approvals p WHERE p.tenant_id = t.id) AS pending,
                               (SELECT count(*) FROM chats c WHERE c.tenant_id = t.id) AS chats,
                               (SELECT max(c.last_message_at) FROM chats c WHERE c.tenant_id = t.id) AS last_at,
                               (SELECT max(o.created_at) FROM outbox o WHERE o.tenant_id = t.id
                                  AND o.created_at > now() - interval '1 day') AS last_reply_at,
                               t.status
                          FROM tenants t WHERE t.id = $1""")
                .execute(Tuple.of(tenantId))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.empty();
                    }
                    Row row = rows.iterator().next();
                    Instant last = instant(row, "last_at");
                    Instant lastReply = instant(row, "last_reply_at");
                    return Optional.of(new JsonObject().put("tenant", tenantId).put("status", row.getString("status"))
                            .put("openDeadLetters", row.getLong("dead")).put("pendingApprovals", row.getLong("pending"))
                            .put("chats", row.getLong("chats")).put("lastMessageAt", last == null ? null : last.toString())
                            .put("lastReplyAt", lastReply == null ? null : lastReply.toString()));
                });
    }

    /**
     * A bot's chats, the most recently active first; with {@code query}, those whose id or name contains it (case
     * insensitive).
     */
    public Future<List<JsonObject>> chats(BotRef bot, String query, int limit) {
        String pattern = query == null || query.isBlank() ? null
                : "%" + query.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%";
        return pool.preparedQuery("""
                        SELECT channel, chat_key, display_name, in_seq, last_message_at FROM chats
                         WHERE tenant_id = $1 AND bot_id = $2
                           AND ($3::text IS NULL OR chat_key ILIKE $3 OR display_name ILIKE $3)
                         ORDER BY last_message_at DESC, id DESC LIMIT $4""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), pattern, limit))
                .map(rows -> {
                    List<JsonObject> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        Instant last = instant(row, "last_message_at");
                        out.add(new JsonObject().put("channel", row.getString("channel")).put("chatId", row.getString("chat_key"))
                                .put("name", row.getString("display_name")).put("messages", row.getLong("in_seq"))
                                .put("lastMessageAt", last == null ? null : last.toString()));
                    }
                    return out;
                });
    }

    /**
     * A chat's transcript: its last {@link #TRANSCRIPT_MESSAGES} messages as the model saw them (user, assistant with
     * its tool calls, tool results), each with the trace id of the turn that wrote it when tracing was on; and the
     * approvals asked in the chat (the pending one, and those its audit trail records). Empty when the bot has no
     * such chat.
     */
    public Future<Optional<JsonObject>> transcript(BotRef bot, String channel, String chatKey) {
        return pool.preparedQuery("""
                        SELECT c.id, c.display_name, m.id AS message_id, m.role, m.sender_id, m.content, m.tool_calls,
                               m.tool_call_id, m.created_at, i.trace_parent
                          FROM chats c
                          LEFT JOIN LATERAL (SELECT * FROM messages m WHERE m.chat_id = c.id AND m.tenant_id = c.tenant_id
                                              ORDER BY m.id DESC LIMIT $5) m ON true
                          LEFT JOIN inbox i ON i.id = m.inbox_id
                         WHERE c.tenant_id = $1 AND c.bot_id = $2 AND c.channel = $3 AND c.chat_key = $4
                         ORDER BY m.id""")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), channel, chatKey, TRANSCRIPT_MESSAGES))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return Future.succeededFuture(Optional.empty());
                    }
                    JsonArray messages = new JsonArray();
                    long chatId = 0;
                    String name = null;
                    for (Row row : rows) {
                        chatId = row.getLong("id");
                        name = row.getString("display_name");
                        if (row.getValue("message_id") == null) {
                            continue;
                        }
                        messages.add(new JsonObject().put("id", row.getLong("message_id")).put("role", row.getString("role"))
                                .put("senderId", row.getString("sender_id")).put("text", row.getString("content"))
                                .put("toolCalls", toolCalls(row.getValue("tool_calls")))
                                .put("toolCallId", row.getString("tool_call_id"))
                                .put("at", instant(row, "created_at").toString())
                                .put("traceId", traceId(row.getString("trace_parent"))));
                    }
                    JsonObject chat = new JsonObject().put("channel", channel).put("chatId", chatKey).put("name", name);
                    return approvals(chatId).map(approvals -> Optional.of(new JsonObject().put("chat", chat)
                            .put("messages", messages).put("approvals", approvals)));
                });
    }

    /**
     * The chat's approvals: the call waiting for one (if undecided), then what its audit trail says, newest first: each
     * call that asked ({@code requested}) and each decision ({@code approve}, {@code always}, {@code deny}, with who).
     */
    private Future<JsonArray> approvals(long chatId) {
        return pool.preparedQuery("""
                        SELECT tool, 'pending' AS state, created_at AS at, NULL AS by FROM pending_approvals
                         WHERE chat_id = $1 AND decision IS NULL
                        UNION ALL
                        SELECT * FROM (SELECT tool_name,
                                              CASE WHEN event_type = 'approval'
                                                   THEN coalesce(metadata_json ->> 'decision', outcome) ELSE 'requested' END,
                                              at, CASE WHEN event_type = 'approval' THEN reason END
                                         FROM audit_events
                                        WHERE chat_id = $1 AND (event_type = 'approval' OR outcome = 'approval_requested')
                                        ORDER BY id DESC LIMIT 50) trail""")
                .execute(Tuple.of(chatId))
                .map(rows -> {
                    JsonArray out = new JsonArray();
                    for (Row row : rows) {
                        out.add(new JsonObject().put("tool", row.getString(0)).put("state", row.getString(1))
                                .put("at", instant(row, "at").toString()).put("by", row.getString(3)));
                    }
                    return out;
                });
    }

    private static JsonArray toolCalls(Object stored) {
        if (stored == null) {
            return null;
        }
        JsonArray calls = stored instanceof JsonArray array ? array : new JsonArray(String.valueOf(stored));
        JsonArray out = new JsonArray();
        for (Object each : calls) {
            if (each instanceof JsonObject call) {
                JsonObject function = call.getJsonObject("function", new JsonObject());
                out.add(new JsonObject().put("id", call.getString("id"))
                        .put("name", function.getString("name", call.getString("name")))
                        .put("arguments", String.valueOf(function.getValue("arguments", call.getValue("arguments", "")))));
            }
        }
        return out;
    }

    private static Instant instant(Row row, String column) {
        OffsetDateTime at = row.getOffsetDateTime(column);
        return at == null ? null : at.toInstant();
    }

    /** The trace id of a W3C {@code traceparent} ({@code 00-<trace id>-<span id>-<flags>}); null when none. */
    static String traceId(String traceParent) {
        if (traceParent == null || traceParent.length() < 55) {
            return null;
        }
        return traceParent.substring(3, 35);
    }
}
