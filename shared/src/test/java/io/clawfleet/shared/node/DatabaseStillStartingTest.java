package io.clawfleet.shared.node;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Future;
import org.junit.jupiter.api.Test;

import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code up} starts its embedded PostgreSQL beside the node (issue 19, start-up): the node makes Vert.x and its roles
 * meanwhile, and must not touch the database before it is up, nor start when it never comes up.
 */
class DatabaseStillStartingTest {

    @Test
    void aNodeMigratesOnlyOnceItsDatabaseIsUpAndIsThenReady() throws Exception {
        // given an empty database that the node is told is still starting
        DbUrl db = TestDatabases.freshEmpty();
        CompletableFuture<Void> databaseUp = new CompletableFuture<>();
        Future<NodeRuntime> starting = NodeRuntime.start(TestNodes.config("scheduler", Map.of()), db, databaseUp, false,
                List.of());
        // when a while passes, the node has not migrated it, nor finished starting
        Thread.sleep(1_500);
        assertThat(tables(db)).as("tables made before the database was said to be up").isZero();
        assertThat(starting.isComplete()).isFalse();
        // then once it is up, the node migrates it and becomes ready
        databaseUp.complete(null);
        NodeRuntime node = Await.result(starting, Duration.ofSeconds(60));
        try {
            Await.until("node ready", Duration.ofSeconds(30), node::ready);
            assertThat(tables(db)).isPositive();
        } finally {
            Await.result(node.stop(), Duration.ofSeconds(30));
        }
    }

    @Test
    void aNodeWhoseDatabaseFailsToStartFailsWithTheDatabasesError() {
        // given a database start that fails
        IllegalStateException broken = new IllegalStateException("cannot start the embedded PostgreSQL in /nowhere: broken");
        // when a node starts on it, then its start fails with that error
        Future<NodeRuntime> starting = NodeRuntime.start(TestNodes.config("scheduler", Map.of()),
                TestDatabases.freshEmpty(), CompletableFuture.failedFuture(broken), false, List.of());
        assertThatThrownBy(() -> Await.result(starting, Duration.ofSeconds(60)))
                .isSameAs(broken);
    }

    private static int tables(DbUrl db) throws Exception {
        try (var connection = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
             var rows = connection.createStatement().executeQuery(
                     "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")) {
            rows.next();
            return rows.getInt(1);
        }
    }
}
