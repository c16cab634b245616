package io.clawfleet.worker.llm;

import io.clawfleet.shared.db.DatabaseFailures;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.TenantKeys;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** A bot's model providers read from a database that is gone: the turn must see the database's failure, not a model's. */
class BotModelsTest {

    @Test
    void aDatabaseThatCannotBeReachedIsNoModelFailure() throws Exception {
        int closed;
        try (ServerSocket socket = new ServerSocket(0)) {
            closed = socket.getLocalPort();
        }
        Vertx vertx = Vertx.vertx();
        try {
            // given a worker whose database is down (the port takes no connection)
            Pool pool = PgBuilder.pool().connectingTo(new PgConnectOptions().setHost("127.0.0.1").setPort(closed)
                    .setDatabase("clawfleet").setUser("clawfleet").setPassword("x")).using(vertx).build();
            ModelRouter operator = new ModelRouter(Map.of("primary", new ScriptedProvider("primary")),
                    Map.of("default", List.of("primary")), 3, 30_000, () -> 0L);
            BotModels models = new BotModels(vertx, new BotProviderStore(pool, new TenantKeys(pool, MasterKeys.none())),
                    operator, Map.of(), new EgressGuard(List.of(), host -> vertx.executeBlocking(() -> List.of())), 3,
                    30_000, 1_000, 16);
            // when a turn asks for a completion
            Throwable failure = failure(models.complete(new BotRef("acme", "main"), "default",
                    new LlmRequest(null, List.of(ChatMessage.user("hi")), List.of()), null));
            // then it fails as the database's failure, which a turn retries once the database is back, not as a model
            // failure, which a turn answers with an apology and a dead letter
            assertThat(DatabaseFailures.unreachable(failure)).as("%s", failure).isTrue();
            assertThat(failure).isNotInstanceOf(LlmException.class);
            result(pool.close());
        } finally {
            result(vertx.close());
        }
    }
}
