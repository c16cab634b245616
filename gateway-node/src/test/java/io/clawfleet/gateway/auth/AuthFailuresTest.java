package io.clawfleet.gateway.auth;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** Refused authentications are audited as one row per source and window, with the window's final count. */
class AuthFailuresTest {

    @Test
    void aBurstIsOneRowPerSourceWithTheWindowsFinalCountAndAFewFailuresAreNone() {
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, TestDatabases.freshMigrated(4), 2, 5_000);
        try {
            AuditStore audit = new AuditStore(database.pool());
            // a long window that only the test closes
            AuthFailures failures = new AuthFailures(vertx, audit, 20, 3_600_000, 100);
            // when one address fails 300 times and another 19 times
            for (int i = 0; i < 300; i++) {
                failures.failed("203.0.113.7");
            }
            for (int i = 0; i < 19; i++) {
                failures.failed("198.51.100.2");
            }
            Await.until("the burst row", Duration.ofSeconds(10),
                    () -> !result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 10)).isEmpty());
            result(failures.closeWindow());
            // then the first has one row, counting all 300, and the second none
            List<AuditStore.Event> bursts = result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 10));
            assertThat(bursts).singleElement().satisfies(burst -> {
                assertThat(burst.metadata().getString("source")).isEqualTo("203.0.113.7");
                assertThat(burst.metadata().getInteger("count")).isEqualTo(300);
                assertThat(burst.outcome()).isEqualTo("denied");
            });
            // and a new window counts from zero: 19 more from the first address are no burst
            for (int i = 0; i < 19; i++) {
                failures.failed("203.0.113.7");
            }
            result(failures.closeWindow());
            assertThat(result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 10))).hasSize(1);
        } finally {
            result(database.close());
            result(vertx.close());
        }
    }

    @Test
    void manySourcesAreCappedIntoOneOtherSourcesCounter() {
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, TestDatabases.freshMigrated(4), 2, 5_000);
        try {
            AuditStore audit = new AuditStore(database.pool());
            AuthFailures failures = new AuthFailures(vertx, audit, 20, 3_600_000, 10);
            // when 1000 addresses fail once each (a spread-out guess), beyond a cap of 10 sources
            for (int i = 0; i < 1000; i++) {
                failures.failed("10.0." + i / 256 + "." + i % 256);
            }
            Await.until("the burst row", Duration.ofSeconds(10),
                    () -> !result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 10)).isEmpty());
            result(failures.closeWindow());
            // then the sources beyond the cap make one burst together
            assertThat(result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 10))).singleElement()
                    .satisfies(burst -> {
                        assertThat(burst.metadata().getString("source")).isEqualTo(AuthFailures.OTHER_SOURCES);
                        assertThat(burst.metadata().getInteger("count")).isEqualTo(990);
                    });
        } finally {
            result(database.close());
            result(vertx.close());
        }
    }
}
