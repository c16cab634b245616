package io.clawfleet.gateway.auth;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

class ApiKeyAuthTest {

    /** Issue 22: a flood of made-up keys must not flush the known ones, or every request would reach the database. */
    @Test
    void aFloodOfUnknownKeysFillsOnlyItsOwnBoundedCache() {
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, TestDatabases.freshMigrated(4), 4, 5_000);
        try {
            TenantStore tenants = new TenantStore(database.pool());
            result(tenants.ensure("acme", "Acme", "acme-key-0123456789abcdef"));
            ApiKeyAuth auth = new ApiKeyAuth(tenants, 50);
            assertThat(result(auth.resolve("acme-key-0123456789abcdef"))).isPresent();
            for (int i = 0; i < 200; i++) {
                assertThat(result(auth.resolve("made-up-key-" + i))).isEmpty();
            }
            assertThat(auth.knownCached()).isEqualTo(1);
            assertThat(result(auth.resolve("acme-key-0123456789abcdef"))).get().extracting(t -> t.id()).isEqualTo("acme");
        } finally {
            result(database.close());
            result(vertx.close());
        }
    }
}
