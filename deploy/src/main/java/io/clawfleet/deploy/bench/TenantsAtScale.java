package io.clawfleet.deploy.bench;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Vertx;

import java.lang.management.ManagementFactory;
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
