package io.clawfleet.gateway.export;

import io.clawfleet.gateway.export.ExportSections.Section;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.streams.WriteStream;
import io.vertx.sqlclient.Cursor;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import io.vertx.sqlclient.Tuple;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Streams everything of one tenant as a zip archive (issue 13; format in docs/TENANTS.md). The rows
 * come from one REPEATABLE READ, read-only transaction, so the archive is one consistent snapshot,
 * through cursors: the next batch is fetched only when the output has room, so memory holds at most
 * one batch of rows and one chunk of output whatever the tenant's size. {@code manifest.json} and
 * the zip's central directory are written last: an archive cut short by a failure has neither.
 */
public final class TenantExport {

    public static final String FORMAT = "clawfleet-export";
    public static final int VERSION = 1;
    static final String MANIFEST = "manifest.json";
    private static final String SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;"
            + " SET LOCAL TimeZone = 'UTC'; SET LOCAL application_name = 'clawfleet-export';"
            // A client that stops reading must not hold a snapshot (and vacuum) for ever.
            + " SET LOCAL idle_in_transaction_session_timeout = '10min'";
    private static final byte[] NEWLINE = {'\n'};

    private final Vertx vertx;
    private final Pool pool;
    private final int maxFetch;
    private final long stallTimeoutMs;

    /**
     * @param maxFetch       rows fetched per round trip at most (each entry has its own, smaller or equal)
     * @param stallTimeoutMs how long the output may stay full before the export gives up, in ms
     */
    public TenantExport(Vertx vertx, Pool pool, int maxFetch, long stallTimeoutMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.pool = Objects.requireNonNull(pool);
        this.maxFetch = maxFetch;
        this.stallTimeoutMs = stallTimeoutMs;
        if (maxFetch < 1 || stallTimeoutMs < 1) {
            throw new IllegalArgumentException("maxFetch and stallTimeoutMs must be positive");
        }
    }

    /**
     * Opens the snapshot and reads the tenant row; empty (and nothing held) when there is no such tenant.
     * Nothing has been written anywhere yet, so a failure here can still be answered as an error.
     */
    public Future<Optional<Run>> open(String tenantId) {
        Objects.requireNonNull(tenantId);
        return pool.getConnection().compose(connection -> connection.begin()
                .compose(tx -> connection.query(SNAPSHOT).execute()
                        .compose(v -> connection.preparedQuery(ExportSections.TENANT).execute(Tuple.of(tenantId)))
                        .map(rows -> {
                            if (rows.size() == 0) {
                                connection.close();
                                return Optional.<Run>empty();
                            }
                            Row row = rows.iterator().next();
                            return Optional.of(new Run(tenantId, connection, tx, row.getString(0), row.getString(1)));
                        }))
                .onFailure(e -> connection.close()));
    }

    /** One export under way: its connection and snapshot, and how far it got. */
    public final class Run {

        private final String tenantId;
        private final SqlConnection connection;
        private final Transaction tx;
        private final String tenantJson;
        private final String exportedAt;
        private final Map<String, Long> counts = new LinkedHashMap<>();
        private final List<String> botIds = new java.util.ArrayList<>();
        // Volatile: abort() comes from the connection's close, progress is read by observers on other threads.
        private volatile ZipStream zip;
        private volatile Throwable aborted;
        private volatile long rowsRead;

        private Run(String tenantId, SqlConnection connection, Transaction tx, String tenantJson, String exportedAt) {
            this.tenantId = tenantId;
            this.connection = connection;
            this.tx = tx;
            this.tenantJson = tenantJson;
            this.exportedAt = exportedAt;
        }

        /** When the snapshot was taken (the transaction's start), ISO 8601 in UTC. */
        public String exportedAt() {
            return exportedAt;
        }

        /**
         * Writes the whole archive into {@code out} (it does not end it) and releases the connection.
         * On failure the archive is left unfinished: no manifest, no central directory.
         */
        public Future<JsonObject> writeTo(WriteStream<Buffer> out) {
            zip = new ZipStream(vertx, out, stallTimeoutMs);
            // Started inside a future, so that nothing thrown on the way escapes without the connection being released.
            return Future.<Void>succeededFuture().compose(v -> {
                        zip.begin("tenant.json");
                        zip.write(tenantJson);
                        zip.end();
                        counts.put("tenant.json", 1L);
                        return sections(ExportSections.TENANT_FIRST, null);
                    })
                    .compose(v -> botIds())
                    .compose(this::bots)
                    .compose(v -> sections(ExportSections.TENANT_LAST, null))
                    .map(v -> {
                        JsonObject manifest = manifest();
                        zip.begin(MANIFEST);
                        zip.write(manifest.encodePrettily());
                        zip.end();
                        zip.finish();
                        return manifest;
                    })
                    .andThen(done -> tx.rollback().onComplete(r -> connection.close()));
        }

