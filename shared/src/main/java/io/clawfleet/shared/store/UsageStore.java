package io.clawfleet.shared.store;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * What tenants used (issue 14): messages, turns, tokens, cost, tool runs and their time, and storage, per day, bot, model
 * and key.
 *
 * <p>Every measure is read from a record written exactly once per thing it counts, which is why the counts are
 * exact: a message is its inbox row (idempotent on the channel's message id); a model call is its llm_usage row,
 * written by the turn's fenced commit only when its inbox row turns done, so a turn replayed after a failover is
 * counted once; a tool run is its audit row, deduplicated on (message, call index), the ids a replayed turn gives
 * the same call again. Each source is read in one statement with {@code GROUPING SETS}, which answers the groups
 * and each tenant's total together (a total is not a sum of groups: a turn that used two models is one turn).
 *
 * <p>Retention keeps those records for days; past them, the statement that prunes a message's or a call's row adds
 * it to its day's sums (usage_messages_daily, usage_calls_daily), which usage reads with the rows still there, so a
 * count stays the same. A summed turn counts under the model of its first call only.
 */
public final class UsageStore {

    /** What usage can be grouped by. A source that cannot tell a dimension apart counts in totals only. */
    public enum Dimension {
        /** The UTC day of the record: a message's acceptance, a model call's commit, a tool run's end. */
        DAY,
        BOT,
        /** Provider and model of a model call. Messages, tool runs and storage have no model. */
        MODEL,
        /** The API key that sent the message (its public id); null for channel messages and scheduled firings. */
        KEY;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The dimension of a wire name ({@code day}, {@code bot}, {@code model}, {@code key}); null when unknown. */
        public static Dimension of(String wireName) {
            for (Dimension d : values()) {
                if (d.wireName().equals(wireName)) {
                    return d;
                }
            }
            return null;
        }
    }

    /**
     * A usage question.
     *
     * @param tenantIds whose usage; each gets a report, empty ones included
     * @param botId     only this bot's; null for every bot (a deleted bot's tokens and tool runs included)
     * @param from      inclusive
     * @param to        exclusive
     * @param channel   with {@code chatKey}: one chat's usage only (of any bot, unless {@code botId})
     * @param chatKey   null for every chat
     */
    public record Query(List<String> tenantIds, String botId, Instant from, Instant to, Set<Dimension> groupBy,
                        String channel, String chatKey) {

        public Query {
            tenantIds = List.copyOf(tenantIds);
            Objects.requireNonNull(from);
            Objects.requireNonNull(to);
            groupBy = Set.copyOf(groupBy);
        }

        boolean oneChat() {
            return chatKey != null;
        }
    }

    /**
     * The measures of a group or a total. A null measure is one the group cannot have (messages per model) or
     * that was not asked (storage of one chat); it is never a stand-in for zero.
     *
     * @param messages      accepted messages (inbox rows of every kind: a person's, a task's firing, an approval)
     * @param turns         turns that called the model (distinct messages among the model calls)
     * @param modelCalls    model calls, compaction's included
     * @param cachedTokens  input tokens served from the provider's prompt cache (part of inputTokens)
     * @param costMicros    the priced calls' cost in millionths; null when no call was priced
     * @param unpricedCalls model calls of a model without a configured price
     * @param toolRuns      tool calls that ran (succeeded or failed while running), each once
     * @param storageBytes  workspace bytes now (not over time): per bot and in totals only
     * @param toolMillis    the wall-clock time of those runs, in ms; runs audited before durations were recorded add none
     * @param sandboxMillis the part of {@code toolMillis} of runs on sandbox nodes (shell, web, code skills, MCP tools)
     */
    public record Measures(Long messages, long turns, long modelCalls, long inputTokens, long outputTokens, long cachedTokens,
                           Long costMicros, long unpricedCalls, Long toolRuns, Long storageBytes, Long toolMillis,
                           Long sandboxMillis) {

        /** {@code complete}: every call priced; {@code partial}: costMicros is a lower bound; {@code none}: unknown. */
        public String costCoverage() {
            return unpricedCalls == 0 ? "complete" : unpricedCalls < modelCalls ? "partial" : "none";
        }

        public JsonObject toJson() {
            return new JsonObject().put("messages", messages).put("turns", turns).put("modelCalls", modelCalls)
                    .put("inputTokens", inputTokens).put("outputTokens", outputTokens).put("cachedTokens", cachedTokens)
                    .put("costMicros", costMicros).put("costCoverage", costCoverage()).put("unpricedCalls", unpricedCalls)
                    .put("toolRuns", toolRuns).put("storageBytes", storageBytes)
                    .put("toolSeconds", seconds(toolMillis)).put("sandboxSeconds", seconds(sandboxMillis));
        }

        /** Milliseconds as seconds with 3 decimals (exact: a double prints 1234 ms as 1.234); null stays null. */
        private static Double seconds(Long millis) {
            return millis == null ? null : millis / 1000.0;
        }
    }

    /** One group: the values of the dimensions asked for (the others null) and its measures. */
    public record Group(LocalDate day, String botId, String provider, String model, String keyId, Measures measures) {

        /** The dimensions asked for, then the measures. */
        public JsonObject toJson(Set<Dimension> groupBy) {
            JsonObject json = new JsonObject();
            if (groupBy.contains(Dimension.DAY)) {
                json.put("day", day.toString());
            }
            if (groupBy.contains(Dimension.BOT)) {
                json.put("bot", botId);
            }
            if (groupBy.contains(Dimension.MODEL)) {
                json.put("provider", provider).put("model", model);
            }
            if (groupBy.contains(Dimension.KEY)) {
                json.put("key", keyId);
            }
            return json.mergeIn(measures.toJson());
        }
    }

    /**
     * A tenant's usage: its total and its groups, in day, bot, model, key order; and, for each source whose retention
     * the range reaches past, the instant before which that source was pruned ({@link #prunedBefore}).
     */
    public record Report(Measures totals, List<Group> groups, Map<String, Instant> prunedBefore) {

        public Report {
            prunedBefore = Map.copyOf(prunedBefore);
        }
    }

    /**
     * Before which instant a tenant's usage sources are pruned, for those the range from {@code from} reaches past
     * (RetentionStore): {@code messages} (the daily sums of pruned inbox rows, kept the usage days; for one chat, the
     * inbox rows themselves, since sums have no chat), {@code keys} (messages and model calls keep their key in their
     * sums; a tool run's is read from its message or its turn's usage rows, so past both it counts under no key),
     * {@code modelCalls} (calls, turns, tokens, cost: the daily sums of pruned usage rows, kept the usage days; for one
     * chat the usage rows themselves) and {@code toolRuns} (audit rows: runs and their seconds). A source kept
     * for good, or for longer than the range reaches back, is not named. The days are the tenant's own limits, else
     * the node's.
     */
    public static Map<String, Instant> prunedBefore(JsonObject limits, ClawfleetConfig.Retention retention, Instant from,
                                                    Instant now, boolean oneChat) {
        Map<String, Instant> out = new TreeMap<>();
        RetentionStore.Tenant tenant = new RetentionStore.Tenant(null, limits == null ? new JsonObject() : limits);
        for (var source : Map.of("messages", oneChat ? RetentionStore.Kind.INBOX : RetentionStore.Kind.MESSAGE_SUMS,
                "keys", RetentionStore.Kind.INBOX,
                "modelCalls", oneChat ? RetentionStore.Kind.USAGE : RetentionStore.Kind.CALL_SUMS,
                "toolRuns", RetentionStore.Kind.AUDIT).entrySet()) {
            double days = tenant.days(source.getValue(), retention);
            if ("keys".equals(source.getKey()) && days > 0) {
                // a tool run's key is read from its message, else from its turn's usage rows
                double usage = tenant.days(RetentionStore.Kind.USAGE, retention);
                days = usage == 0 ? 0 : Math.max(days, usage);
            }
            if (days > 0) {
                Instant cutoff = now.minusMillis((long) (days * 86_400_000d)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
                if (cutoff.isAfter(from)) {
                    out.put(source.getKey(), cutoff);
                }
            }
        }
        return out;
    }

    /** Tokens one turn used: the sums over its model calls (input, output), zero when it made none. */
    public record TurnTokens(long input, long output) {
    }

    private static final Comparator<Key> ORDER = Comparator
            .comparing(Key::total)
            .thenComparing(Key::day, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(Key::botId, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(Key::provider, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(Key::model, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(Key::keyId, Comparator.nullsFirst(Comparator.naturalOrder()));

    private final Pool pool;
    /** The node's retention, for what a report's range reaches past; null for callers that make no report. */
    private final ClawfleetConfig.Retention retention;

    /** A store for quotas and per-message tokens; its {@link #report}s name nothing pruned (see the other). */
    public UsageStore(Pool pool) {
        this(pool, null);
    }

    /** A store whose {@link #report}s name what the range reaches past the node's (or tenant's) retention. */
    public UsageStore(Pool pool, ClawfleetConfig.Retention retention) {
        this.pool = Objects.requireNonNull(pool);
        this.retention = retention;
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
     * A tenant's tool-time limit ({@code toolSecondsPerDay}) and the run time of its tools since the start of the UTC day.
     *
     * @param limitSeconds null when the tenant has no such limit (then {@code usedMillis} is 0: not summed)
     * @param usedMillis   the wall-clock ms of the tool runs that ended today, each run once (as {@link #report} counts)
     * @param dayEnd       the next UTC midnight, when the day's time starts again from 0
     */
    public record ToolTime(Long limitSeconds, long usedMillis, Instant dayEnd) {
    }

    /**
     * The tenant's {@code toolSecondsPerDay} and its tools' time today (the UTC day of {@code now}): one statement,
     * summing the day's tool runs only for a tenant with that limit (on the index by tenant and time); callers cache it.
     */
    public Future<ToolTime> toolTimeToday(String tenantId, Instant now) {
        OffsetDateTime dayStart = now.atOffset(ZoneOffset.UTC).toLocalDate().atStartOfDay().atOffset(ZoneOffset.UTC);
        Instant dayEnd = dayStart.plusDays(1).toInstant();
        return pool.preparedQuery("SELECT (t.limits ->> 'toolSecondsPerDay')::bigint AS per_day,"
                        + " CASE WHEN t.limits ? 'toolSecondsPerDay' THEN (SELECT coalesce(sum(a.duration_ms), 0)::bigint FROM "
                        + toolRuns("= t.id", "$2", "") + ") END AS used_ms FROM tenants t WHERE t.id = $1")
                .execute(Tuple.of(tenantId, dayStart))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return new ToolTime(null, 0, dayEnd);
                    }
                    Row row = rows.iterator().next();
                    Long used = row.getLong("used_ms");
                    return new ToolTime(row.getLong("per_day"), used == null ? 0 : used, dayEnd);
                });
    }

    /**
     * The detail rows of {@link #totals}: tenant $1, from $2 until $3, chat $4/$5 and bot $6 unless null. Read through
     * {@code llm_usage_tenant_at (tenant_id, created_at)}: the cost is the tenant's calls in the range.
     */
    static final String TOTALS = """
            SELECT date_trunc('day', u.created_at AT TIME ZONE 'UTC')::date AS day, u.bot_id, c.channel, c.chat_key,
                   coalesce(u.provider, '') AS provider, u.model, count(DISTINCT u.inbox_id) AS turns,
                   sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens
              FROM llm_usage u LEFT JOIN chats c ON c.id = u.chat_id
             WHERE u.tenant_id = $1 AND ($6::text IS NULL OR u.bot_id = $6) AND u.created_at >= $2 AND u.created_at < $3
               AND ($5::text IS NULL OR (c.channel = $4 AND c.chat_key = $5))
             GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 6""";

    /**
     * Token totals between {@code since} and {@code until}, per day (UTC), bot, model, and chat when
     * {@code chatKey} is null (else that chat only): the detail rows of the usage API before {@link #report}.
     *
     * @param botId only this bot's; null for every bot of the tenant (a deleted bot's usage included, its chat null)
     */
    public Future<List<JsonObject>> totals(String tenantId, String botId, Instant since, Instant until, String channel, String chatKey) {
        return pool.preparedQuery(TOTALS)
                .execute(Tuple.of(tenantId, utc(since), utc(until), channel, chatKey, botId))
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

    /**
     * Each tenant's usage in {@code query}'s range: one statement per source (messages, model calls, tool runs,
     * storage), run together. The answer has a report for every tenant asked about, in the order asked.
     */
    public Future<Map<String, Report>> report(Query query) {
        Map<String, Map<Key, Acc>> byTenant = new LinkedHashMap<>();
        for (String tenant : query.tenantIds()) {
            byTenant.put(tenant, new HashMap<>());
        }
        if (query.tenantIds().isEmpty()) {
            return Future.succeededFuture(Map.of());
        }
        Split messages = split(query, MESSAGE_DIMS);
        Split calls = split(query, CALL_DIMS);
        Split tools = split(query, TOOL_DIMS);
        Split storage = split(query, STORAGE_DIMS);
        Future<Void> storageRead = query.oneChat() ? Future.succeededFuture()
                : read(storageSql(storage), Tuple.tuple().addArrayOfString(tenants(query)).addString(query.botId()), storage,
                        byTenant, (acc, row) -> acc.storageBytes = row.getLong("bytes"));
        Instant now = Instant.now();
        Map<String, Map<String, Instant>> pruned = new java.util.concurrent.ConcurrentHashMap<>();
        Future<Void> limitsRead = retention == null ? Future.succeededFuture()
                : pool.preparedQuery("SELECT id, limits FROM tenants WHERE id = ANY($1)")
                        .execute(Tuple.tuple().addArrayOfString(tenants(query))).map(rows -> {
                            for (Row row : rows) {
                                pruned.put(row.getString("id"),
                                        prunedBefore(row.getJsonObject("limits"), retention, query.from(), now,
                                                query.oneChat()));
                            }
                            return null;
                        });
        return Future.all(List.of(
                read(messagesSql(messages), params(query), messages, byTenant,
                        (acc, row) -> acc.messages = row.getLong("messages")),
                read(callsSql(calls), params(query), calls, byTenant, UsageStore::addCalls),
                read(toolsSql(tools), params(query), tools, byTenant, UsageStore::addTools),
                storageRead, limitsRead)
        ).map(v -> {
            Map<String, Report> out = new LinkedHashMap<>();
            byTenant.forEach((tenant, groups) -> out.put(tenant, report(query, messages, calls, tools, storage, groups,
                    pruned.getOrDefault(tenant, retention == null ? Map.of()
                            : prunedBefore(new JsonObject(), retention, query.from(), now, query.oneChat())))));
            return out;
        });
    }

    private static void addTools(Acc acc, Row row) {
        acc.toolRuns = row.getLong("tool_runs");
        acc.toolMillis = row.getLong("tool_ms");
        acc.sandboxMillis = row.getLong("sandbox_ms");
    }

    private static void addCalls(Acc acc, Row row) {
        acc.turns = row.getLong("turns");
        acc.modelCalls = row.getLong("calls");
        acc.inputTokens = row.getLong("input_tokens");
        acc.outputTokens = row.getLong("output_tokens");
        acc.cachedTokens = row.getLong("cached_tokens");
        acc.costMicros = row.getLong("cost_micros");
        acc.unpricedCalls = row.getLong("unpriced");
    }

    // --- the sources: which dimensions each can tell apart, by which expressions -------------------------------

    // messages: the inbox rows still there and the daily sums of those pruned (messagesSql)
    private static final Map<Dimension, List<String>> MESSAGE_DIMS = Map.of(
            Dimension.DAY, List.of("m.day"),
            Dimension.BOT, List.of("m.bot_id"),
            Dimension.KEY, List.of("m.key_id"));
    // model calls: the usage rows still there and the daily sums of those pruned (callsSql)
    private static final Map<Dimension, List<String>> CALL_DIMS = Map.of(
            Dimension.DAY, List.of("u.day"),
            Dimension.BOT, List.of("u.bot_id"),
            Dimension.MODEL, List.of("u.provider", "u.model"),
            Dimension.KEY, List.of("u.key_id"));
    private static final Map<Dimension, List<String>> TOOL_DIMS = Map.of(
            Dimension.DAY, List.of("(a.at AT TIME ZONE 'UTC')::date"),
            Dimension.BOT, List.of("a.bot_id"),
            // the run's message names the key while it is kept; after, the key the turn's model calls carry
            Dimension.KEY, List.of("coalesce(i.api_key_id, k.api_key_id)"));
    private static final Map<Dimension, List<String>> STORAGE_DIMS = Map.of(
            Dimension.BOT, List.of("w.bot_id"));
    private static final Map<Dimension, List<String>> ALIASES = Map.of(
            Dimension.DAY, List.of("day"), Dimension.BOT, List.of("bot"), Dimension.MODEL, List.of("provider", "model"),
            Dimension.KEY, List.of("key"));

    // A tool call's audit row names its turn's message and its index in the turn (ToolRunner): a call run again
    // after a failover (its result was not recorded before the owner died) has the same two, so counts once.
    private static final String TOOL_RUN_ID = """
            coalesce((a.metadata_json ->> 'inboxId') || '/' || (a.metadata_json ->> 'call'), '#' || a.id)""";
    private static final String TOOL_INBOX_ID = """
            CASE WHEN jsonb_typeof(a.metadata_json -> 'inboxId') = 'number' THEN (a.metadata_json ->> 'inboxId')::bigint END""";
    // A run's wall-clock ms and whether it ran on a sandbox node (ToolRunner); rows from before they were recorded have
    // neither: they count as runs with no time.
    private static final String TOOL_MILLIS = """
            CASE WHEN jsonb_typeof(a.metadata_json -> 'durationMs') = 'number' THEN (a.metadata_json ->> 'durationMs')::bigint END""";
    private static final String TOOL_SANDBOX = "coalesce((a.metadata_json ->> 'sandbox') = 'true', false)";
    /**
     * The tool runs of the tenants ({@code tenants}: a condition on a.tenant_id) that ended from {@code since} on, each
     * once: of the rows of a run (more than one when it ran again after a failover) the last one, whose result the turn
     * kept. Columns: tenant_id, at, bot_id, metadata_json, duration_ms, sandboxed; alias a.
     */
    private static String toolRuns(String tenants, String since, String conditions) {
        return "(SELECT DISTINCT ON (a.tenant_id, " + TOOL_RUN_ID + ") a.tenant_id, a.at, a.bot_id, a.metadata_json, "
                + TOOL_MILLIS + " AS duration_ms, " + TOOL_SANDBOX + " AS sandboxed\n"
                + "   FROM audit_events a WHERE a.tenant_id " + tenants + " AND a.at >= " + since
                + " AND a.event_type = 'tool_call' AND a.outcome IN ('success', 'error') " + conditions
                + "\n  ORDER BY a.tenant_id, " + TOOL_RUN_ID + ", a.id DESC) a\n";
    }

    /** $1 tenants, $2 from, $3 to, $4 bot or null, $5 channel, $6 chat key or null. */
    private static Tuple params(Query q) {
        return Tuple.tuple().addArrayOfString(tenants(q)).addOffsetDateTime(utc(q.from())).addOffsetDateTime(utc(q.to()))
                .addString(q.botId()).addString(q.channel()).addString(q.chatKey());
    }

    private static String[] tenants(Query q) {
        return q.tenantIds().toArray(String[]::new);
    }

    /**
     * Messages: the inbox rows in the range, and the daily sums the retention pass made of the rows it pruned
     * (usage_messages_daily), a day's sums counting when the day starts in the range. One statement, so a batch pruned
     * while it reads is counted once, as rows or as sums. One chat's messages are its inbox rows only: sums have no chat.
     */
    private static String messagesSql(Split s) {
        return "SELECT m.tenant_id AS tenant" + s.select() + ", " + s.totalFlag() + " AS total,"
                + " coalesce(sum(m.n), 0)::bigint AS messages" + """
                   FROM (SELECT i.tenant_id, (i.received_at AT TIME ZONE 'UTC')::date AS day, c.bot_id, i.api_key_id AS key_id,
                                1::bigint AS n
                           FROM inbox i JOIN chats c ON c.id = i.chat_id
                          WHERE i.tenant_id = ANY($1) AND i.received_at >= $2 AND i.received_at < $3
                            AND ($4::text IS NULL OR c.bot_id = $4)
                            AND ($6::text IS NULL OR (c.channel = $5 AND c.chat_key = $6))
                         UNION ALL
                         SELECT d.tenant_id, d.day, d.bot_id, nullif(d.key_id, ''), d.messages
                           FROM usage_messages_daily d
                          WHERE d.tenant_id = ANY($1) AND $6::text IS NULL
                            AND d.day::timestamp AT TIME ZONE 'UTC' >= $2 AND d.day::timestamp AT TIME ZONE 'UTC' < $3
                            AND ($4::text IS NULL OR d.bot_id = $4)) m
                """ + s.groupBy("m.tenant_id");
    }

    /**
     * Model calls: the usage rows in the range (a turn is the distinct messages they answer), and the daily sums the
     * retention pass made of the rows it pruned (usage_calls_daily, each turn counted once on its first call), a day's
     * sums counting when the day starts in the range. A turn's calls are pruned together, so it is rows or sums, never
     * both; one statement, so a batch pruned while it reads counts once. One chat's calls are its rows only.
     */
    private static String callsSql(Split s) {
        // a row's key: the one the commit copied from the turn's message, else (rows from before V32) the message's
        // while it is kept; compaction's calls answer no message: no key
        String rowKey = s.has(Dimension.KEY) ? "coalesce(u.api_key_id, i.api_key_id)" : "u.api_key_id";
        return "SELECT u.tenant_id AS tenant" + s.select() + ", " + s.totalFlag() + " AS total," + """
                        coalesce(sum(u.calls), 0)::bigint AS calls,
                        (count(DISTINCT u.inbox_id) + coalesce(sum(u.turns), 0))::bigint AS turns,
                        coalesce(sum(u.input_tokens), 0)::bigint AS input_tokens,
                        coalesce(sum(u.output_tokens), 0)::bigint AS output_tokens,
                        coalesce(sum(u.cached_tokens), 0)::bigint AS cached_tokens,
                        sum(u.cost_micros)::bigint AS cost_micros, coalesce(sum(u.unpriced), 0)::bigint AS unpriced
                   FROM (SELECT u.tenant_id, (u.created_at AT TIME ZONE 'UTC')::date AS day, u.bot_id, u.provider, u.model,
                """ + "         " + rowKey + " AS key_id," + """
                                u.inbox_id, 1::bigint AS calls, 0::bigint AS turns, u.input_tokens::bigint,
                                u.output_tokens::bigint, u.cached_tokens::bigint, u.cost_micros,
                                (u.cost_micros IS NULL)::int::bigint AS unpriced
                           FROM llm_usage u
                """ + (s.has(Dimension.KEY) ? "LEFT JOIN inbox i ON i.id = u.inbox_id AND u.api_key_id IS NULL\n" : "") + """
                          WHERE u.tenant_id = ANY($1) AND u.created_at >= $2 AND u.created_at < $3
                            AND ($4::text IS NULL OR u.bot_id = $4)
                            AND ($6::text IS NULL OR u.chat_id IN (SELECT c.id FROM chats c
                                                    WHERE c.tenant_id = ANY($1) AND c.channel = $5 AND c.chat_key = $6))
                         UNION ALL
                         SELECT d.tenant_id, d.day, d.bot_id, nullif(d.provider, ''), d.model, nullif(d.key_id, ''), NULL,
                                d.calls, d.turns, d.input_tokens, d.output_tokens, d.cached_tokens, d.cost_micros, d.unpriced
                           FROM usage_calls_daily d
                          WHERE d.tenant_id = ANY($1) AND $6::text IS NULL
                            AND d.day::timestamp AT TIME ZONE 'UTC' >= $2 AND d.day::timestamp AT TIME ZONE 'UTC' < $3
                            AND ($4::text IS NULL OR d.bot_id = $4)) u
                """ + s.groupBy("u.tenant_id");
    }

    private static String toolsSql(Split s) {
        return "SELECT a.tenant_id AS tenant" + s.select() + ", " + s.totalFlag() + " AS total, count(*) AS tool_runs,"
                + " coalesce(sum(a.duration_ms), 0)::bigint AS tool_ms,"
                + " coalesce(sum(a.duration_ms) FILTER (WHERE a.sandboxed), 0)::bigint AS sandbox_ms\n  FROM "
                + toolRuns("= ANY($1)", "$2", """
                         AND a.at < $3 AND ($4::text IS NULL OR a.bot_id = $4)
                         AND ($6::text IS NULL OR (a.channel = $5 AND a.chat_key = $6))""")
                + (s.has(Dimension.KEY) ? "LEFT JOIN inbox i ON i.id = " + TOOL_INBOX_ID + "\n"
                        + "LEFT JOIN LATERAL (SELECT u.api_key_id FROM llm_usage u WHERE u.inbox_id = " + TOOL_INBOX_ID
                        + " AND u.tenant_id = a.tenant_id AND u.api_key_id IS NOT NULL LIMIT 1) k ON true\n" : "")
                + s.groupBy("a.tenant_id");
    }

    /** $1 tenants, $2 bot or null. octet_length reads a stored value's size without reading the value. */
    private static String storageSql(Split s) {
        return "SELECT w.tenant_id AS tenant" + s.select() + ", " + s.totalFlag() + " AS total,"
                + " coalesce(sum(octet_length(w.content)), 0)::bigint AS bytes"
                + "\n  FROM workspace_files w WHERE w.tenant_id = ANY($1) AND ($2::text IS NULL OR w.bot_id = $2)\n"
                + s.groupBy("w.tenant_id");
    }

    /**
     * How one source is grouped: by every dimension asked for when it can tell them all apart, else not at all
     * (it then counts in the totals only: messages have no model, so messages per model would be a guess).
     */
    private record Split(List<Dimension> dims, Map<Dimension, List<String>> exprs) {

        boolean has(Dimension d) {
            return dims.contains(d);
        }

        boolean grouped() {
            return !dims.isEmpty();
        }

        String select() {
            StringBuilder sql = new StringBuilder();
            for (Dimension d : dims) {
                List<String> aliases = ALIASES.get(d);
                for (int i = 0; i < aliases.size(); i++) {
                    sql.append(", ").append(exprs.get(d).get(i)).append(" AS ").append(aliases.get(i));
                }
            }
            return sql.toString();
        }

        /** True on the row of a tenant's total. */
        String totalFlag() {
            return grouped() ? "GROUPING(" + exprs.get(dims.get(0)).get(0) + ") = 1" : "true";
        }

        String groupBy(String tenant) {
            if (!grouped()) {
                return " GROUP BY " + tenant;
            }
            List<String> all = new ArrayList<>();
            all.add(tenant);
            dims.forEach(d -> all.addAll(exprs.get(d)));
            return " GROUP BY GROUPING SETS ((" + String.join(", ", all) + "), (" + tenant + "))";
        }
    }

    private static Split split(Query query, Map<Dimension, List<String>> supported) {
        boolean all = supported.keySet().containsAll(query.groupBy());
        return new Split(all ? query.groupBy().stream().sorted().toList() : List.of(), supported);
    }

    private Future<Void> read(String sql, Tuple params, Split split, Map<String, Map<Key, Acc>> byTenant,
                              BiConsumer<Acc, Row> measure) {
        return pool.preparedQuery(sql).execute(params).map(rows -> {
            collect(rows, split, byTenant, measure);
            return null;
        });
    }

    private static void collect(RowSet<Row> rows, Split split, Map<String, Map<Key, Acc>> byTenant, BiConsumer<Acc, Row> measure) {
        for (Row row : rows) {
            Map<Key, Acc> groups = byTenant.get(row.getString("tenant"));
            Key key = row.getBoolean("total") ? Key.TOTAL : new Key(false,
                    split.has(Dimension.DAY) ? row.getLocalDate("day") : null,
                    split.has(Dimension.BOT) ? row.getString("bot") : null,
                    split.has(Dimension.MODEL) ? row.getString("provider") : null,
                    split.has(Dimension.MODEL) ? row.getString("model") : null,
                    split.has(Dimension.KEY) ? row.getString("key") : null);
            synchronized (groups) { // the four reads may complete on different threads
                measure.accept(groups.computeIfAbsent(key, k -> new Acc()), row);
            }
        }
    }

    private static Report report(Query query, Split messages, Split calls, Split tools, Split storage, Map<Key, Acc> groups,
                                 Map<String, Instant> prunedBefore) {
        Acc total = groups.getOrDefault(Key.TOTAL, new Acc());
        Measures totals = total.measures(true, true, !query.oneChat());
        List<Group> out = new ArrayList<>();
        if (!query.groupBy().isEmpty()) {
            Map<Key, Acc> sorted = new TreeMap<>(ORDER);
            groups.forEach((key, acc) -> {
                if (!key.total()) {
                    sorted.put(key, acc);
                }
            });
            sorted.forEach((key, acc) -> out.add(new Group(key.day(), key.botId(), key.provider(), key.model(), key.keyId(),
                    acc.measures(messages.grouped(), tools.grouped(), storage.grouped() && !query.oneChat()))));
        }
        return new Report(totals, out, prunedBefore);
    }

    /** A group's identity, or the tenant's total ({@link #TOTAL}: not the group whose values are all null). */
    private record Key(boolean total, LocalDate day, String botId, String provider, String model, String keyId) {
        static final Key TOTAL = new Key(true, null, null, null, null, null);
    }

    /** A group's measures as the sources fill them in; a source with no row for the group leaves zeros. */
    private static final class Acc {
        long messages;
        long turns;
        long modelCalls;
        long inputTokens;
        long outputTokens;
        long cachedTokens;
        Long costMicros;
        long unpricedCalls;
        long toolRuns;
        long storageBytes;
        long toolMillis;
        long sandboxMillis;

        /** The flags say which measures this group can have; the others are null. */
        Measures measures(boolean hasMessages, boolean hasToolRuns, boolean hasStorage) {
            return new Measures(hasMessages ? messages : null, turns, modelCalls, inputTokens, outputTokens, cachedTokens,
                    costMicros == null && modelCalls == 0 ? Long.valueOf(0) : costMicros, unpricedCalls,
                    hasToolRuns ? toolRuns : null, hasStorage ? storageBytes : null, hasToolRuns ? toolMillis : null,
                    hasToolRuns ? sandboxMillis : null);
        }
    }

    private static OffsetDateTime utc(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
