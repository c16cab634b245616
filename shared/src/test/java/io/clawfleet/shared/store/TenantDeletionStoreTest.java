package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.store.TenantDeletionStore.Deletion;
import io.clawfleet.shared.store.TenantDeletionStore.LeaseLostException;
import io.clawfleet.shared.store.TenantDeletionStore.Step;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TenantRows;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.Map;
import java.util.stream.Collectors;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** Tenant deletion at the store (issue 13): every table covered, bounded batches, one node at a time, a tombstone. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantDeletionStoreTest {

    private Vertx vertx;
    private Database database;
    private TenantDeletionStore store;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(4), 4, 5_000);
        store = new TenantDeletionStore(database.pool());
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    @Test
    void everyTableWithATenantIdIsEmptiedByAStep() {
        // given the schema as migrated / then a table that gains a tenant_id without a deletion step fails here
        assertThat(result(TenantRows.tables(database.pool())))
                .containsExactlyInAnyOrderElementsOf(TenantDeletionStore.STEPS.stream().map(Step::table).toList());
    }

    @Test
    void batchesOfTwoDeleteEveryRowOfTheTenantAndNoneOfAnother() {
        // given two tenants with rows in every table
        result(TenantRows.seed(database.pool(), "doomed", 25, 31));
        result(TenantRows.seed(database.pool(), "bystander", 7, 9));
        Map<String, Long> before = result(TenantRows.count(database.pool(), "doomed"));
        Map<String, Long> bystander = result(TenantRows.count(database.pool(), "bystander"));
        assertThat(before.values()).allMatch(n -> n > 0);

        // when the deletion runs with batches of 2
        Deletion deletion = result(store.request("doomed", "operator")).orElseThrow();
        assertThat(deletion.state()).isEqualTo("running");
        assertThat(status("doomed")).isEqualTo("deleting");
        Deletion claimed = result(store.claim("node-a", 30_000)).orElseThrow();
        assertThat(claimed.id()).isEqualTo(deletion.id());
        long batches = 0;
        for (Step step : TenantDeletionStore.STEPS) {
            int deleted;
            do {
                deleted = result(store.deleteBatch(claimed, step, "node-a", 2, 30_000));
                assertThat(deleted).as(step.table()).isBetween(0, 2);
                batches++;
            } while (deleted > 0);
        }
        Deletion done = result(store.finish(claimed, "node-a"));

        // then nothing of the tenant is left, the other tenant is untouched, and the counts are exact
        assertThat(result(TenantRows.count(database.pool(), "doomed")).values()).containsOnly(0L);
        assertThat(result(TenantRows.count(database.pool(), "bystander"))).isEqualTo(bystander);
        assertThat(done.state()).isEqualTo("done");
        assertThat(done.finishedAt()).isNotNull();
        assertThat(done.batches()).isEqualTo(batches);
        Map<String, Long> counted = done.counts().fieldNames().stream()
                .collect(Collectors.toMap(table -> table, table -> done.counts().getLong(table)));
        assertThat(counted).isEqualTo(before);
        // and the tombstone outlives the tenant: the deletion's row and an audit row with no tenant_id
        assertThat(result(store.latest("doomed")).orElseThrow().state()).isEqualTo("done");
        Row audit = result(database.pool().query("""
                SELECT tenant_id, metadata_json ->> 'tenantId' AS tenant, metadata_json ->> 'rowsDeleted' AS rows
                  FROM audit_events WHERE event_type = 'tenant_deleted'""").execute()).iterator().next();
        assertThat(audit.getString("tenant_id")).isNull();
        assertThat(audit.getString("tenant")).isEqualTo("doomed");
        assertThat(Long.parseLong(audit.getString("rows"))).isEqualTo(done.rowsDeleted());
    }

    @Test
    void askingAgainGivesTheSameDeletionAndUnknownTenantsNone() {
        result(TenantRows.seed(database.pool(), "twice", 1, 1));
        Deletion first = result(store.request("twice", "operator")).orElseThrow();
        Deletion second = result(store.request("twice", "operator")).orElseThrow();
        assertThat(second.id()).isEqualTo(first.id());
        assertThat(result(store.request("never-was", "operator"))).isEmpty();
        assertThat(result(store.latest("never-was"))).isEmpty();
    }

    @Test
    void oneNodeHoldsADeletionUntilItsLeaseRunsOutThenAnotherCarriesOn() {
        // given a deletion held by node a for one second
        result(TenantRows.seed(database.pool(), "leased", 5, 5));
        Deletion requested = result(store.request("leased", "operator")).orElseThrow();
        // (deletions other tests left running would be older, so claimed first)
        result(database.pool().query("UPDATE tenant_deletions SET state = 'done' WHERE tenant_id <> 'leased'").execute());
        Deletion held = claimUntil("node-a", requested.id(), 1_000);
        Step inbox = TenantDeletionStore.STEPS.stream().filter(s -> s.table().equals("inbox")).findFirst().orElseThrow();
        assertThat(result(store.deleteBatch(held, inbox, "node-a", 2, 1_000))).isEqualTo(2);

        // then node b neither takes it nor deletes under it while the lease holds
        assertThat(result(store.claim("node-b", 30_000)).map(Deletion::id)).isNotEqualTo(java.util.Optional.of(held.id()));
        assertThat(failure(store.deleteBatch(held, inbox, "node-b", 2, 30_000))).isInstanceOf(LeaseLostException.class);

        // when node a stops renewing, node b takes over, and node a's next batch is refused
        Deletion taken = claimUntil("node-b", held.id(), 30_000);
        assertThat(taken.counts().getLong("inbox")).isEqualTo(2L);
        assertThat(failure(store.deleteBatch(held, inbox, "node-a", 2, 1_000))).isInstanceOf(LeaseLostException.class);
        assertThat(failure(store.finish(held, "node-a"))).isInstanceOf(LeaseLostException.class);
        assertThat(result(store.deleteBatch(taken, inbox, "node-b", 100, 30_000))).isEqualTo(3);
    }

    @Test
    void aTenantBeingDeletedHasItsTelegramBotsNoLongerPolled() {
        // given a tenant whose bot is polled
        result(TenantRows.seed(database.pool(), "polled", 1, 1));
        ChannelBotStore bots = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        ChannelBot bot = result(bots.claimPolling("node-p", 30_000, 1_000)).stream()
                .filter(b -> b.tenantId().equals("polled")).findFirst().orElseThrow();

        // when its deletion is asked for
        result(store.request("polled", "operator"));

        // then the poller's next advance fails (it stops) and no node claims the bot again
        assertThat(result(bots.advance(bot.id(), "node-p", 10, 30_000))).isFalse();
        assertThat(result(bots.claimPolling("node-q", 30_000, 1_000))).noneMatch(b -> b.tenantId().equals("polled"));
    }

    /** Claims until the claim is the given deletion (other tests' deletions may be claimable too). */
    private Deletion claimUntil(String node, long deletionId, long leaseMs) {
        Deletion[] found = new Deletion[1];
        Await.until("node " + node + " holds deletion " + deletionId, Duration.ofSeconds(20), () -> {
            var claimed = result(store.claim(node, leaseMs));
            if (claimed.isPresent() && claimed.get().id() == deletionId) {
                found[0] = claimed.get();
                return true;
            }
            return false;
        });
        return found[0];
    }

    private String status(String tenantId) {
        return result(database.pool().preparedQuery("SELECT status FROM tenants WHERE id = $1")
                .execute(io.vertx.sqlclient.Tuple.of(tenantId))).iterator().next().getString(0);
    }
}
