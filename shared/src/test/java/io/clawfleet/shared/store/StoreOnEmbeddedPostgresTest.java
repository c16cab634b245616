package io.clawfleet.shared.store;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;

class StoreOnEmbeddedPostgresTest extends StoreContractTest {

    @Override
    DbUrl database(int partitions) {
        return TestDatabases.freshMigrated(partitions);
    }
}
