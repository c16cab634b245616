package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.HashSet;

/**
 * Partition leases. Claims and steals increment the epoch; renewals and releases are conditional on
 * the epoch the caller holds. Time is the database's clock, so node clocks need not agree.
 */
public final class LeaseStore {

    // Claims and renewals lock their rows in partition order, as a group of turn commits share-locks
    // them (ConversationStore), so that statements locking several lease rows wait for each other
    // instead of deadlocking.
    private static final String CLAIM = """
            UPDATE partition_leases
               SET owner_node = $1, epoch = epoch + 1, expires_at = now() + $3 * interval '1 millisecond', updated_at = now(),
                   acquired_at = now()
             WHERE partition IN (SELECT partition FROM partition_leases WHERE partition = ANY($2) ORDER BY partition FOR UPDATE)
               AND (owner_node IS NULL OR expires_at < now() OR owner_node = $1 OR owner_node = ANY($4))
            RETURNING partition, epoch""";

    private static final String RENEW = """
            UPDATE partition_leases l
               SET expires_at = now() + $3 * interval '1 millisecond', updated_at = now()
              FROM unnest($1::int[], $2::bigint[]) AS o(p, e)
             WHERE l.partition = o.p AND l.epoch = o.e AND l.owner_node = $4
               AND l.partition IN (SELECT partition FROM partition_leases WHERE partition = ANY($1) ORDER BY partition FOR UPDATE)
            RETURNING l.partition""";

    private static final String RELEASE = """
            UPDATE partition_leases SET owner_node = NULL, expires_at = '-infinity', updated_at = now()
             WHERE partition = $1 AND epoch = $2 AND owner_node = $3""";

    private final Pool pool;

    public LeaseStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Claims those of {@code partitions} that are free, expired, held by this node's earlier
     * incarnation, or held by a node known to have left.
     *
     * @return partition to new epoch, for each claimed
     */
    public Future<Map<Integer, Long>> claim(String nodeId, Set<Integer> partitions, long ttlMs, Set<String> departed) {
        Tuple params = Tuple.tuple().addString(nodeId)
                .addArrayOfInteger(partitions.toArray(Integer[]::new))
                .addLong(ttlMs)
                .addArrayOfString(departed.toArray(String[]::new));
        return pool.preparedQuery(CLAIM).execute(params).map(rows -> {
            Map<Integer, Long> claimed = new HashMap<>();
            for (Row row : rows) {
                claimed.put(row.getInteger("partition"), row.getLong("epoch"));
            }
            return claimed;
        });
    }

    /** Renews every lease held at the given epochs in one statement; returns the partitions still held. */
    public Future<Set<Integer>> renew(String nodeId, Map<Integer, Long> held, long ttlMs) {
        Integer[] partitions = new Integer[held.size()];
        Long[] epochs = new Long[held.size()];
        int i = 0;
        for (var entry : held.entrySet()) {
            partitions[i] = entry.getKey();
            epochs[i++] = entry.getValue();
        }
        Tuple params = Tuple.tuple().addArrayOfInteger(partitions).addArrayOfLong(epochs).addLong(ttlMs).addString(nodeId);
        return pool.preparedQuery(RENEW).execute(params).map(rows -> {
            Set<Integer> kept = new HashSet<>();
            rows.forEach(row -> kept.add(row.getInteger("partition")));
            return kept;
        });
    }

    /** Gives a lease up so the next owner can claim it at once; a no-op if it was already lost. */
    public Future<Boolean> release(String nodeId, int partition, long epoch) {
        return pool.preparedQuery(RELEASE).execute(Tuple.of(partition, epoch, nodeId)).map(rows -> rows.rowCount() == 1);
    }

    public Future<List<Lease>> all() {
        return pool.query("SELECT partition, owner_node, epoch, expires_at < now() AS expired, acquired_at FROM partition_leases "
                        + "ORDER BY partition")
                .execute().map(rows -> {
                    List<Lease> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new Lease(row.getInteger("partition"), row.getString("owner_node"),
                                row.getLong("epoch"), row.getBoolean("expired"),
                                row.getOffsetDateTime("acquired_at") == null ? null : row.getOffsetDateTime("acquired_at").toInstant()));
                    }
                    return out;
                });
    }
}
