package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** Dead letters of a tenant: listing, and marking them replayed. */
public final class DeadLetterStore {

    private static final String COLUMNS =
            "SELECT id, tenant_id, kind, ref_id, chat_id, payload, error, attempts, created_at, replayed_at FROM dead_letters";

    private final Pool pool;

    public DeadLetterStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** The tenant's dead letters with id above {@code afterId}, oldest first. */
    public Future<List<DeadLetter>> list(String tenantId, long afterId, int limit) {
        return pool.preparedQuery(COLUMNS + " WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3")
                .execute(Tuple.of(tenantId, afterId, limit))
                .map(rows -> {
                    List<DeadLetter> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(deadLetter(row)));
                    return out;
                });
    }

    public Future<Optional<DeadLetter>> get(String tenantId, long id) {
        return pool.preparedQuery(COLUMNS + " WHERE tenant_id = $1 AND id = $2").execute(Tuple.of(tenantId, id))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(deadLetter(rows.iterator().next())));
    }

    public Future<Void> markReplayed(long id) {
        return pool.preparedQuery("UPDATE dead_letters SET replayed_at = now() WHERE id = $1 AND replayed_at IS NULL")
                .execute(Tuple.of(id)).mapEmpty();
    }

    private static DeadLetter deadLetter(Row row) {
        Object payload = row.getValue("payload");
        return new DeadLetter(row.getLong("id"), row.getString("tenant_id"), row.getString("kind"),
                row.getString("ref_id"), row.getLong("chat_id"),
                payload instanceof JsonObject json ? json : new JsonObject(String.valueOf(payload)),
                row.getString("error"), row.getInteger("attempts"), InboxStore.instant(row, "created_at"),
                InboxStore.instant(row, "replayed_at"));
    }
}
