package io.clawfleet.scheduler;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.metrics.MetricLabels;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.store.FleetStatsStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The fleet gauges (issue 17) read the cluster's state from PostgreSQL: the lag of each partition is the age of
 * its oldest unprocessed message (done and dead ones do not count), the outbox age is that of the oldest push reply
 * not delivered (pulled replies and delivered ones do not count), unowned partitions are those without a live lease,
 * and open dead letters are counted per tenant and kind, replayed ones left out, tenants past the label bound as
 * {@code _other}.
 */
class FleetGaugesTest {

    private Vertx vertx;
    private Database database;
    private MicrometerMetrics metrics;
    private FleetGauges gauges;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(4), 4, 5_000);
        metrics = new MicrometerMetrics("sched-1", new MetricLabels(2, 10));
        gauges = new FleetGauges(vertx, new FleetStatsStore(database.pool()), metrics, 60_000);
    }

    @AfterEach
    void stop() {
        gauges.stop();
        result(database.close());
        result(vertx.close());
    }

    @Test
    void theGaugesShowLagOutboxAgeUnownedPartitionsAndOpenDeadLettersOfTheWholeCluster() {
        // given two tenants' chats on partitions 1 and 3, with messages and replies of several ages and states
        for (String tenant : new String[] {"acme", "globex", "initech"}) {
            result(new TenantStore(database.pool()).ensure(tenant, tenant, "key-" + tenant + "-0123456789abcdef"));
        }
        long acme = chat("acme", 1);
        long globex = chat("globex", 3);
        inbox("acme", acme, 1, "old-done", 3_600, "done");
        inbox("acme", acme, 1, "pending-90", 90, "pending");
        inbox("acme", acme, 1, "pending-30", 30, "pending");
        inbox("globex", globex, 3, "pending-5", 5, "pending");
        inbox("globex", globex, 3, "dead-7200", 7_200, "dead");
        outbox("acme", acme, "delivered-600", 600, "delivered", true);
        outbox("acme", acme, "pulled-900", 900, "pending", false);
        outbox("globex", globex, "sending-45", 45, "sending", true);
        outbox("globex", globex, "pending-20", 20, "pending", true);
        deadLetter("acme", "inbound", "1", null);
        deadLetter("acme", "inbound", "2", null);
        deadLetter("acme", "outbound", "o1", null);
        deadLetter("acme", "inbound", "3", "now()");
        deadLetter("globex", "inbound", "4", null);
        deadLetter("initech", "outbound", "o2", null);
        // and partitions 0 and 1 held by a live worker, 2 by one whose lease ran out, 3 by nobody
        sql("UPDATE partition_leases SET owner_node = 'w-1', expires_at = now() + interval '30 seconds' WHERE partition IN (0, 1)");
        sql("UPDATE partition_leases SET owner_node = 'w-2', expires_at = now() - interval '1 second' WHERE partition = 2");

        // when the gauges are read
        gauges.start();
        result(gauges.refresh());
        String scrape = metrics.scrape();

        // then
        assertThat(value(scrape, "clawfleet_partition_lag_seconds{node=\"sched-1\",partition=\"1\"}")).isCloseTo(90, within(5.0));
        assertThat(value(scrape, "clawfleet_partition_lag_seconds{node=\"sched-1\",partition=\"3\"}")).isCloseTo(5, within(5.0));
        assertThat(value(scrape, "clawfleet_partition_lag_seconds{node=\"sched-1\",partition=\"0\"}")).isZero();
        assertThat(value(scrape, "clawfleet_partition_lag_seconds{node=\"sched-1\",partition=\"2\"}")).isZero();
        assertThat(value(scrape, "clawfleet_partition_lag_max_seconds{node=\"sched-1\"}")).isCloseTo(90, within(5.0));
        assertThat(value(scrape, "clawfleet_outbox_oldest_seconds{node=\"sched-1\"}")).isCloseTo(45, within(5.0));
        assertThat(value(scrape, "clawfleet_partitions_unowned{node=\"sched-1\"}")).isEqualTo(2);
        assertThat(value(scrape, "clawfleet_dead_letters_open{kind=\"inbound\",node=\"sched-1\",tenant=\"acme\"}")).isEqualTo(2);
        assertThat(value(scrape, "clawfleet_dead_letters_open{kind=\"outbound\",node=\"sched-1\",tenant=\"acme\"}")).isEqualTo(1);
        assertThat(value(scrape, "clawfleet_dead_letters_open{kind=\"inbound\",node=\"sched-1\",tenant=\"globex\"}")).isEqualTo(1);
        assertThat(value(scrape, "clawfleet_dead_letters_open{kind=\"outbound\",node=\"sched-1\",tenant=\"_other\"}"))
                .as("a third tenant past the bound of two").isEqualTo(1);

        // and when the backlog is worked off and the letters replayed, the next reading says so
        sql("UPDATE inbox SET status = 'done' WHERE status = 'pending'");
        sql("UPDATE outbox SET status = 'delivered' WHERE push");
        sql("UPDATE dead_letters SET replayed_at = now()");
        result(gauges.refresh());
        scrape = metrics.scrape();
        assertThat(value(scrape, "clawfleet_partition_lag_seconds{node=\"sched-1\",partition=\"1\"}")).isZero();
        assertThat(value(scrape, "clawfleet_partition_lag_max_seconds{node=\"sched-1\"}")).isZero();
        assertThat(value(scrape, "clawfleet_outbox_oldest_seconds{node=\"sched-1\"}")).isZero();
        assertThat(value(scrape, "clawfleet_dead_letters_open{kind=\"inbound\",node=\"sched-1\",tenant=\"acme\"}")).isZero();
    }

    @Test
    void aDatabaseThatDoesNotAnswerLeavesTheLastFigures() {
        gauges.start();
        result(gauges.refresh());
        result(database.close());
        io.clawfleet.shared.testing.Await.failure(gauges.refresh());
        assertThat(value(metrics.scrape(), "clawfleet_partitions_unowned{node=\"sched-1\"}")).isEqualTo(4);
    }

    private static double value(String scrape, String series) {
        Matcher line = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(scrape);
        assertThat(line.find()).as("%s in%n%s", series, scrape).isTrue();
        return Double.parseDouble(line.group(1));
    }

    private long chat(String tenant, int partition) {
        return result(database.pool().preparedQuery(
                "INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ($1, 'api', 'c', $2) RETURNING id")
                .execute(Tuple.of(tenant, partition))).iterator().next().getLong(0);
    }

    private void inbox(String tenant, long chat, int partition, String key, int secondsAgo, String status) {
        sql("""
                INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status, received_at)
                VALUES ($1, $2, $3, (SELECT count(*) + 1 FROM inbox WHERE chat_id = $2), $4, 'u', 'hi', $5,
                        now() - make_interval(secs => $6))""", Tuple.of(tenant, chat, partition, key, status, secondsAgo));
    }

    private void outbox(String tenant, long chat, String id, int secondsAgo, String status, boolean push) {
        sql("""
                INSERT INTO outbox (id, tenant_id, chat_id, seq, text, status, created_at, push)
                VALUES ($1 || '-' || $3, $1, $2, (SELECT count(*) + 1 FROM outbox WHERE chat_id = $2), 'hi', $4,
                        now() - make_interval(secs => $5), $6)""", Tuple.of(tenant, chat, id, status, secondsAgo, push));
    }

    private void deadLetter(String tenant, String kind, String ref, String replayedAt) {
        sql("INSERT INTO dead_letters (tenant_id, kind, ref_id, payload, error, replayed_at) VALUES ($1, $2, $3, '{}', 'x', "
                + (replayedAt == null ? "NULL" : replayedAt) + ")", Tuple.of(tenant, kind, tenant + "-" + ref));
    }

    private void sql(String statement) {
        result(database.pool().query(statement).execute());
    }

    private void sql(String statement, Tuple args) {
        result(database.pool().preparedQuery(statement).execute(args));
    }
}
