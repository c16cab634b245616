package io.clawfleet.shared.store;

import io.clawfleet.shared.db.DatabaseFailures;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
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
     * What a turn that may have run before finds: how many owners that took the partition over started it and
     * stopped before its commit (a crash, a kill, a lost lease), and the steps they recorded. The owner that started
     * it first, before any takeover, is not in the count: {@code restarts} 0 means it may have run once.
     */
    public record Resumed(int restarts, List<Step> steps) {
    }

    /**
     * Reads the message's count of restarts and its steps, in one statement; a message never restarted counts this
     * start at once (the common case after one takeover costs nothing more). A message restarted before is counted
     * by {@link #countRestart} once its owner really starts it (fenced there). The first count is not fenced: a stale
     * owner setting it only presumes what a takeover presumes anyway, that the first owner may have started it.
     */
    private static final String RESUME = """
            WITH now_pending AS (
              SELECT attempts FROM inbox WHERE id = $1 AND status = 'pending'
            ), first_restart AS (
              UPDATE inbox SET attempts = 1 WHERE id = $1 AND status = 'pending' AND attempts = 0
            )
            SELECT (SELECT attempts FROM now_pending) AS attempts, s.step, s.kind, s.payload
              FROM (SELECT 1) one LEFT JOIN turn_steps s ON s.inbox_id = $1
             ORDER BY s.step""";

    /** As {@link #RESUME}, counting nothing: for a retry on the owner that started the turn. */
    private static final String RETRY = """
            SELECT (SELECT attempts FROM inbox WHERE id = $1 AND status = 'pending') AS attempts, s.step, s.kind, s.payload
              FROM (SELECT 1) one LEFT JOIN turn_steps s ON s.inbox_id = $1
             ORDER BY s.step""";

    private final Pool pool;

    public TurnStepStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** See {@link Resumed}; a message no longer pending gives 0 restarts. */
    public Future<Resumed> resume(long inboxId) {
        return DatabaseFailures.marked(pool.preparedQuery(RESUME).execute(Tuple.of(inboxId))).map(TurnStepStore::resumed);
    }

    /**
     * What a retry finds on the owner that started the turn and did not die (its turn failed, or its lease ran out while
     * the database was away and it claimed the partition straight back): the steps, and the restarts counted so far.
     * This start is no restart: nothing is counted.
     */
    public Future<Resumed> retry(long inboxId) {
        return DatabaseFailures.marked(pool.preparedQuery(RETRY).execute(Tuple.of(inboxId))).map(TurnStepStore::resumed);
    }

    private static Resumed resumed(RowSet<Row> rows) {
        int restarts = 0;
        List<Step> steps = new ArrayList<>(rows.size());
        for (Row row : rows) {
            Integer counted = row.getInteger("attempts");
            restarts = counted == null ? 0 : counted;
            if (row.getValue("step") != null) {
                steps.add(step(row));
            }
        }
        return new Resumed(restarts, steps);
    }

    /**
     * Counts one more restart of a message that was restarted before, as its owner starts it; fenced, so that an owner
     * that lost the partition while the turn waited to start counts nothing and learns it
     * ({@link PartitionLostException}). Unfenced, a message that waited through several ownership changes was counted
     * by each stale owner whose wait ended, and dead-lettered as a poison message though no turn of it ever crashed
     * (seen in the chaos run with floods: 7 innocent messages).
     */
    public Future<Void> countRestart(Fence fence, long inboxId) {
        return DatabaseFailures.marked(pool.preparedQuery("""
                        WITH fence AS (
                          SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
                        ), counted AS (
                          UPDATE inbox SET attempts = attempts + 1 WHERE id = $4 AND status = 'pending' AND EXISTS (SELECT 1 FROM fence)
                        )
                        SELECT count(*) AS held FROM fence""")
                .execute(Tuple.of(fence.partition(), fence.nodeId(), fence.epoch(), inboxId)))
                .map(rows -> {
                    if (rows.iterator().next().getLong("held") == 0) {
                        throw new PartitionLostException(fence);
                    }
                    return null;
                });
    }

    public Future<List<Step>> load(long inboxId) {
        return DatabaseFailures.marked(pool.preparedQuery("SELECT step, kind, payload FROM turn_steps WHERE inbox_id = $1 ORDER BY step")
                .execute(Tuple.of(inboxId)))
                .map(rows -> {
                    List<Step> steps = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        steps.add(step(row));
                    }
                    return steps;
                });
    }

    private static Step step(Row row) {
        Object payload = row.getValue("payload");
        return new Step(row.getInteger("step"), row.getString("kind"),
                payload instanceof JsonObject json ? json : new JsonObject(String.valueOf(payload)));
    }

    /** Records a step if the fence still holds; fails with {@link PartitionLostException} otherwise. */
    public Future<Void> record(Fence fence, long inboxId, String tenantId, int step, String kind, JsonObject payload) {
        return DatabaseFailures.marked(pool.preparedQuery("""
                        WITH fence AS (
                          SELECT 1 FROM partition_leases WHERE partition = $1 AND owner_node = $2 AND epoch = $3 FOR SHARE
                        ), ins AS (
                          INSERT INTO turn_steps (inbox_id, step, tenant_id, kind, payload)
                          SELECT $4, $5, $6, $7, $8 FROM fence
                          ON CONFLICT (inbox_id, step) DO NOTHING
                        )
                        SELECT count(*) AS held FROM fence""")
                .execute(Tuple.tuple().addInteger(fence.partition()).addString(fence.nodeId()).addLong(fence.epoch())
                        .addLong(inboxId).addInteger(step).addString(tenantId).addString(kind).addValue(payload)))
                .map(rows -> {
                    if (rows.iterator().next().getLong("held") == 0) {
                        throw new PartitionLostException(fence);
                    }
                    return null;
                });
    }
}