        /** Stops the export at its next step (the client went away); the archive stays unfinished. */
        public void abort(Throwable cause) {
            aborted = cause;
            if (zip != null) {
                zip.abort(cause);
            }
        }

        /** Rows read from the database so far. */
        public long rowsRead() {
            return rowsRead;
        }

        /** Whether the export is waiting for the output to take more (nothing is read meanwhile). */
        public boolean waitingForRoom() {
            return zip != null && zip.waitingForRoom();
        }

        /** Bytes handed to the output so far. */
        public long bytesOut() {
            return zip == null ? 0 : zip.bytesOut();
        }

        private JsonObject manifest() {
            JsonObject entries = new JsonObject();
            counts.forEach(entries::put);
            return new JsonObject().put("format", FORMAT).put("version", VERSION).put("tenant", tenantId)
                    .put("exportedAt", exportedAt).put("bots", new io.vertx.core.json.JsonArray(botIds))
                    .put("entries", entries);
        }

        /** The tenant's bots, read in the snapshot (a tenant has at most a few thousand). */
        private Future<List<String>> botIds() {
            return rows(ExportSections.BOT_IDS, 1_000, null, row -> botIds.add(row.getString("id"))).map(count -> botIds);
        }

        /** Each bot's folder in turn: its entries, its workspace files, the entries after them. */
        private Future<Void> bots(List<String> ids) {
            Future<Void> chain = Future.succeededFuture();
            for (String botId : ids) {
                chain = chain.compose(v -> sections(ExportSections.BOT_BEFORE_WORKSPACE, botId))
                        .compose(v -> workspaceFiles(botId))
                        .compose(v -> sections(ExportSections.BOT_AFTER_WORKSPACE, botId));
            }
            return chain;
        }

        /** @param botId the bot whose folder the entries go to ($2 of their statements); null for the tenant's own */
        private Future<Void> sections(List<Section> sections, String botId) {
            Future<Void> chain = Future.succeededFuture();
            for (Section section : sections) {
                chain = chain.compose(v -> section(section, botId));
            }
            return chain;
        }

        private Future<Void> section(Section section, String botId) {
            String path = (botId == null ? "" : ExportSections.botDir(botId)) + section.path();
            zip.begin(path);
            return rows(section.sql(), section.fetchSize(), botId, row -> {
                zip.write(row.getString(0));
                zip.write(NEWLINE);
            }).map(count -> {
                zip.end();
                counts.put(path, count);
                return null;
            });
        }

        private Future<Void> workspaceFiles(String botId) {
            String dir = ExportSections.botDir(botId) + "workspace/";
            return rows(ExportSections.WORKSPACE_FILES, ExportSections.WORKSPACE_FETCH, botId, row -> {
                zip.begin(dir + row.getString("path"));
                zip.write(row.getString("content"));
                zip.end();
            }).map(count -> {
                counts.put(dir, count);
                return null;
            });
        }

        /**
         * Every row of {@code sql} for the tenant ({@code $1}) and, unless null, the bot ({@code $2}), one batch at
         * a time, each batch only once the output has room.
         */
        private Future<Long> rows(String sql, int fetchSize, String botId, Consumer<Row> each) {
            return connection.prepare(sql).compose(statement -> {
                Cursor cursor = statement.cursor(botId == null ? Tuple.of(tenantId) : Tuple.of(tenantId, botId));
                Promise<Long> done = Promise.promise();
                next(cursor, Math.min(fetchSize, maxFetch), each, 0, done);
                return done.future().compose(count -> cursor.close().map(count));
            });
        }

        /**
         * Reads one batch and schedules the next from its callback, not as a chain of futures: a chain
         * one link per batch overflowed the stack when it completed (1,000 batches).
         */
        private void next(Cursor cursor, int fetchSize, Consumer<Row> each, long count, Promise<Long> done) {
            if (aborted != null) {
                done.tryFail(aborted);
                return;
            }
            cursor.read(fetchSize).onComplete(read -> {
                if (read.failed()) {
                    done.tryFail(read.cause());
                    return;
                }
                try {
                    read.result().forEach(each);
                } catch (RuntimeException e) {
                    done.tryFail(e);
                    return;
                }
                rowsRead += read.result().size();
                long total = count + read.result().size();
                if (!cursor.hasMore()) {
                    done.tryComplete(total);
                    return;
                }
                zip.room().onComplete(room -> {
                    if (room.failed()) {
                        done.tryFail(room.cause());
                    } else {
                        next(cursor, fetchSize, each, total, done);
                    }
                });
            });
        }
    }
}
