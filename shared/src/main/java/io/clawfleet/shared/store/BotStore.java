package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A tenant's bots (issue 13): each owns a workspace, settings, channels, tasks and chats. Every statement
 * names the tenant; a bot id alone finds nothing.
 */
public final class BotStore {

    /**
     * A bot as its tenant sees it.
     *
     * @param settings what the bot sets itself (autonomy, memoryScope, defaultRole, messagesPerMinute); the rest comes
     *                 from the node's config
     * @param status   {@code active}, or {@code deleting} once its deletion was asked for
     */
    public record Bot(String tenantId, String id, String name, JsonObject settings, String status, Instant createdAt,
                      Instant updatedAt) {

        public BotRef ref() {
            return new BotRef(tenantId, id);
        }

        public boolean deleting() {
            return "deleting".equals(status);
        }

        public JsonObject toJson() {
            return new JsonObject().put("id", id).put("name", name).put("status", status).put("settings", settings.copy())
                    .put("createdAt", createdAt.toString()).put("updatedAt", updatedAt.toString());
        }
    }

    /**
     * A bot's settings as stored, with its tenant's time zone.
     *
     * @param values   the JSON settings (autonomy, memoryScope, defaultRole); empty when none were set
     * @param timeZone the tenant's IANA time zone, the default of its cron tasks (shared by its bots)
     */
    public record Settings(JsonObject values, String timeZone) {
    }

    private static final String COLUMNS = "tenant_id, id, name, settings, status, created_at, updated_at";

    private final Pool pool;

    public BotStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Creates a bot; empty when the tenant already has one of that id (or has no such tenant). Fails with
     * {@link LimitReachedException} when the tenant has as many bots as its limit {@code bots} allows.
     */
    public Future<Optional<Bot>> create(String tenantId, String botId, String name, JsonObject settings) {
        return pool.withTransaction(conn -> TenantLimits.check(conn, tenantId, TenantLimits.BOTS)
                .compose(v -> conn.preparedQuery("""
                                INSERT INTO bots (tenant_id, id, name, settings)
                                SELECT id, $2, $3, jsonb_strip_nulls($4::jsonb) FROM tenants WHERE id = $1
                                ON CONFLICT (tenant_id, id) DO NOTHING
                                RETURNING\s""" + COLUMNS)
                        .execute(Tuple.of(tenantId, botId, name, settings)))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(bot(rows.iterator().next()))));
    }

    public Future<Optional<Bot>> find(BotRef ref) {
        return pool.preparedQuery("SELECT " + COLUMNS + " FROM bots WHERE tenant_id = $1 AND id = $2")
                .execute(Tuple.of(ref.tenantId(), ref.botId()))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(bot(rows.iterator().next())));
    }

    /**
     * The tenant's bots in id order after {@code afterId} (null: from the first), at most {@code limit}.
     *
     * @param only just these bots (a key limited to some bots); null for all
     */
    public Future<List<Bot>> list(String tenantId, String afterId, int limit, Collection<String> only) {
        return pool.preparedQuery("SELECT " + COLUMNS + """
                         FROM bots WHERE tenant_id = $1 AND id > $2 AND ($4::text[] IS NULL OR id = ANY ($4))
                        ORDER BY id LIMIT $3""")
                .execute(Tuple.tuple().addString(tenantId).addString(afterId == null ? "" : afterId).addInteger(limit)
                        .addArrayOfString(only == null ? null : only.toArray(String[]::new)))
                .map(rows -> {
                    List<Bot> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(bot(row)));
                    return out;
                });
    }

    /**
     * Renames a bot and/or merges {@code settings} into its settings (null: unchanged; a setting given as JSON null is
     * unset); empty when there is no such bot. A bot being deleted is not changed: it comes back as it is.
     */
    public Future<Optional<Bot>> update(BotRef ref, String name, JsonObject settings) {
        return pool.preparedQuery("""
                        UPDATE bots SET name = coalesce($3, name), settings = jsonb_strip_nulls(settings || coalesce($4, '{}'::jsonb)),
                               updated_at = now()
                         WHERE tenant_id = $1 AND id = $2 AND status = 'active'""")
                .execute(Tuple.of(ref.tenantId(), ref.botId(), name, settings))
                .compose(rows -> find(ref));
    }

    /** The bot's settings as stored; empty object when none were set or there is no such bot. */
    public Future<JsonObject> settings(BotRef ref) {
        return settingsAndZone(ref).map(Settings::values);
    }

    /** The bot's settings and its tenant's time zone; empty settings in UTC when the bot is unknown. */
    public Future<Settings> settingsAndZone(BotRef ref) {
        return pool.preparedQuery("""
                        SELECT b.settings, t.time_zone FROM bots b JOIN tenants t ON t.id = b.tenant_id
                         WHERE b.tenant_id = $1 AND b.id = $2""")
                .execute(Tuple.of(ref.tenantId(), ref.botId()))
                .map(rows -> rows.size() == 0 ? new Settings(new JsonObject(), "UTC") : settings(rows.iterator().next()));
    }

    /**
     * Merges {@code changes} into the bot's settings (a setting given as JSON null is unset) and, unless {@code timeZone} is null, sets its tenant's
     * time zone, in one statement; returns the result. The zone must be checked (a canonical IANA id).
     */
    public Future<Settings> updateSettings(BotRef ref, JsonObject changes, String timeZone) {
        return pool.preparedQuery("""
                        WITH zone AS (
                          UPDATE tenants SET time_zone = coalesce($4, time_zone) WHERE id = $1 RETURNING time_zone
                        ), b AS (
                          UPDATE bots SET settings = jsonb_strip_nulls(settings || $3), updated_at = now()
                           WHERE tenant_id = $1 AND id = $2 RETURNING settings
                        )
                        SELECT b.settings, zone.time_zone FROM b, zone""")
                .execute(Tuple.of(ref.tenantId(), ref.botId(), changes, timeZone))
                .map(rows -> rows.size() == 0 ? new Settings(new JsonObject(), "UTC") : settings(rows.iterator().next()));
    }

    private static Settings settings(Row row) {
        return new Settings(json(row.getValue("settings")), row.getString("time_zone"));
    }

    private static JsonObject json(Object raw) {
        return raw instanceof JsonObject json ? json : new JsonObject(String.valueOf(raw));
    }

    private static Bot bot(Row row) {
        return new Bot(row.getString("tenant_id"), row.getString("id"), row.getString("name"), json(row.getValue("settings")),
                row.getString("status"), InboxStore.instant(row, "created_at"), InboxStore.instant(row, "updated_at"));
    }
}
