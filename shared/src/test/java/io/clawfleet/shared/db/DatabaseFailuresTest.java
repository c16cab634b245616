package io.clawfleet.shared.db;

import io.vertx.core.VertxException;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import org.junit.jupiter.api.Test;

import java.net.ConnectException;

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
    void aRefusedStatementOrAFailureAnotherLayerJudgedIsNot() {
        assertThat(DatabaseFailures.unreachable(new PgException("duplicate key value", "ERROR", "23505", null))).isFalse();
        assertThat(DatabaseFailures.unreachable(new IllegalStateException("a bug"))).isFalse();
        assertThat(DatabaseFailures.unreachable(null)).isFalse();
        // a model endpoint that refused connections is the model's failure, judged by its own layer
        assertThat(DatabaseFailures.unreachable(new ModelFailure(new ConnectException("refused")))).isFalse();
    }

    private static final class ModelFailure extends RuntimeException {
        ModelFailure(Throwable cause) {
            super("model request failed", cause);
        }
    }
}
