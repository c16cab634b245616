package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.util.Map;
import java.util.Set;

/**
 * What the operator limits per tenant ({@code limits} of {@code POST/PATCH /admin/v1/tenants}): how many bots,
 * keys (not revoked), Telegram channels and tasks (not done) it may have, and how many messages it may send per
 * minute through the HTTP API, cluster-wide ({@code messagesPerMinute}; none by default), and how many model tokens its
 * turns may use per UTC day and month ({@code tokensPerDay}, {@code tokensPerMonth}; none by default). Each is a whole
 * number from 0; a limit
 * not set is the node's default (none for bots, keys and channels; {@code scheduler.maxTasksPerTenant} for
 * tasks). Every limit is checked under a lock on the tenant's row, so concurrent creations cannot pass it.
 * The bytes its workspace files may hold ({@code storageBytes}; none by default) are checked by the writes that grow
 * them. The seconds its tools may run per UTC day ({@code toolSecondsPerDay}; none by default) are checked by the
 * worker before each tool run. The turns its chats may have under way at once, on all workers together
 * ({@code concurrentTurns}; none by default), are held by the workers' turn-slot leases (TurnSlotStore): a turn past
 * the limit waits for a slot, it is not refused. How many days its finished work is kept before scheduler nodes prune
 * it ({@code inboxRetentionDays}, {@code repliesRetentionDays}, {@code usageRetentionDays}, {@code auditRetentionDays},
 * {@code deadLettersRetentionDays}, {@code transcriptRetentionDays}; the node's {@code retention.*} by default) is read
 * by the Pruner; these run from 1
 * (usage from 35, as the monthly token quota sums the month's rows) to 3,650.
 */
public final class TenantLimits {

    public static final String BOTS = "bots";
    public static final String KEYS = "keys";
    public static final String CHANNELS = "channels";
    public static final String TASKS = "tasks";
    /** Messages a tenant may send per minute over the HTTP API, cluster-wide (leased windows: RateWindowStore). */
    public static final String MESSAGES_PER_MINUTE = "messagesPerMinute";
    /** Model tokens (input and output) a tenant's turns may use per UTC day, and per UTC calendar month. */
    public static final String TOKENS_PER_DAY = "tokensPerDay";
    public static final String TOKENS_PER_MONTH = "tokensPerMonth";
    /** Bytes (UTF-8) a tenant's workspace files, all its bots', may hold in all (WorkspaceStore, CompactionStore). */
    public static final String STORAGE_BYTES = "storageBytes";
    /** Wall-clock seconds a tenant's tool runs may take per UTC day, sandboxed or not (the worker's ToolTimeQuota). */
    public static final String TOOL_SECONDS_PER_DAY = "toolSecondsPerDay";
    /** Turns of a tenant's chats under way at once, on all workers together (the workers' TurnSlots). */
    public static final String CONCURRENT_TURNS = "concurrentTurns";
    /** Days a tenant's finished work is kept, per kind, before it is pruned (RetentionStore). */
    public static final String INBOX_RETENTION_DAYS = "inboxRetentionDays";
    public static final String REPLIES_RETENTION_DAYS = "repliesRetentionDays";
    public static final String USAGE_RETENTION_DAYS = "usageRetentionDays";
    public static final String AUDIT_RETENTION_DAYS = "auditRetentionDays";
    public static final String DEAD_LETTERS_RETENTION_DAYS = "deadLettersRetentionDays";
    /** Days a chat's history (the messages the model sees, the transcript an export holds) is kept. */
    public static final String TRANSCRIPT_RETENTION_DAYS = "transcriptRetentionDays";
    /** The least and most each retention may be; usage must cover a calendar month for the monthly quota. */
    private static final Map<String, long[]> RETENTION_RANGES = Map.of(
            INBOX_RETENTION_DAYS, new long[] {1, 3_650},
            REPLIES_RETENTION_DAYS, new long[] {1, 3_650},
            USAGE_RETENTION_DAYS, new long[] {35, 3_650},
            AUDIT_RETENTION_DAYS, new long[] {1, 3_650},
            DEAD_LETTERS_RETENTION_DAYS, new long[] {1, 3_650},
            TRANSCRIPT_RETENTION_DAYS, new long[] {1, 3_650});
    public static final Set<String> NAMES = Set.of(BOTS, KEYS, CHANNELS, TASKS, MESSAGES_PER_MINUTE, TOKENS_PER_DAY,
            TOKENS_PER_MONTH, STORAGE_BYTES, TOOL_SECONDS_PER_DAY, CONCURRENT_TURNS, INBOX_RETENTION_DAYS,
            REPLIES_RETENTION_DAYS, USAGE_RETENTION_DAYS, AUDIT_RETENTION_DAYS, DEAD_LETTERS_RETENTION_DAYS,
            TRANSCRIPT_RETENTION_DAYS);
    private static final long MAX = 1_000_000;
    /** Token and storage limits count in the billions. */
    private static final long MAX_TOKENS = 1_000_000_000_000L;

