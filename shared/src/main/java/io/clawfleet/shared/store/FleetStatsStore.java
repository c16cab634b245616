package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What the whole cluster looks like from PostgreSQL, for the fleet gauges of scheduler nodes (docs/OPERATIONS.md):
 * how long the oldest unprocessed message of each partition has waited, how old the oldest reply not yet delivered
 * to a channel is, how many partitions no live worker holds, and the dead letters not replayed per tenant. One
 * statement, reading partial indexes: a cluster that keeps up has few rows in each.
 */
public final class FleetStatsStore {

    /**
     * @param partitionLagSeconds age of the oldest pending inbox row of each partition that has one
     * @param outboxOldestSeconds age of the oldest push reply not yet delivered (0 when none)
     * @param partitions          partitions of the cluster
     * @param partitionsUnowned   partitions with no owner or an expired lease
     * @param deadLetters         dead letters not replayed, by (tenant, kind)
     */
    public record FleetStats(Map<Integer, Double> partitionLagSeconds, double outboxOldestSeconds, int partitions,
                             int partitionsUnowned, Map<List<String>, Long> deadLetters) {
    }

    private static final String SQL = """
            SELECT 'lag' AS what, partition::text AS a, '' AS b, extract(epoch FROM now() - min(received_at))::float8 AS v
              FROM inbox WHERE status = 'pending' GROUP BY partition
            UNION ALL
            SELECT 'outbox', '', '', coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
              FROM outbox WHERE push AND status IN ('pending', 'sending')
            UNION ALL
            SELECT 'leases', '', '', count(*)::float8 FROM partition_leases
            UNION ALL
            SELECT 'unowned', '', '', count(*)::float8 FROM partition_leases WHERE owner_node IS NULL OR expires_at < now()
            UNION ALL
            SELECT 'dead', tenant_id, kind, count(*)::float8 FROM dead_letters WHERE replayed_at IS NULL GROUP BY tenant_id, kind""";

    private final Pool pool;

    public FleetStatsStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public Future<FleetStats> read() {
        return pool.query(SQL).execute().map(rows -> {
            Map<Integer, Double> lag = new HashMap<>();
            Map<List<String>, Long> dead = new HashMap<>();
            double outbox = 0;
            int partitions = 0;
            int unowned = 0;
            for (Row row : rows) {
                double value = row.getDouble("v");
                switch (row.getString("what")) {
                    case "lag" -> lag.put(Integer.parseInt(row.getString("a")), Math.max(0, value));
                    case "outbox" -> outbox = Math.max(0, value);
                    case "leases" -> partitions = (int) value;
                    case "unowned" -> unowned = (int) value;
                    case "dead" -> dead.put(List.of(row.getString("a"), row.getString("b")), (long) value);
                    default -> throw new IllegalStateException("unexpected row " + row.getString("what"));
                }
            }
            return new FleetStats(Map.copyOf(lag), outbox, partitions, unowned, Map.copyOf(dead));
        });
    }
}
