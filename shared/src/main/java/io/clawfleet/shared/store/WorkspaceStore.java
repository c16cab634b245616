package io.clawfleet.shared.store;

import io.clawfleet.shared.workspace.DefaultWorkspace;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A bot's workspace files in PostgreSQL. Every path is normalized here ({@link WorkspacePaths#normalize}),
 * so callers may pass what a user or model wrote; a bad path fails the future with an
 * {@link IllegalArgumentException} naming the problem. A file holds text of at most {@value #MAX_FILE_BYTES}
 * UTF-8 bytes; a workspace holds at most {@value #MAX_FILES} files ({@link WorkspaceLimitException}). A write that
 * would grow a tenant's files (all its bots) past its {@code storageBytes} limit fails with
 * {@link LimitReachedException}, checked under a lock on the tenant's row; tenants without the limit take no lock.
 * Writers publish {@link io.clawfleet.shared.workspace.WorkspaceEvents} afterwards; the store does not.
 */
public final class WorkspaceStore {

    public static final int MAX_FILE_BYTES = 1_048_576;
    public static final int MAX_FILES = 2_000;

    private static final String SELECT = "SELECT path, content, version, updated_at FROM workspace_files";
    private static final String IN_FOLDER = " WHERE tenant_id = $1 AND bot_id = $2 AND starts_with(path, $3) ORDER BY path COLLATE \"C\"";
    private static final String ENTRIES = """
            SELECT path, octet_length(content) AS size, version, updated_at,
                   encode(sha256(convert_to(content, 'UTF8')), 'hex') AS sha256
              FROM workspace_files""";
    private static final String UPDATE = """
            UPDATE workspace_files SET content = $4, version = version + 1, updated_at = now()
             WHERE tenant_id = $1 AND bot_id = $2 AND path = $3
            RETURNING path, version, updated_at""";
    private static final String UPDATE_IF_VERSION = """
            UPDATE workspace_files SET content = $4, version = version + 1, updated_at = now()
             WHERE tenant_id = $1 AND bot_id = $2 AND path = $3 AND version = $5
            RETURNING path, version, updated_at""";
    // Overwrites without a lock pass when the file does not grow or the tenant has no storage limit (an InitPlan, run
    // only for a growing file); one held back takes the locked path (storageChecked).
    private static final String UNLIMITED = """

                AND (octet_length(content) >= octet_length($4::text)
                     OR NOT EXISTS (SELECT 1 FROM tenants WHERE id = $1 AND limits ? 'storageBytes'))
            RETURNING""";
    private static final String GUARDED_UPDATE = UPDATE.replace("\nRETURNING", UNLIMITED);
    private static final String GUARDED_UPDATE_IF_VERSION = UPDATE_IF_VERSION.replace("\nRETURNING", UNLIMITED);
    // Locks the tenant's row only when it has a storage limit: tenants without one never wait for each other here.
    // Taken before the bot's row, in the order of TenantLimits.check and tenant deletion.
    private static final String LOCK_TENANT = """
            SELECT (limits ->> 'storageBytes')::bigint AS lim FROM tenants WHERE id = $1 AND limits ? 'storageBytes'
               FOR NO KEY UPDATE""";
    // In a statement after LOCK_TENANT: its snapshot sees every write of an earlier holder of the lock.
    private static final String USED = """
            SELECT coalesce(sum(octet_length(content)), 0)::bigint AS used,
                   coalesce(sum(octet_length(content)) FILTER (WHERE bot_id = $2 AND path = $3), 0)::bigint AS old
              FROM workspace_files WHERE tenant_id = $1""";
    // Run after the bot row is locked, in a statement of its own: its snapshot then sees every
    // file created by an earlier writer, so the count is exact and the limit holds under concurrency.
    private static final String CREATE_OR_UPDATE = """
            INSERT INTO workspace_files AS f (tenant_id, bot_id, path, content)
            SELECT $1, $2, $3, $4
             WHERE (SELECT count(*) FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2) < $5
                OR EXISTS (SELECT 1 FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2 AND path = $3)
            ON CONFLICT (tenant_id, bot_id, path) DO UPDATE SET content = EXCLUDED.content, version = f.version + 1, updated_at = now()
            RETURNING path, version, updated_at""";
    private static final String CREATE_ONLY = """
            INSERT INTO workspace_files (tenant_id, bot_id, path, content)
            SELECT $1, $2, $3, $4
             WHERE (SELECT count(*) FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2) < $5
            ON CONFLICT (tenant_id, bot_id, path) DO NOTHING
            RETURNING path, version, updated_at""";
    // FOR NO KEY UPDATE serializes the bot's file creations without blocking foreign-key checks
    // of other tables (those take FOR KEY SHARE). The tenant's row is locked too when it has a storage limit: first,
    // as target entries are evaluated in order, which is the order of TenantLimits.check and tenant deletion.
    private static final String LOCK_BOT = """
            SELECT (SELECT (limits ->> 'storageBytes')::bigint FROM tenants WHERE id = $1 AND limits ? 'storageBytes'
                       FOR NO KEY UPDATE) AS lim,
                   (SELECT count(*) FROM (SELECT 1 FROM bots WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE) AS b) AS bots""";
    // One statement: claiming the bot's seed mark and inserting the defaults commit together, and
    // a second caller waits on the bot row, then finds the mark set and inserts nothing.
    private static final String SEED = """
            WITH bot AS (
              SELECT id FROM bots WHERE tenant_id = $1 AND id = $2
            ), claim AS (
              UPDATE bots SET workspace_seeded_at = now()
               WHERE tenant_id = $1 AND id = $2 AND workspace_seeded_at IS NULL RETURNING tenant_id, id
            ), seeded AS (
              INSERT INTO workspace_files (tenant_id, bot_id, path, content)
              SELECT claim.tenant_id, claim.id, d.path, d.content
                FROM claim CROSS JOIN unnest($3::text[], $4::text[]) AS d (path, content)
              ON CONFLICT (tenant_id, bot_id, path) DO NOTHING
              RETURNING path
            )
            SELECT (SELECT count(*) FROM bot) AS tenants,
                   (SELECT coalesce(array_agg(path ORDER BY path), '{}') FROM seeded) AS paths""";

    private final Pool pool;

    public WorkspaceStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public Future<Optional<WorkspaceFile>> read(BotRef bot, String path) {
        Objects.requireNonNull(bot, "bot");
        return normalized(path)
                .compose(p -> pool.preparedQuery(SELECT + " WHERE tenant_id = $1 AND bot_id = $2 AND path = $3").execute(Tuple.of(bot.tenantId(), bot.botId(), p)))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(file(rows.iterator().next())));
    }

    /** The files among {@code paths} that exist, keyed by normalized path, in one round trip. */
    public Future<Map<String, WorkspaceFile>> readAll(BotRef bot, Collection<String> paths) {
        Objects.requireNonNull(bot, "bot");
        Set<String> wanted = new LinkedHashSet<>();
        try {
            for (String path : paths) {
                wanted.add(WorkspacePaths.normalize(path));
            }
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(e);
        }
        if (wanted.isEmpty()) {
            return Future.succeededFuture(Map.of());
        }
        if (wanted.size() > MAX_FILES) {
            return Future.failedFuture(new IllegalArgumentException("cannot read more than " + MAX_FILES + " files at once"));
        }
        return pool.preparedQuery(SELECT + " WHERE tenant_id = $1 AND bot_id = $2 AND path = ANY($3)")
                .execute(Tuple.tuple().addString(bot.tenantId()).addString(bot.botId()).addArrayOfString(wanted.toArray(String[]::new)))
                .map(rows -> {
                    Map<String, WorkspaceFile> found = new LinkedHashMap<>();
                    rows.forEach(row -> found.put(row.getString("path"), file(row)));
                    return found;
                });
    }

    /**
     * The files in a folder and its subfolders, with content, sorted by path. {@code folder} is ""
     * for the whole workspace, else a folder path ("memory" or "memory/"; "mem" matches nothing in "memory/").
     * A whole workspace may hold up to 2,000 MiB: to show what is there, {@link #entries} reads no content.
     */
    public Future<List<WorkspaceFile>> list(BotRef bot, String folder) {
        Objects.requireNonNull(bot, "bot");
        return folderPrefix(folder)
                .compose(prefix -> pool.preparedQuery(SELECT + IN_FOLDER)
                        .execute(Tuple.of(bot.tenantId(), bot.botId(), prefix)))
                .map(rows -> {
                    List<WorkspaceFile> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(file(row)));
                    return out;
                });
    }

    /** Like {@link #list} without the content: size and SHA-256 come from the database, the content stays there. */
    public Future<List<WorkspaceEntry>> entries(BotRef bot, String folder) {
        Objects.requireNonNull(bot, "bot");
        return folderPrefix(folder)
                .compose(prefix -> pool.preparedQuery(ENTRIES + IN_FOLDER)
                        .execute(Tuple.of(bot.tenantId(), bot.botId(), prefix)))
                .map(rows -> {
                    List<WorkspaceEntry> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(new WorkspaceEntry(row.getString("path"), row.getLong("size"),
                            row.getLong("version"), InboxStore.instant(row, "updated_at"), row.getString("sha256"))));
                    return out;
                });
    }

    /** Creates or replaces a file; a new file has version 1, every write adds 1. */
    public Future<WorkspaceFile> write(BotRef bot, String path, String content) {
        Objects.requireNonNull(bot, "bot");
        return checked(path, content)
                // Most writes replace an existing file: one statement, no lock.
                .compose(p -> pool.preparedQuery(GUARDED_UPDATE).execute(Tuple.of(bot.tenantId(), bot.botId(), p, content))
                        .compose(rows -> rows.size() == 1
                                ? Future.succeededFuture(written(rows, content))
                                : create(bot, p, content, true).map(Optional::orElseThrow)));
    }

    /**
     * Writes only if the file is at {@code expectedVersion}; 0 means "only if it does not exist yet".
     *
     * @return the written file, or empty when the version did not match (someone else wrote first)
     */
    public Future<Optional<WorkspaceFile>> writeIfVersion(BotRef bot, String path, String content, long expectedVersion) {
        Objects.requireNonNull(bot, "bot");
        if (expectedVersion < 0) {
            return Future.failedFuture(new IllegalArgumentException("expected version must be 0 (a new file) or more, got " + expectedVersion));
        }
        return checked(path, content).compose(p -> expectedVersion == 0
                ? create(bot, p, content, false)
                : pool.preparedQuery(GUARDED_UPDATE_IF_VERSION).execute(Tuple.of(bot.tenantId(), bot.botId(), p, content, expectedVersion))
                        // Nothing written: another version, or a file that grows under a storage limit.
                        .compose(rows -> rows.size() == 1 ? Future.succeededFuture(Optional.of(written(rows, content)))
                                : pool.withTransaction(conn -> storageChecked(conn, bot, p, content)
                                        .compose(v -> conn.preparedQuery(UPDATE_IF_VERSION)
                                                .execute(Tuple.of(bot.tenantId(), bot.botId(), p, content, expectedVersion)))
                                        .map(updated -> updated.size() == 1 ? Optional.of(written(updated, content))
                                                : Optional.<WorkspaceFile>empty()))));
    }

    /** Removes a file; false when there was none. */
    public Future<Boolean> delete(BotRef bot, String path) {
        Objects.requireNonNull(bot, "bot");
        return normalized(path)
                .compose(p -> pool.preparedQuery("DELETE FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2 AND path = $3")
                        .execute(Tuple.of(bot.tenantId(), bot.botId(), p)))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Seeds the {@link DefaultWorkspace} files the first time it is called for a tenant; later calls change nothing. */
    public Future<Void> ensureDefaults(BotRef bot) {
        return seedDefaults(bot).mapEmpty();
    }

    /**
     * Like {@link #ensureDefaults}, telling which files this call seeded: all defaults the first time
     * (less any the tenant already had), none ever after, even if the tenant deleted some since.
     */
    public Future<List<String>> seedDefaults(BotRef bot) {
        Objects.requireNonNull(bot, "bot");
        Map<String, String> defaults = DefaultWorkspace.files();
        return pool.preparedQuery(SEED)
                .execute(Tuple.tuple().addString(bot.tenantId()).addString(bot.botId()).addArrayOfString(defaults.keySet().toArray(String[]::new))
                        .addArrayOfString(defaults.values().toArray(String[]::new)))
                .map(rows -> {
                    Row row = rows.iterator().next();
                    if (row.getLong("tenants") == 0) {
                        throw new IllegalArgumentException("no bot '" + bot + "'");
                    }
                    return Arrays.asList(row.getArrayOfStrings("paths"));
                });
    }

    /**
     * Creates the file (or, with {@code orUpdate}, replaces it) under the bot's lock, within the file limit, and under
     * the tenant's lock within its storage limit if it has one.
     */
    private Future<Optional<WorkspaceFile>> create(BotRef bot, String path, String content, boolean orUpdate) {
        return pool.withTransaction(conn -> conn.preparedQuery(LOCK_BOT).execute(Tuple.of(bot.tenantId(), bot.botId()))
                .compose(locked -> {
                    Row row = locked.iterator().next();
                    if (row.getLong("bots") == 0) {
                        return Future.failedFuture(new IllegalArgumentException("no bot '" + bot + "'"));
                    }
                    Long limit = row.getLong("lim");
                    return limit == null ? Future.<Void>succeededFuture() : conn.preparedQuery(USED)
                            .execute(Tuple.of(bot.tenantId(), bot.botId(), path))
                            .compose(used -> withinStorage(new Storage(limit, used.iterator().next()), path, content));
                })
                .compose(v -> conn.preparedQuery(orUpdate ? CREATE_OR_UPDATE : CREATE_ONLY)
                        .execute(Tuple.of(bot.tenantId(), bot.botId(), path, content, (long) MAX_FILES)))
                .compose(rows -> rows.size() == 1
                        ? Future.succeededFuture(Optional.of(written(rows, content)))
                        : existsOrFull(conn, bot, path)));
    }

    /**
     * Locks the tenant's row if it has a storage limit ({@link TenantLimits#STORAGE_BYTES}) and fails with
     * {@link LimitReachedException} when writing {@code content} at {@code path} would grow its files past it; a write
     * that does not grow them passes. Call it first in the transaction that then writes.
     */
    private static Future<Void> storageChecked(SqlConnection conn, BotRef bot, String path, String content) {
        return storage(conn, bot, path).compose(storage -> storage == null ? Future.succeededFuture()
                : withinStorage(storage, path, content));
    }

    private static Future<Void> withinStorage(Storage storage, String path, String content) {
        long asked = checkContent(path, content);
        return asked > storage.old() && storage.used() - storage.old() + asked > storage.limit()
                ? Future.failedFuture(LimitReachedException.storage(storage.limit(), storage.used(), path, asked))
                : Future.succeededFuture();
    }

    /** A tenant's storage limit, the bytes its files hold and those of one file ({@code old}: 0 when there is none). */
    record Storage(long limit, long used, long old) {

        Storage(long limit, Row used) {
            this(limit, used.getLong("used"), used.getLong("old"));
        }
    }

    /**
     * Locks the tenant's row if it has a storage limit and measures its files under that lock; null (and no lock)
     * when it has no such limit.
     */
    static Future<Storage> storage(SqlConnection conn, BotRef bot, String path) {
        return conn.preparedQuery(LOCK_TENANT).execute(Tuple.of(bot.tenantId())).compose(locked -> {
            Long limit = locked.size() == 0 ? null : locked.iterator().next().getLong("lim");
            return limit == null ? Future.succeededFuture()
                    : conn.preparedQuery(USED).execute(Tuple.of(bot.tenantId(), bot.botId(), path))
                            .map(rows -> new Storage(limit, rows.iterator().next()));
        });
    }

    /** Nothing was inserted: either the file exists (a create-only conflict) or the workspace is full. */
    private static Future<Optional<WorkspaceFile>> existsOrFull(SqlConnection conn, BotRef bot, String path) {
        return conn.preparedQuery("SELECT 1 FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2 AND path = $3")
                .execute(Tuple.of(bot.tenantId(), bot.botId(), path))
                .compose(rows -> rows.size() == 1
                        ? Future.succeededFuture(Optional.empty())
                        : Future.failedFuture(new WorkspaceLimitException("the workspace is full: it holds at most " + MAX_FILES
                                + " files; delete some before creating '" + path + "'")));
    }

    private static Future<String> normalized(String path) {
        try {
            return Future.succeededFuture(WorkspacePaths.normalize(path));
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(e);
        }
    }

    private static Future<String> checked(String path, String content) {
        try {
            String normalized = WorkspacePaths.normalize(path);
            checkContent(normalized, content);
            return Future.succeededFuture(normalized);
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(e);
        }
    }

    /** "" for the whole workspace, else the folder's normalized path and a '/'. */
    private static Future<String> folderPrefix(String folder) {
        String trimmed = folder == null ? "" : folder.replaceAll("/+$", "");
        if (trimmed.isEmpty() || trimmed.equals(".")) {
            return Future.succeededFuture("");
        }
        return normalized(trimmed).map(p -> p + "/");
    }

    /** Text the database can hold, within the size limit; returns its UTF-8 bytes, counted without encoding. */
    static long checkContent(String path, String content) {
        if (content == null) {
            throw new IllegalArgumentException("no content given for '" + path + "'");
        }
        long bytes = 0;
        for (int i = 0; i < content.length(); i++) {
            char c = content.charAt(i);
            if (c == 0) {
                throw new IllegalArgumentException("'" + path + "' contains a NUL character; the workspace holds text files only");
            }
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < content.length() && Character.isLowSurrogate(content.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("'" + path + "' is not valid Unicode text (an unpaired surrogate at character " + i + ")");
            } else {
                bytes += 3;
            }
            if (bytes > MAX_FILE_BYTES) {
                throw new WorkspaceLimitException("'" + path + "' is larger than " + MAX_FILE_BYTES
                        + " bytes (1 MiB), the most a workspace file may hold");
            }
        }
        return bytes;
    }

    private static WorkspaceFile written(RowSet<Row> rows, String content) {
        Row row = rows.iterator().next();
        return new WorkspaceFile(row.getString("path"), content, row.getLong("version"), InboxStore.instant(row, "updated_at"));
    }

    private static WorkspaceFile file(Row row) {
        return new WorkspaceFile(row.getString("path"), row.getString("content"), row.getLong("version"),
                InboxStore.instant(row, "updated_at"));
    }
}