    private TenantLimits() {
    }

    /**
     * Checks limits as a request gives them and returns them as stored; a null value unsets a limit (the
     * default applies again). Throws {@link IllegalArgumentException} naming what is wrong.
     */
    public static JsonObject parse(Object raw) {
        if (!(raw instanceof JsonObject given)) {
            throw new IllegalArgumentException("field 'limits' must be an object such as {\"bots\": 5, \"keys\": 20}");
        }
        JsonObject out = new JsonObject();
        for (String name : given.fieldNames()) {
            if (!NAMES.contains(name)) {
                throw new IllegalArgumentException("unknown limit '" + name + "'; the limits are " + new java.util.TreeSet<>(NAMES));
            }
            Object value = given.getValue(name);
            long[] range = RETENTION_RANGES.getOrDefault(name,
                    new long[] {0, name.startsWith("tokens") || name.equals(STORAGE_BYTES) ? MAX_TOKENS : MAX});
            if (value != null && !(value instanceof Integer || value instanceof Long)
                    || value != null && (((Number) value).longValue() < range[0] || ((Number) value).longValue() > range[1])) {
                throw new IllegalArgumentException("limit '" + name + "' must be a whole number from " + range[0] + " to "
                        + range[1] + ", or null to use the default; got " + value);
            }
            out.putNull(name);
            if (value != null) {
                out.put(name, ((Number) value).longValue() > Integer.MAX_VALUE ? (Object) ((Number) value).longValue()
                        : (Object) ((Number) value).intValue());
            }
        }
        return out;
    }

    /** How many a tenant has now, per counted limit, and what they are called in a refusal. */
    private static final Map<String, String[]> COUNTS = Map.of(
            BOTS, new String[] {"SELECT count(*) FROM bots WHERE tenant_id = $1", "bots"},
            KEYS, new String[] {"SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL", "keys"},
            CHANNELS, new String[] {"SELECT count(*) FROM channel_bots WHERE tenant_id = $1", "channels"});

    /**
     * Locks the tenant's row (FOR NO KEY UPDATE: creations of the tenant wait for each other, other tables' foreign
     * key checks do not) and fails with {@link LimitReachedException} when it has as many as its limit allows.
     * Call it in the transaction that then creates the thing. A tenant with no such row passes (the insert that
     * follows finds no tenant).
     */
    public static Future<Void> check(SqlConnection conn, String tenantId, String limit) {
        String[] count = COUNTS.get(limit);
        return conn.preparedQuery("SELECT (t.limits ->> $2)::int AS lim, (" + count[0] + ") AS n FROM tenants t WHERE t.id = $1"
                        + " FOR NO KEY UPDATE")
                .execute(Tuple.of(tenantId, limit))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return Future.succeededFuture();
                    }
                    Integer max = rows.iterator().next().getInteger("lim");
                    long n = rows.iterator().next().getLong("n");
                    return max != null && n >= max ? Future.failedFuture(new LimitReachedException(limit, max, count[1]))
                            : Future.succeededFuture();
                });
    }

    /** The tenant's limit of that name, or null when it has none of its own. */
    public static Integer of(JsonObject limits, String name) {
        Object value = limits == null ? null : limits.getValue(name);
        return value instanceof Number number ? number.intValue() : null;
    }
}
