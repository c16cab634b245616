package io.clawfleet.shared.db;

import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.core.VertxException;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import io.vertx.sqlclient.SqlConnection;
import org.junit.jupiter.api.Test;

import java.net.ConnectException;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

class DatabaseFailuresTest {

    @Test
    void aDroppedOrRefusedConnectionAndAShutdownAreTheDatabaseGone() {
        assertThat(DatabaseFailures.unreachable(ClosedConnectionException.INSTANCE)).isTrue();
        assertThat(DatabaseFailures.unreachable(new ConnectException("Connection refused"))).isTrue();
        assertThat(DatabaseFailures.unreachable(new VertxException("pool", new ConnectException("refused")))).isTrue();
        assertThat(DatabaseFailures.unreachable(new PgException("terminating connection due to administrator command",
                "FATAL", "57P01", null))).isTrue();
        assertThat(DatabaseFailures.unreachable(new PgException("the database system is starting up", "FATAL", "57P03",
                null))).isTrue();
    }

    @Test
    void aPoolThatGaveNoConnectionWithinItsWaitIsTheDatabaseBusyNotTheStatementsFault() {
        // a real pool of one connection, held, and a statement behind it: the pool's own failure after its 1 s wait
        Vertx vertx = Vertx.vertx();
        Database database = Database.connect(vertx, TestDatabases.freshEmpty(), 1, 1_000);
        try {
            SqlConnection held = result(database.pool().getConnection());
            Throwable waited = failure(database.pool().query("SELECT 1").execute());
            assertThat(waited).isInstanceOf(VertxException.class).hasMessage(DatabaseFailures.POOL_WAIT_TIMED_OUT);
            assertThat(DatabaseFailures.unreachable(waited)).isTrue();
            result(held.close());
            // the same pool serves again once a connection is free
            assertThat(result(database.pool().query("SELECT 1").execute()).size()).isEqualTo(1);
        } finally {
            result(database.close());
            result(vertx.close());
        }
        // another failure of the client with another text stays the statement's
        assertThat(DatabaseFailures.unreachable(new VertxException("Pool closed", true))).isFalse();
    }

    @Test
    void aRefusedStatementOrAFailureAnotherLayerJudgedIsNot() {
        assertThat(DatabaseFailures.unreachable(new PgException("duplicate key value", "ERROR", "23505", null))).isFalse();
        assertThat(DatabaseFailures.unreachable(new IllegalStateException("a bug"))).isFalse();
        assertThat(DatabaseFailures.unreachable(null)).isFalse();
        // a model endpoint that refused connections is the model's failure, judged by its own layer
        assertThat(DatabaseFailures.unreachable(new ModelFailure(new ConnectException("refused")))).isFalse();
    }

    @Test
    void aConnectionResetUnderAStoresStatementIsTheDatabaseGoneButARawOneIsNot() {
        // PostgreSQL shutting down resets the connections under the statements in flight: the client fails them with
        // a plain java.net.SocketException, which a model call can fail with too; the store that ran one marks it
        java.net.SocketException reset = new java.net.SocketException("Connection reset");
        Throwable marked = DatabaseFailures.marked(io.vertx.core.Future.failedFuture(reset)).cause();
        assertThat(DatabaseFailures.unreachable(marked)).isTrue();
        assertThat(marked).hasRootCause(reset);
        assertThat(DatabaseFailures.unreachable(reset)).isFalse();
        // a statement PostgreSQL refused stays what it was
        PgException refused = new PgException("duplicate key value", "ERROR", "23505", null);
        assertThat(DatabaseFailures.marked(io.vertx.core.Future.failedFuture(refused)).cause()).isSameAs(refused);
        assertThat(DatabaseFailures.marked(io.vertx.core.Future.succeededFuture(7)).result()).isEqualTo(7);
    }

    private static final class ModelFailure extends RuntimeException {
        ModelFailure(Throwable cause) {
            super("model request failed", cause);
        }
    }
}
