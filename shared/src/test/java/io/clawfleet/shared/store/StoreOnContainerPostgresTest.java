package io.clawfleet.shared.store;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.Migrations;
import org.testcontainers.containers.PostgreSQLContainer;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/** The same contract on a real PostgreSQL container; skipped cleanly where there is no Docker. */
@Testcontainers(disabledWithoutDocker = true)
class StoreOnContainerPostgresTest extends StoreContractTest {

    @Container
    static final PostgreSQLContainer<?> POSTGRES = new PostgreSQLContainer<>("postgres:16-alpine");

    @Override
    DbUrl database(int partitions) {
        DbUrl url = new DbUrl(POSTGRES.getHost(), POSTGRES.getMappedPort(5432), POSTGRES.getDatabaseName(),
                POSTGRES.getUsername(), POSTGRES.getPassword(), null);
        Migrations.apply(url, partitions);
        return url;
    }
}
