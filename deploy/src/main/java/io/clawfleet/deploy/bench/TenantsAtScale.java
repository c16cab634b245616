package io.clawfleet.deploy.bench;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.store.TenantDeletionStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Vertx;

import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.lang.management.ThreadMXBean;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench --tenants N} (issue 13): N tenants with 3 keys each in the bench's database, the load's
 * chats spread over the first {@code active} of them (one key each), and the cost of authentication
 * measured with the gateway's own {@link ApiKeyAuth}: a cold lookup (its plan and its time), and a
 * lookup from the cache in CPU per request.
 */
public final class TenantsAtScale {

    private static final int KEYS_PER_TENANT = 3;
    private static final int CACHED_ROUNDS = 1_000;

    private TenantsAtScale() {
    }

    /** The key of tenant {@code t}'s key number {@code k}: known to the bench, stored only as a digest. */
    static String key(int tenant, int key) {
        return "cf_bench" + tenant + "k" + key + "_0123456789abcdefghijklmnopqrstuvwxyzABCD";
    }

    /** Creates the tenants and their keys in one statement each; returns the keys of the first {@code active} tenants. */
    public static List<String> seed(DbUrl db, int tenants, int active, BenchReport report) throws Exception {
        long started = System.nanoTime();
        try (Connection connection = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password() == null ? "" : db.password());
             Statement statement = connection.createStatement()) {
            statement.execute("INSERT INTO tenants (id, name) SELECT 'bench-' || t, 'Bench tenant ' || t "
                    + "FROM generate_series(1, " + tenants + ") t ON CONFLICT (id) DO NOTHING");
            statement.execute("""
                    INSERT INTO api_keys (key_hash, tenant_id, id, prefix, name, scopes)
                    SELECT encode(sha256(convert_to(key, 'UTF8')), 'hex'), 'bench-' || t, 'bench' || t || 'k' || k,
                           'cf_bench' || t || 'k' || k, 'bench key ' || k, '{admin}'
                      FROM generate_series(1, %d) t, generate_series(1, %d) k,
                           LATERAL (SELECT 'cf_bench' || t || 'k' || k || '_0123456789abcdefghijklmnopqrstuvwxyzABCD' AS key) x
                    ON CONFLICT (key_hash) DO NOTHING""".formatted(tenants, KEYS_PER_TENANT));
            statement.execute("ANALYZE tenants");
            statement.execute("ANALYZE api_keys");
        }
        report.add("tenants created (" + KEYS_PER_TENANT + " keys each)", tenants, "tenants");
        report.add("time to create them", (System.nanoTime() - started) / 1_000_000, "ms");
        List<String> keys = new ArrayList<>();
        for (int t = 1; t <= Math.min(active, tenants); t++) {
            keys.add(key(t, 1));
        }
        report.condition("activeTenants", keys.size());
        return keys;
    }

    /**
     * Authentication with {@code active} tenants' keys in use ({@value KEYS_PER_TENANT} each): every key
     * looked up once cold, then from the cache {@value CACHED_ROUNDS} times over, on one thread whose CPU
     * time is read.
     */
    public static void measureAuth(DbUrl db, int tenants, int active, BenchReport report) throws Exception {
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, db, 2, 10_000);
        try {
            report.note("cold key lookup plan: " + plan(db));
            ApiKeyAuth auth = new ApiKeyAuth(new TenantStore(database.pool()));
            List<String> keys = new ArrayList<>();
            for (int t = 1; t <= Math.min(active, tenants); t++) {
                for (int k = 1; k <= KEYS_PER_TENANT; k++) {
                    keys.add(key(t, k));
                }
            }
            long[] cold = new long[keys.size()];
            for (int i = 0; i < keys.size(); i++) {
                long start = System.nanoTime();
                var owner = auth.resolveOwner(keys.get(i)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                cold[i] = System.nanoTime() - start;
                if (owner.isEmpty()) {
                    throw new IllegalStateException("a seeded key was not found: " + keys.get(i));
                }
            }
            Arrays.sort(cold);
            report.add("cold key lookup (one statement), median", cold[cold.length / 2] / 1_000_000.0, "ms");
            report.add("cold key lookup, p99", cold[(int) (cold.length * 0.99)] / 1_000_000.0, "ms");
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long cpuBefore = threads.getCurrentThreadCpuTime();
            long lookups = 0;
            for (int round = 0; round < CACHED_ROUNDS; round++) {
                for (String key : keys) {
                    if (auth.resolveOwner(key).result().isEmpty()) {
                        throw new IllegalStateException("a cached key was not found");
                    }
                    lookups++;
                }
            }
            double micros = (threads.getCurrentThreadCpuTime() - cpuBefore) / 1_000.0 / lookups;
            report.add("key lookup from the cache, CPU per request (" + keys.size() + " keys cached)", micros, "µs", "<= 20");
            // The operator's listing: every tenant, a page of 1,000 at a time, by cursor.
            TenantStore store = new TenantStore(database.pool());
            long listStart = System.nanoTime();
            int pages = 0;
            long listed = 0;
            String cursor = null;
            while (true) {
                var page = store.list(cursor, 1_000).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
                if (page.isEmpty()) {
                    break;
                }
                pages++;
                listed += page.size();
                cursor = page.get(page.size() - 1).id();
            }
            report.add("listing all " + listed + " tenants by cursor, per page of 1,000",
                    (System.nanoTime() - listStart) / 1_000_000.0 / Math.max(1, pages), "ms");
        } finally {
            database.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    /** The tenant {@link #measureDeletion} fills and deletes. */
    static final String BIG = "bench-big";

    /**
     * Deletion at scale: a tenant with {@code chats} chats of {@code perChat} messages each (in the inbox and the
     * history: {@code 2 × chats × perChat} rows) is deleted by the cluster's gateways, as {@code DELETE
     * /admin/v1/tenants/{id}} would start it, while another tenant keeps sending through {@code gateway}: how long
     * the deletion takes, at how many rows a second, and what the other tenant's messages wait meanwhile (no long
     * transaction, no lock it waits on).
     */
    public static void measureDeletion(DbUrl db, String gateway, String otherKey, int chats, int perChat, BenchReport report)
            throws Exception {
        long seeding = System.nanoTime();
        try (Connection connection = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password() == null ? "" : db.password());
             Statement statement = connection.createStatement()) {
            statement.execute("INSERT INTO tenants (id, name) VALUES ('" + BIG + "', 'Big tenant') ON CONFLICT (id) DO NOTHING");
            statement.execute("""
                    INSERT INTO chats (tenant_id, bot_id, channel, chat_key, partition, in_seq)
                    SELECT '%s', 'main', 'api', 'big-' || c, c %% (SELECT partitions FROM cluster_meta), %d
                      FROM generate_series(1, %d) c""".formatted(BIG, perChat, chats));
            statement.execute("""
                    INSERT INTO conversation_state (chat_id, tenant_id, done_seq, reply_seq)
                    SELECT id, tenant_id, in_seq, 0 FROM chats WHERE tenant_id = '%s'""".formatted(BIG));
            statement.execute("""
                    INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status, done_at)
                    SELECT c.tenant_id, c.id, c.partition, s, 'm' || s, 'user', 'an old message of the big tenant', 'done', now()
                      FROM chats c, generate_series(1, %d) s WHERE c.tenant_id = '%s'""".formatted(perChat, BIG));
            statement.execute("""
                    INSERT INTO messages (tenant_id, chat_id, role, sender_id, content)
                    SELECT c.tenant_id, c.id, 'user', 'user', 'an old message of the big tenant'
                      FROM chats c, generate_series(1, %d) s WHERE c.tenant_id = '%s'""".formatted(perChat, BIG));
            statement.execute("ANALYZE inbox");
            statement.execute("ANALYZE messages");
        }
        report.add("deletion: messages of the big tenant (inbox and history rows each)", (double) chats * perChat, "messages");
        report.add("deletion: time to write them", (System.nanoTime() - seeding) / 1_000_000, "ms");
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, db, 2, 10_000);
        HttpClient http = HttpClient.newHttpClient();
        try {
            TenantDeletionStore deletions = new TenantDeletionStore(database.pool());
            long started = System.nanoTime();
            await(deletions.request(BIG, "bench")).orElseThrow();
            // Meanwhile another tenant sends a message every 100 ms, each timed from send to 202.
            List<Long> waits = new ArrayList<>();
            TenantDeletionStore.Deletion done = null;
            for (int i = 0; done == null; i++) {
                long sent = System.nanoTime();
                HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(gateway + "/api/v1/messages"))
                        .header("authorization", "Bearer " + otherKey).header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(new io.vertx.core.json.JsonObject().put("chatId", "beside-big")
                                .put("senderId", "other").put("messageId", "d" + i).put("text", "still here?").encode()))
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (answer.statusCode() >= 300) {
                    throw new IllegalStateException("the other tenant's message was refused during the deletion: " + answer.body());
                }
                waits.add(System.nanoTime() - sent);
                var latest = await(deletions.latest(BIG)).orElseThrow();
                if (latest.done()) {
                    done = latest;
                } else if (System.nanoTime() - started > TimeUnit.MINUTES.toNanos(30)) {
                    throw new IllegalStateException("the deletion did not finish within 30 minutes: " + latest.toJson());
                } else {
                    Thread.sleep(100);
                }
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            long[] sorted = waits.stream().mapToLong(Long::longValue).sorted().toArray();
            report.add("deletion: rows deleted", done.rowsDeleted(), "rows");
            report.add("deletion: time from the request to done (the gateway's scan finds it within tenantDeletion.scanMs)",
                    seconds, "s");
            report.add("deletion: rows per second", done.rowsDeleted() / seconds, "rows/s");
            report.add("deletion: batches (transactions)", done.batches(), "batches");
            report.add("deletion: another tenant's message meanwhile, median (" + sorted.length + " messages)",
                    sorted[sorted.length / 2] / 1e6, "ms");
            report.add("deletion: another tenant's message meanwhile, p99", sorted[(int) (sorted.length * 0.99)] / 1e6, "ms");
            report.add("deletion: another tenant's message meanwhile, max", sorted[sorted.length - 1] / 1e6, "ms");
        } finally {
            database.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    private static <T> T await(io.vertx.core.Future<T> future) throws Exception {
        return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }

    private static String plan(DbUrl db) throws Exception {
        try (Connection connection = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password() == null ? "" : db.password());
             Statement statement = connection.createStatement()) {
            connection.setAutoCommit(false);
            StringBuilder plan = new StringBuilder();
            // The statement the gateway runs, explained on a key of the first tenant (rolled back: no last-use write).
            try (ResultSet rows = statement.executeQuery("""
                    EXPLAIN UPDATE api_keys k SET last_used_at = now() FROM tenants t
                     WHERE k.key_hash = encode(sha256(convert_to('%s', 'UTF8')), 'hex') AND k.revoked_at IS NULL
                       AND t.id = k.tenant_id
                    RETURNING t.id""".formatted(key(1, 1)))) {
                while (rows.next()) {
                    plan.append(rows.getString(1).strip()).append(" / ");
                }
            }
            connection.rollback();
            return plan.toString();
        }
    }
}
