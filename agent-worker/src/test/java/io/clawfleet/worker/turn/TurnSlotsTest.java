package io.clawfleet.worker.turn;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.TurnSlotStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two workers' {@link TurnSlots} (each its own Vert.x and pool, as two JVMs would have) sharing one tenant's
 * concurrent-turn limit in PostgreSQL: together they never run more turns than the limit, neither starves the other,
 * and the slots of a worker that dies come back when its lease expires.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TurnSlotsTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private DbUrl url;
    private final List<Vertx> nodes = new ArrayList<>();
    /** Turns running on all workers now, and the most there ever were. */
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicInteger peak = new AtomicInteger();
    /** Which worker finished each turn, in order. */
    private final List<String> finished = new CopyOnWriteArrayList<>();

    @BeforeAll
    void database() {
        url = TestDatabases.freshMigrated(16);
    }

    @AfterEach
    void stop() {
        nodes.forEach(vertx -> result(vertx.close()));
        nodes.clear();
        running.set(0);
        peak.set(0);
        finished.clear();
    }

    private String tenant(Integer concurrentTurns) {
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, url, 2, 5_000);
        String tenant = "turns" + TENANTS.incrementAndGet();
        result(new TenantStore(database.pool()).ensure(tenant, tenant, "key-" + tenant + "-0123456789abcdef"));
        result(database.pool().preparedQuery("UPDATE tenants SET limits = $2 WHERE id = $1")
                .execute(Tuple.of(tenant, new JsonObject().put("concurrentTurns", concurrentTurns))));
        result(database.close());
        result(vertx.close());
        return tenant;
    }

    /** A worker with turns of one tenant waiting, each taking {@code turnMs} (or never ending when negative). */
    private final class Worker {
        final String name;
        final Vertx vertx = Vertx.vertx();
        final Context context = vertx.getOrCreateContext();
        final Database database = Database.connect(vertx, url, 4, 5_000);
        final TurnSlots slots;
        final String tenant;
        final long turnMs;
        int waiting;
        volatile long firstStart;

        Worker(String name, String tenant, int turns, long turnMs, TurnSlots.Timing timing) {
            nodes.add(vertx);
            this.name = name;
            this.tenant = tenant;
            this.turnMs = turnMs;
            this.waiting = turns;
            this.slots = new TurnSlots(vertx, new TurnSlotStore(database.pool()), name, new MicrometerMetrics(name), timing);
            context.runOnContext(v -> {
                slots.onSlots(this::pump);
                slots.start().onSuccess(ok -> pump());
            });
        }

        void pump() {
            while (waiting > 0 && slots.mayStart(tenant)) {
                waiting--;
                slots.started(tenant);
                if (firstStart == 0) {
                    firstStart = System.nanoTime();
                }
                peak.accumulateAndGet(running.incrementAndGet(), Math::max);
                if (turnMs >= 0) {
                    vertx.setTimer(Math.max(1, turnMs), id -> {
                        running.decrementAndGet();
                        finished.add(name);
                        slots.ended(tenant);
                        pump();
                    });
                }
            }
        }

        long done() {
            return finished.stream().filter(name::equals).count();
        }
    }

    @Test
    void twoWorkersTogetherRunNoMoreThanTheLimitAndShareIt() {
        // given a tenant limited to 2 concurrent turns with 25 turns of 60 ms waiting on each of two workers
        String tenant = tenant(2);
        TurnSlots.Timing timing = new TurnSlots.Timing(15_000, 5_000, 3_000, 100);
        Worker a = new Worker("wa", tenant, 25, 60, timing);
        Worker b = new Worker("wb", tenant, 25, 60, timing);
        // when they have all run
        Await.until("all turns done", Duration.ofSeconds(60), () -> finished.size() == 50);
        // then at most 2 ran at once, and 2 did
        assertThat(peak.get()).isEqualTo(2);
        // and neither waited for the other to finish: when the first was done, the second had done a good part too
        int whenOneWasDone = Math.min(finished.lastIndexOf("wa"), finished.lastIndexOf("wb"));
        String doneFirst = finished.get(whenOneWasDone);
        long otherByThen = finished.subList(0, whenOneWasDone + 1).stream().filter(n -> !n.equals(doneFirst)).count();
        assertThat(otherByThen).as("turns of the other worker done by the time one was done (" + finished + ")")
                .isGreaterThanOrEqualTo(8);
        assertThat(a.done() + b.done()).isEqualTo(50);
    }

    @Test
    void theSlotsOfAWorkerThatDiesComeBackWhenItsLeaseExpires() {
        // given a tenant limited to 2, both slots taken by turns on a worker that then dies (leases of one second)
        String tenant = tenant(2);
        TurnSlots.Timing timing = new TurnSlots.Timing(1_000, 300, 300, 100);
        Worker dying = new Worker("wdead", tenant, 2, -1, timing);
        Await.until("the doomed turns started", Duration.ofSeconds(30), () -> running.get() == 2);
        result(dying.vertx.close());
        nodes.remove(dying.vertx);
        long died = System.nanoTime();
        // when another worker has turns of the tenant
        Worker survivor = new Worker("wlive", tenant, 3, 20, timing);
        // then they run once the dead worker's lease has expired, not before
        Await.until("the survivor's turns done", Duration.ofSeconds(30), () -> survivor.done() == 3);
        assertThat(Duration.ofNanos(survivor.firstStart - died)).isGreaterThan(Duration.ofMillis(500));
        assertThat(running.get()).isEqualTo(2);
    }

    @Test
    void aTenantWithoutTheLimitRunsAsManyTurnsAsItHasAndHoldsNothing() {
        String tenant = tenant(null);
        Worker a = new Worker("wfree", tenant, 10, 300, TurnSlots.DEFAULT);
        Await.until("all turns done", Duration.ofSeconds(30), () -> a.done() == 10);
        assertThat(peak.get()).isEqualTo(10);
        assertThat(result(a.database.pool().preparedQuery("SELECT count(*) FROM tenant_turn_slots WHERE tenant_id = $1")
                .execute(Tuple.of(tenant))).iterator().next().getLong(0)).isZero();
    }
}
