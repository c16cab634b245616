package io.clawfleet.deploy.bench;

import io.clawfleet.gateway.admission.TenantRates;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.shared.db.Migrations;
import io.clawfleet.shared.store.RateWindowStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code bench --rate-limiter} (issue 14): the cluster-wide message rate, two ways, on one embedded PostgreSQL with
 * several gateways' limiters (each with its own connection pool, as separate gateways have). <b>Leased</b>: what
 * gateways run ({@link TenantRates}), tokens of the current minute leased in chunks of 1 % of the limit.
 * <b>Counter</b>: one statement per message against the same window row (a lease of one token), exact by
 * construction. Both are offered the same open-loop load, far above the limit, spread over the gateways; the bench
 * reports, per full minute, the messages accepted against the limit, and the cost: database statements per
 * message and the admission latency.
 */
public final class RateLimiterBench {

    /**
     * @param limit    the tenant's messages per minute
     * @param rate     messages per second offered to each gateway
     * @param gateways limiters, each with its own pool
     * @param minutes  full minutes measured (the run starts at the next minute and lasts that many)
     */
    public record Options(int limit, double rate, int gateways, int minutes, Path logs) {
    }

    private record Outcome(Map<Instant, Long> acceptedPerMinute, long offered, long statements, long[] latenciesNanos) {
    }

    private final Options options;
    private final BenchReport report = new BenchReport();

    public RateLimiterBench(Options options) {
        this.options = options;
    }

    public BenchReport run() throws Exception {
        Files.createDirectories(options.logs());
        report.condition("limit", options.limit());
        report.condition("ratePerGateway", options.rate());
        report.condition("gateways", options.gateways());
        report.condition("minutes", options.minutes());
        try (EmbeddedDatabase server = EmbeddedDatabase.start(null)) {
            DbUrl url = server.createDatabase("ratebench");
            Migrations.apply(url, 64);
            Vertx vertx = Vertx.vertx();
            try {
                List<Database> pools = new ArrayList<>();
                for (int i = 0; i < options.gateways(); i++) {
                    pools.add(Database.connect(vertx, url, 4, 5_000));
                }
                Database admin = Database.connect(vertx, url, 1, 5_000);
                await(admin.pool().query("INSERT INTO tenants (id, name) VALUES ('leased', 'l'), ('counter', 'c')").execute());
                List<TenantRates> leased = pools.stream()
                        .map(db -> new TenantRates(new RateWindowStore(db.pool()), bot -> Future.succeededFuture(Set.of())))
                        .toList();
                Outcome lease = drive(admin.pool(), i -> leased.get(i).admit("leased", options.limit()));
                List<RateWindowStore> stores = pools.stream().map(db -> new RateWindowStore(db.pool())).toList();
                Outcome counter = drive(admin.pool(), i -> stores.get(i).lease("counter", RateWindowStore.TENANT, 1, options.limit())
                        .compose(granted -> granted.granted() > 0 ? Future.succeededFuture()
                                : Future.failedFuture(new IllegalStateException("limit reached"))));
                describe("leased", lease);
                describe("counter", counter);
                report.note("leased: each gateway leases 1 % of the limit at a time and spends it locally; counter: one "
                        + "statement per message. Accepted is per full minute of the database's clock, all gateways together.");
                for (Database db : pools) {
                    await(db.close());
                }
                await(admin.close());
            } finally {
                await(vertx.close());
            }
        }
        return report;
    }

    /** The gateway index, for an admission on that gateway's limiter. */
    private interface Admit {
        Future<Void> admit(int gateway);
    }

    /** Offers the load from the start of the next minute for {@code minutes}, and counts what was accepted per minute. */
    private Outcome drive(Pool admin, Admit admit) throws Exception {
        Instant start = Instant.now().truncatedTo(ChronoUnit.MINUTES).plus(1, ChronoUnit.MINUTES);
        Thread.sleep(Math.max(0, Duration.between(Instant.now(), start).toMillis()) + 200);
        long statementsBefore = statements(admin);
        Map<Instant, AtomicLong> accepted = new ConcurrentHashMap<>();
        AtomicLong offered = new AtomicLong();
        long[] latencies = new long[(int) Math.min(50_000_000, options.rate() * options.gateways() * 60 * options.minutes() + 1_000)];
        AtomicLong measured = new AtomicLong();
        long periodNanos = (long) (1e9 / (options.rate() * options.gateways()));
        Instant end = start.plus(options.minutes(), ChronoUnit.MINUTES);
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong inFlight = new AtomicLong();
        long next = System.nanoTime();
        int gateway = 0;
        while (Instant.now().isBefore(end)) {
            long now = System.nanoTime();
            if (now < next) {
                TimeUnit.NANOSECONDS.sleep(Math.min(next - now, 1_000_000));
                continue;
            }
            next += periodNanos;
            offered.incrementAndGet();
            inFlight.incrementAndGet();
            long started = System.nanoTime();
            int g = gateway;
            gateway = (gateway + 1) % options.gateways();
            admit.admit(g).onComplete(result -> {
                int slot = (int) measured.getAndIncrement();
                if (slot < latencies.length) {
                    latencies[slot] = System.nanoTime() - started;
                }
                if (result.succeeded()) {
                    accepted.computeIfAbsent(Instant.now().truncatedTo(ChronoUnit.MINUTES), m -> new AtomicLong()).incrementAndGet();
                }
                if (inFlight.decrementAndGet() == 0 && !Instant.now().isBefore(end)) {
                    done.countDown();
                }
            });
        }
        if (inFlight.get() > 0) {
            done.await(30, TimeUnit.SECONDS);
        }
        Thread.sleep(2_000); // PostgreSQL publishes a backend's transaction counts within a second of its last one
        long statements = statements(admin) - statementsBefore;
        Map<Instant, Long> perMinute = new TreeMap<>();
        accepted.forEach((minute, n) -> {
            if (!minute.isBefore(start) && minute.isBefore(end)) {
                perMinute.put(minute, n.get());
            }
        });
        return new Outcome(perMinute, offered.get(), statements,
                Arrays.copyOf(latencies, (int) Math.min(measured.get(), latencies.length)));
    }

    private void describe(String name, Outcome outcome) {
        List<Long> minutes = new ArrayList<>(outcome.acceptedPerMinute().values());
        long worst = minutes.stream().mapToLong(n -> Math.abs(n - options.limit())).max().orElse(-1);
        for (int i = 0; i < minutes.size(); i++) {
            report.add(name + ": accepted in minute " + (i + 1), minutes.get(i), "messages", "limit " + options.limit() + " ± 5 %");
        }
        report.add(name + ": largest error against the limit", 100.0 * worst / options.limit(), "%", "<= 5");
        report.add(name + ": offered", outcome.offered(), "messages");
        report.add(name + ": database transactions per offered message", (double) outcome.statements() / outcome.offered(), "");
        long[] sorted = outcome.latenciesNanos().clone();
        Arrays.sort(sorted);
        report.add(name + ": admission p50", percentile(sorted, 0.50) / 1e6, "ms");
        report.add(name + ": admission p99", percentile(sorted, 0.99) / 1e6, "ms");
    }

    private static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** Transactions committed in the database so far (the bench's are the only ones). */
    private static long statements(Pool admin) throws Exception {
        return await(admin.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").execute())
                .iterator().next().getLong(0);
    }

    private static <T> T await(Future<T> future) throws Exception {
        return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
}
