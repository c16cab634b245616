package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * Tenants' turn slots, held by workers under leases (issue 14, limit {@code concurrentTurns}): the slots of all of a
 * tenant's unexpired leases never add up to more than its limit, whichever workers hold them. A worker asks again
 * only when it needs more than it holds (or its grant is older than a second); giving slots back and renewing leases
 * need no lock. See V22__turn_slots.sql for the rule that shares a tenant's slots among workers.
 */
public final class TurnSlotStore {

    private final Pool pool;

    public TurnSlotStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * A holder with {@code inUse} turns of the tenant under way asks to hold {@code want} of its slots, leased for
     * {@code ttlMs}: it gets as many as the limit leaves beside the other holders' leases and the room kept for holders
     * that have waited longer for their fair share. One statement; takers of one tenant wait for each other on its row.
     *
     * @return the slots granted (possibly fewer than {@code inUse} when the limit was lowered), or null when the tenant
     *         has no concurrent-turn limit (nothing is held then)
     */
    public Future<Integer> take(String tenantId, String holder, int inUse, int want, long ttlMs) {
        return pool.preparedQuery("SELECT take_turn_slots($1, $2, $3, $4, $5)")
                .execute(Tuple.of(tenantId, holder, inUse, want, (int) ttlMs))
                .map(rows -> rows.iterator().next().getInteger(0));
    }

    /** The tenant's concurrent-turn limit, null when it has none: a plain read, no lock (for tenants known to have none). */
    public Future<Integer> limit(String tenantId) {
        return pool.preparedQuery("SELECT (limits ->> 'concurrentTurns')::integer FROM tenants WHERE id = $1")
                .execute(Tuple.of(tenantId))
                .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getInteger(0));
    }

    /**
     * Lowers what the holder holds of the tenant's slots to {@code keep} (giving back needs no lock: it cannot pass the
     * limit). Unless it is {@code stillWaiting} for more, it also says it wants none, and so gives up its place among
     * the holders waiting.
     */
    public Future<Void> giveBack(String tenantId, String holder, int keep, boolean stillWaiting) {
        return pool.preparedQuery("""
                        UPDATE tenant_turn_slots SET slots = least(slots, $3),
                               unmet = CASE WHEN $4 THEN unmet ELSE 0 END,
                               waiting_since = CASE WHEN $4 THEN waiting_since END
                         WHERE tenant_id = $1 AND holder = $2""")
                .execute(Tuple.of(tenantId, holder, keep, stillWaiting)).mapEmpty();
    }

    /**
     * Extends the holder's leases by {@code ttlMs} from now, in one statement, and returns the tenants whose lease it
     * still had. A lease that expired meanwhile is not revived (others may have taken its slots): the holder asks again.
     */
    public Future<Set<String>> renew(String holder, long ttlMs) {
        return pool.preparedQuery("""
                        UPDATE tenant_turn_slots SET expires_at = clock_timestamp() + $2 * interval '1 millisecond'
                         WHERE holder = $1 AND expires_at > clock_timestamp() RETURNING tenant_id""")
                .execute(Tuple.of(holder, (int) ttlMs))
                .map(rows -> {
                    Set<String> renewed = new HashSet<>();
                    rows.forEach(row -> renewed.add(row.getString(0)));
                    return renewed;
                });
    }

    /** Gives back every slot the holder holds (a worker stopping). */
    public Future<Void> releaseAll(String holder) {
        return pool.preparedQuery("DELETE FROM tenant_turn_slots WHERE holder = $1").execute(Tuple.of(holder)).mapEmpty();
    }
}
