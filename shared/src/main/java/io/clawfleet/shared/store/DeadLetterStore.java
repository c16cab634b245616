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

/** Dead letters of a tenant: listing, marking them replayed, discarding them. */
public final class DeadLetterStore {

    private static final String COLUMNS =
            "SELECT id, tenant_id, kind, ref_id, chat_id, payload, error, attempts, created_at, replayed_at FROM dead_letters";

    /**
     * A bot's letters after an id, oldest first: tenant $1, after $2, at most $3, bot $4. Both lists walk the index on
     * {@code (tenant_id, id)}, so their cost is the tenant's own letters, however many other tenants keep (V46).
     */
    static final String LIST = COLUMNS + " WHERE tenant_id = $1 AND id > $2 AND " + ofBot(4) + " ORDER BY id LIMIT $3";
    /** A bot's newest letters: tenant $1, at most $2, bot $3. */
    static final String NEWEST = COLUMNS + " WHERE tenant_id = $1 AND " + ofBot(3) + " ORDER BY id DESC LIMIT $2";

    private final Pool pool;

    /** The letter is of a chat of the bot named by parameter {@code $n} (a chat's letters name it). */
    private static String ofBot(int n) {
        return "chat_id IN (SELECT c.id FROM chats c WHERE c.tenant_id = $1 AND c.bot_id = $" + n + ")";
    }

    public DeadLetterStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** A bot's dead letters (those of its chats) with id above {@code afterId}, oldest first. */
    public Future<List<DeadLetter>> list(BotRef bot, long afterId, int limit) {
        return pool.preparedQuery(LIST)
                .execute(Tuple.of(bot.tenantId(), afterId, limit, bot.botId()))
                .map(rows -> {
                    List<DeadLetter> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(deadLetter(row)));
                    return out;
                });
    }

    /** A bot's latest {@code limit} dead letters, newest first (the console's list). */
    public Future<List<DeadLetter>> newest(BotRef bot, int limit) {
        return pool.preparedQuery(NEWEST)
                .execute(Tuple.of(bot.tenantId(), limit, bot.botId()))
                .map(rows -> {
                    List<DeadLetter> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(deadLetter(row)));
                    return out;
                });
    }

    public Future<Optional<DeadLetter>> get(BotRef bot, long id) {
        return pool.preparedQuery(COLUMNS + " WHERE tenant_id = $1 AND id = $2 AND " + ofBot(3))
                .execute(Tuple.of(bot.tenantId(), id, bot.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(deadLetter(rows.iterator().next())));
    }

    /** Deletes a dead letter of the bot (the console's "discard"); false when the bot has no such letter. */
    public Future<Boolean> discard(BotRef bot, long id) {
        return pool.preparedQuery("DELETE FROM dead_letters WHERE tenant_id = $1 AND id = $2 AND " + ofBot(3))
                .execute(Tuple.of(bot.tenantId(), id, bot.botId())).map(rows -> rows.rowCount() == 1);
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
