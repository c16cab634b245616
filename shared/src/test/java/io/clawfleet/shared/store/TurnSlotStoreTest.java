package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Turn-slot leases in PostgreSQL (limit concurrentTurns): the slots granted to all holders never pass a tenant's limit,
 * also when holders on separate pools race; the longest-waiting holder gets its fair share; expired leases come back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TurnSlotStoreTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();
    private static final long TTL = 30_000;

    private Vertx vertx;
    private Vertx otherNode;
    private Database database;
    private Database otherDatabase;
    private TurnSlotStore store;
    private TurnSlotStore otherStore;
    private String tenant;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        otherNode = Vertx.vertx();
        DbUrl url = TestDatabases.freshMigrated(16);
        database = Database.connect(vertx, url, 8, 5_000);
        otherDatabase = Database.connect(otherNode, url, 8, 5_000);
        store = new TurnSlotStore(database.pool());
        otherStore = new TurnSlotStore(otherDatabase.pool());
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(otherDatabase.close());
        result(vertx.close());
        result(otherNode.close());
    }

    @BeforeEach
    void tenant() {
        tenant = "slots" + TENANTS.incrementAndGet();
        result(new TenantStore(database.pool()).ensure(tenant, tenant, "key-" + tenant + "-0123456789abcdef"));
    }

    private void limit(Integer concurrentTurns) {
        JsonObject limits = new JsonObject().put("concurrentTurns", concurrentTurns);
        result(database.pool().preparedQuery("UPDATE tenants SET limits = $2 WHERE id = $1")
                .execute(Tuple.of(tenant, limits)));
    }

    private long rowsHeld() {
        return result(database.pool().preparedQuery(
                        "SELECT coalesce(sum(slots), 0) FROM tenant_turn_slots WHERE tenant_id = $1 AND expires_at > now()")
                .execute(Tuple.of(tenant))).iterator().next().getLong(0);
    }

    /** A holder that asks for one more slot than it uses until it is refused, using each slot it gets. */
    private Future<Integer> takeUntilRefused(TurnSlotStore on, String holder, int inUse) {
        return on.take(tenant, holder, inUse, inUse + 1, TTL)
                .compose(granted -> granted > inUse ? takeUntilRefused(on, holder, granted) : Future.succeededFuture(inUse));
    }

    @Test
    void holdersRacingOnTwoPoolsNeverHoldMoreThanTheLimitTogether() {
        // given a tenant limited to 5 concurrent turns and six holders on two nodes' pools, all asking at once
        limit(5);
        List<Future<Integer>> holders = new ArrayList<>();
        for (int h = 0; h < 6; h++) {
            holders.add(takeUntilRefused(h % 2 == 0 ? store : otherStore, "w" + h, 0));
        }
        // when each has taken what it could
        int total = result(Future.all(holders)).<Integer>list().stream().mapToInt(Integer::intValue).sum();
        // then exactly the limit is in use, and the leases say so
        assertThat(total).isEqualTo(5);
        assertThat(rowsHeld()).isEqualTo(5);
    }

    @Test
    void aTenantWithoutTheLimitIsToldSoAndHoldsNothing() {
        assertThat(result(store.take(tenant, "w1", 3, 4, TTL))).isNull();
        assertThat(result(store.take("no-such-tenant", "w1", 0, 1, TTL))).isNull();
        assertThat(rowsHeld()).isZero();
        // the plain read a worker makes for a tenant it knows to be unlimited says the same, and sees a new limit
        assertThat(result(store.limit(tenant))).isNull();
        assertThat(result(store.limit("no-such-tenant"))).isNull();
        limit(3);
        assertThat(result(store.limit(tenant))).isEqualTo(3);
    }

    @Test
    void aHolderThatWaitedGetsItsFairShareAsTheOtherAsksAgain() {
        // given a limit of 2, both slots held by w1, and w2 refused
        limit(2);
        assertThat(result(takeUntilRefused(store, "w1", 0))).isEqualTo(2);
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isZero();
        // when w1 asks again (its grant is a second old) with both turns still under way
        int w1 = result(store.take(tenant, "w1", 2, 3, TTL));
        // then it keeps only its fair share; its row still counts the turns it has under way
        assertThat(w1).isEqualTo(1);
        assertThat(rowsHeld()).isEqualTo(2);
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).as("nothing free before a turn ends").isZero();
        // when one of w1's turns ends, and it gives back what it holds beyond its grant
        result(store.giveBack(tenant, "w1", 1, true));
        // then w2 gets the slot, and the two share the limit
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isEqualTo(1);
        assertThat(rowsHeld()).isEqualTo(2);
        // and w1, now the one waiting, is not pushed below its share by w2 asking for more
        assertThat(result(store.take(tenant, "w2", 1, 2, TTL))).isEqualTo(1);
    }

    @Test
    void aSingleSlotTakesTurnsBetweenTwoWaitingHolders() {
        // given a limit of 1 held by w1, and w2 waiting for it
        limit(1);
        assertThat(result(store.take(tenant, "w1", 0, 1, TTL))).isEqualTo(1);
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isZero();
        // when w1's turn ends and it asks for the next one
        assertThat(result(store.take(tenant, "w1", 0, 1, TTL))).as("w2 waited longer").isZero();
        // then w2 gets it
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isEqualTo(1);
    }

    @Test
    void anExpiredLeaseGivesItsSlotsBackAndIsNotRenewed() throws InterruptedException {
        // given w1 holding all 3 slots on a short lease
        limit(3);
        for (int inUse = 0; inUse < 3; inUse++) {
            assertThat(result(store.take(tenant, "w1", inUse, inUse + 1, 200))).isEqualTo(inUse + 1);
        }
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isZero();
        // when the lease runs out (w1 died)
        Thread.sleep(400);
        // then w1's renewal no longer finds it, and w2 gets the slots
        assertThat(result(store.renew("w1", TTL))).doesNotContain(tenant);
        assertThat(result(takeUntilRefused(store, "w2", 0))).isEqualTo(3);
        assertThat(result(store.renew("w2", TTL))).contains(tenant);
    }

    @Test
    void aLoweredLimitGrantsNothingUntilTheTurnsUnderWayEnd() {
        // given w1 with 3 turns under way, then the limit lowered to 1
        limit(3);
        assertThat(result(takeUntilRefused(store, "w1", 0))).isEqualTo(3);
        limit(1);
        // then asking again grants fewer slots than it has turns under way (so none may start), and its row still
        // counts its 3 turns
        assertThat(result(store.take(tenant, "w1", 3, 4, TTL))).isEqualTo(1);
        assertThat(rowsHeld()).isEqualTo(3);
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isZero();
        // once they end and it gives them back, one fits again
        result(store.giveBack(tenant, "w1", 0, false));
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isEqualTo(1);
    }

    @Test
    void releaseAllGivesBackEveryTenantsSlots() {
        limit(2);
        assertThat(result(store.take(tenant, "w1", 0, 1, TTL))).isEqualTo(1);
        result(store.releaseAll("w1"));
        assertThat(rowsHeld()).isZero();
    }

    @Test
    void oneTenantsSlotsNeverCountAgainstAnothers() {
        // given this tenant's one slot held by w1
        limit(1);
        assertThat(result(store.take(tenant, "w1", 0, 1, TTL))).isEqualTo(1);
        String first = tenant;
        // when another tenant with the same limit asks, on the same holder and on another
        tenant();
        limit(1);
        // then it gets its own slot, and the first tenant's stays taken
        assertThat(result(store.take(tenant, "w2", 0, 1, TTL))).isEqualTo(1);
        assertThat(result(store.take(first, "w2", 0, 1, TTL))).isZero();
        assertThat(result(store.take(tenant, "w1", 0, 1, TTL))).isZero();
    }
}
