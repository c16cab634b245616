package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.Objects;

/**
 * The tenants' minute windows of messages (issue 14): a gateway leases a chunk of a tenant's tokens for the current
 * minute (PostgreSQL's clock, the same for every gateway) and spends them without asking again. One statement per
 * lease; the sum granted in a window never passes the limit. Each scope of a tenant has windows of its own: the
 * tenant's ({@link #TENANT}), a key's ({@code key:<keyId>}) and a bot's ({@code bot:<botId>}).
 */
public final class RateWindowStore {

    /**
     * What a lease got.
     *
     * @param granted        tokens given now (0: the window's limit is spent)
     * @param millisLeft     until the window ends, by the database's clock
     */
    public record Lease(int granted, long millisLeft) {
    }

    /** The scope of the tenant's own rate. */
    public static final String TENANT = "";

    private final Pool pool;

    public RateWindowStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** Leases up to {@code chunk} of the tenant's {@code limit} tokens of the current minute. */
    public Future<Lease> lease(String tenantId, int chunk, int limit) {
        return lease(tenantId, TENANT, chunk, limit);
    }

    /**
     * Leases up to {@code chunk} of the {@code limit} tokens of the current minute of one scope of the tenant
     * ({@link #TENANT}, {@code key:<keyId>}, {@code bot:<botId>}).
     */
    public Future<Lease> lease(String tenantId, String scope, int chunk, int limit) {
        return pool.preparedQuery("""
                        INSERT INTO tenant_rate_windows AS w (tenant_id, scope, window_start, granted, last_grant)
                        VALUES ($1, $4, date_trunc('minute', now()), least($2, $3), least($2, $3))
                        ON CONFLICT (tenant_id, scope, window_start) DO UPDATE
                           SET granted = least(w.granted + $2, $3), last_grant = least(w.granted + $2, $3) - w.granted
                        RETURNING last_grant,
                                  greatest(0, ceil(extract(epoch FROM window_start + interval '1 minute' - now()) * 1000))::bigint
                                      AS millis_left""")
                .execute(Tuple.of(tenantId, chunk, limit, Objects.requireNonNull(scope)))
                .map(rows -> {
                    Row row = rows.iterator().next();
                    return new Lease(row.getInteger("last_grant"), row.getLong("millis_left"));
                });
    }

    /** Drops windows (of every scope) older than ten minutes; any gateway may, any number of times. */
    public Future<Integer> dropOld() {
        return pool.query("DELETE FROM tenant_rate_windows WHERE window_start < now() - interval '10 minutes'").execute()
                .map(rows -> rows.rowCount());
    }
}
