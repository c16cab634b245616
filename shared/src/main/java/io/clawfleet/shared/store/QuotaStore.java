package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Objects;

/**
 * A tenant's token quotas ({@code tokensPerDay}, {@code tokensPerMonth} of its limits, issue 14) and what its turns
 * used against them: the sums of {@code llm_usage} since the start of the UTC day and month, the rows each turn's
 * commit writes (so a turn replayed after a failover counts once), and of the daily sums of those rows retention has
 * pruned since ({@code usage_calls_daily}, when the node keeps each call's row for less than a month). A sum is
 * computed only for a limit the tenant has, on the indexes by (tenant, time); callers cache the answer for a few
 * seconds.
 */
public final class QuotaStore {

    /**
     * The token limits of a tenant and its use against them.
     *
     * @param perDay   null when the tenant has no daily limit (then {@code usedToday} is 0, not counted)
     * @param perMonth null when the tenant has no monthly limit (then {@code usedThisMonth} is 0, not counted)
     */
    public record Tokens(Long perDay, Long perMonth, long usedToday, long usedThisMonth, Instant dayEnd, Instant monthEnd) {

        /** The limit the tenant is over (the one that resets last when both are), or null when it is within them. */
        public Exceeded exceeded() {
            Exceeded month = perMonth != null && usedThisMonth >= perMonth
                    ? new Exceeded(TenantLimits.TOKENS_PER_MONTH, perMonth, usedThisMonth, monthEnd) : null;
            if (month != null) {
                return month;
            }
            return perDay != null && usedToday >= perDay ? new Exceeded(TenantLimits.TOKENS_PER_DAY, perDay, usedToday, dayEnd) : null;
        }

        /** No token limit at all: nothing to check. */
        public boolean unlimited() {
            return perDay == null && perMonth == null;
        }
    }

    /** A token limit reached: which, how much, and when it resets (the end of the UTC day or month). */
    public record Exceeded(String limit, long max, long used, Instant resetsAt) {

        /** Whole seconds until the reset, at least 1. */
        public long retryAfterSeconds(Instant now) {
            return Math.max(1, (resetsAt.toEpochMilli() - now.toEpochMilli() + 999) / 1000);
        }

        /** The length of the limit's window in seconds, for the RateLimit-Policy header. */
        public long windowSeconds() {
            return TenantLimits.TOKENS_PER_DAY.equals(limit) ? 86_400 : 2_592_000;
        }
    }

    private final Pool pool;

    public QuotaStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** The tenant's token limits and use at {@code now}; limits null and use 0 when it has none (or no such tenant). */
    public Future<Tokens> tokens(String tenantId, Instant now) {
        return tokens(pool, tenantId, now);
    }

    /** {@link #tokens(String, Instant)} read with {@code client} (in a transaction under way, say). */
    public static Future<Tokens> tokens(SqlClient client, String tenantId, Instant now) {
        LocalDate today = now.atOffset(ZoneOffset.UTC).toLocalDate();
        OffsetDateTime dayStart = today.atStartOfDay().atOffset(ZoneOffset.UTC);
        OffsetDateTime monthStart = today.withDayOfMonth(1).atStartOfDay().atOffset(ZoneOffset.UTC);
        Instant dayEnd = dayStart.plusDays(1).toInstant();
        Instant monthEnd = monthStart.plusMonths(1).toInstant();
        return client.preparedQuery("""
                        SELECT (t.limits ->> 'tokensPerDay')::bigint AS per_day, (t.limits ->> 'tokensPerMonth')::bigint AS per_month,
                               CASE WHEN t.limits ? 'tokensPerDay' THEN
                                 (SELECT coalesce(sum(u.input_tokens + u.output_tokens), 0) FROM llm_usage u
                                   WHERE u.tenant_id = t.id AND u.created_at >= $2)
                                 + (SELECT coalesce(sum(d.input_tokens + d.output_tokens), 0) FROM usage_calls_daily d
                                     WHERE d.tenant_id = t.id AND d.day >= ($2 AT TIME ZONE 'UTC')::date) END AS used_today,
                               CASE WHEN t.limits ? 'tokensPerMonth' THEN
                                 (SELECT coalesce(sum(u.input_tokens + u.output_tokens), 0) FROM llm_usage u
                                   WHERE u.tenant_id = t.id AND u.created_at >= $3)
                                 + (SELECT coalesce(sum(d.input_tokens + d.output_tokens), 0) FROM usage_calls_daily d
                                     WHERE d.tenant_id = t.id AND d.day >= ($3 AT TIME ZONE 'UTC')::date) END AS used_month
                          FROM tenants t WHERE t.id = $1""")
                .execute(Tuple.of(tenantId, dayStart, monthStart))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return new Tokens(null, null, 0, 0, dayEnd, monthEnd);
                    }
                    Row row = rows.iterator().next();
                    Long usedToday = row.getLong("used_today");
                    Long usedMonth = row.getLong("used_month");
                    return new Tokens(row.getLong("per_day"), row.getLong("per_month"), usedToday == null ? 0 : usedToday,
                            usedMonth == null ? 0 : usedMonth, dayEnd, monthEnd);
                });
    }
}
