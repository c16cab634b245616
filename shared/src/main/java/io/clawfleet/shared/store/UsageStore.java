package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** Token usage of a tenant's turns, per day, chat and model (written by the turn commit). */
public final class UsageStore {

    private final Pool pool;

    public UsageStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Tokens one turn used: the sums over its model calls (input, output), zero when it made none. */
    public record TurnTokens(long input, long output) {
    }

    /** What the turn answering message {@code inboxId} of the tenant used; committed with its reply, so read after it. */
    public Future<TurnTokens> ofMessage(String tenantId, long inboxId) {
        return pool.preparedQuery("""
                        SELECT coalesce(sum(input_tokens), 0) AS input, coalesce(sum(output_tokens), 0) AS output
                          FROM llm_usage WHERE inbox_id = $2 AND tenant_id = $1""")
                .execute(Tuple.of(tenantId, inboxId))
                .map(rows -> {
                    var row = rows.iterator().next();
                    return new TurnTokens(row.getLong("input"), row.getLong("output"));
                });
    }

    /**
     * Totals between {@code since} and {@code until}, per day (UTC), bot, model, and chat when
     * {@code chatKey} is null (else that chat only).
     *
     * @param botId only this bot's; null for every bot of the tenant (a deleted bot's usage included)
     */
    public Future<List<JsonObject>> totals(String tenantId, String botId, Instant since, Instant until, String channel, String chatKey) {
        return pool.preparedQuery("""
                        SELECT date_trunc('day', u.created_at AT TIME ZONE 'UTC')::date AS day, u.bot_id, c.channel, c.chat_key,
                               coalesce(u.provider, '') AS provider, u.model, count(DISTINCT u.inbox_id) AS turns,
                               sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens
                          FROM llm_usage u JOIN chats c ON c.id = u.chat_id
                         WHERE u.tenant_id = $1 AND ($6::text IS NULL OR u.bot_id = $6) AND u.created_at >= $2 AND u.created_at < $3
                           AND ($5::text IS NULL OR (c.channel = $4 AND c.chat_key = $5))
                         GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 6""")
                .execute(Tuple.of(tenantId, OffsetDateTime.ofInstant(since, ZoneOffset.UTC),
                        OffsetDateTime.ofInstant(until, ZoneOffset.UTC), channel, chatKey, botId))
                .map(rows -> {
                    List<JsonObject> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new JsonObject().put("day", row.getLocalDate("day").toString()).put("bot", row.getString("bot_id"))
                                .put("channel", row.getString("channel")).put("chatId", row.getString("chat_key"))
                                .put("provider", row.getString("provider")).put("model", row.getString("model"))
                                .put("turns", row.getLong("turns")).put("inputTokens", row.getLong("input_tokens"))
                                .put("outputTokens", row.getLong("output_tokens")));
                    }
                    return out;
                });
    }
}
