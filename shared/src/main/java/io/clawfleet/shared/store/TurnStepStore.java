package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The inbound execution ledger (seed 000 §4.2): the steps of a turn in progress (a model answer
 * asking for tools, each tool's result), recorded as they complete, under the partition's epoch.
 * A turn re-run after a crash replays them rather than asking the model again or running a tool
 * twice. The turn's commit removes them.
 */
public final class TurnStepStore {

    /** One recorded step; {@code kind} is model or tool. */
    public record Step(int step, String kind, JsonObject payload) {
    }

    /**
     * What a turn that may have run before finds: how many owners started it before (and stopped before its
     * commit: a crash, a kill, a lost lease) and the steps they recorded.
     */
    public record Resumed(int startsBefore, List<Step> steps) {
    }

    /**
     * Counts this start in the message's {@code attempts} and reads its steps, in one statement. Only a start that
     * may follow an earlier owner's calls it (after a partition changed hands), so a turn on a fresh message costs
     * nothing more. The count is not fenced: a stale owner adding one only brings the limit a start closer.
     */
    private static final String RESUME = """
            WITH started AS (
              UPDATE inbox SET attempts = attempts + 1 WHERE id = $1 AND status = 'pending' RETURNING attempts
            )
            SELECT (SELECT attempts FROM started) AS attempts, s.step, s.kind, s.payload
              FROM (SELECT 1) one LEFT JOIN turn_steps s ON s.inbox_id = $1
             ORDER BY s.step""";

    private final Pool pool;

    public TurnStepStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** See {@link Resumed}; a message no longer pending gives 0 starts before. */
    public Future<Resumed> resume(long inboxId) {
        return pool.preparedQuery(RESUME).execute(Tuple.of(inboxId)).map(rows -> {
            int attempts = 0;
            List<Step> steps = new ArrayList<>(rows.size());
            for (Row row : rows) {
                Integer counted = row.getInteger("attempts");
                attempts = counted == null ? 0 : counted;
                if (row.getValue("step") != null) {
                    Object payload = row.getValue("payload");
                    steps.add(new Step(row.getInteger("step"), row.getString("kind"),
                            payload instanceof JsonObject json ? json : new JsonObject(String.valueOf(payload))));
                }
            }
            return new Resumed(Math.max(0, attempts - 1), steps);
        });
    }

    public Future<List<Step>> load(long inboxId) {
        return pool.preparedQuery("SELECT step, kind, payload FROM turn_steps WHERE inbox_id = $1 ORDER BY step")
                .execute(Tuple.of(inboxId))
                .map(rows -> {
                    List<Step> steps = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        Object payload = row.getValue("payload");
                        steps.add(new Step(row.getInteger("step"), row.getString("kind"),
                                payload instanceof JsonObject json ? json : new JsonObject(String.valueOf(payload))));
                    }
                    return steps;
                });
    }

    /** Records a step if the fence still holds; fails with {@link PartitionLostException} otherwise. */
    public Future<Void> record(Fence fence, long inboxId, String tenantId, int step, String kind, JsonObject payload) {
        return pool.preparedQuery("""
                        WITH fence AS (
                          SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
                        ), ins AS (
                          INSERT INTO turn_steps (inbox_id, step, tenant_id, kind, payload)
                          SELECT $4, $5, $6, $7, $8 FROM fence
                          ON CONFLICT (inbox_id, step) DO NOTHING
                        )
                        SELECT count(*) AS held FROM fence""")
                .execute(Tuple.tuple().addInteger(fence.partition()).addString(fence.nodeId()).addLong(fence.epoch())
                        .addLong(inboxId).addInteger(step).addString(tenantId).addString(kind).addValue(payload))
                .map(rows -> {
                    if (rows.iterator().next().getLong("held") == 0) {
                        throw new PartitionLostException(fence);
                    }
                    return null;
                });
    }
}
