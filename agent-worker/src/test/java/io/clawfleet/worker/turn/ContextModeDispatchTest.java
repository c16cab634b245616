package io.clawfleet.worker.turn;

import io.clawfleet.shared.cluster.LocalMembership;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.LeaseStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.worker.ownership.PartitionOwnership;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The dispatcher gives each turn the context mode its message came with (a task's firing: its task's). */
class ContextModeDispatchTest {

    private final Vertx vertx = Vertx.vertx();
    private final Context context = vertx.getOrCreateContext();
    private Database database;
    private PartitionOwnership ownership;
    private ConversationDispatcher dispatcher;

    @AfterEach
    void stop() {
        if (ownership != null) {
            result(onContext(() -> ownership.stop()));
            dispatcher.stop();
        }
        result(database.close());
        result(vertx.close());
    }

    private <T> Future<T> onContext(java.util.function.Supplier<Future<T>> action) {
        Promise<T> promise = Promise.promise();
        context.runOnContext(v -> action.get().onComplete(promise));
        return promise.future();
    }

    @Test
    void anIsolatedFiringIsRunAsAnIsolatedTurnAndAUserMessageAsAGroupTurn() {
        // given an isolated task firing and a user message waiting in one chat
        database = Database.connect(vertx, TestDatabases.freshMigrated(16), 4, 5_000);
        InboxStore inbox = new InboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure("acme", "Acme", "acme-key-0123456789abcdef"));
        int partition = new Partitioner(16).partitionOf("acme", "api", "alice");
        result(inbox.accept(new InboxStore.Intake("acme", "api", "alice", partition, "task:t-1:1", "task:t-1", "task",
                "check the build", null, 0, null, "isolated")));
        result(inbox.accept("acme", "api", "alice", partition, "m-1", "alice", "user", "thanks", null));
        // when a worker's dispatcher claims the partitions and runs the turns with a recording handler
        List<TurnRequest> turns = new CopyOnWriteArrayList<>();
        ConversationStore conversations = new ConversationStore(database.pool());
        TurnHandler recording = (turn, lane) -> {
            turns.add(turn);
            return conversations.commitTurn(new Fence(turn.partition(), "w1", turn.epoch()), turn.message(), List.of(), "ok", null)
                    .map(done -> done instanceof ConversationStore.CommitResult.Committed committed
                            ? new TurnOutcome.Committed(committed.reply(), List.of()) : new TurnOutcome.AlreadyDone());
        };
        ClawfleetConfig config = TestNodes.config("worker", Map.of("nodeId", "w1"));
        MicrometerMetrics metrics = new MicrometerMetrics("w1");
        result(onContext(() -> {
            dispatcher = new ConversationDispatcher(vertx, "w1", inbox, conversations, recording, config.worker(), metrics);
            ownership = new PartitionOwnership(vertx, "w1", new LocalMembership(new Member("w1", Set.of("worker"), "http://w1")),
                    new LeaseStore(database.pool()), config.lease(), dispatcher, metrics);
            dispatcher.attach(ownership);
            dispatcher.start();
            return ownership.start();
        }));
        // then the firing's turn is isolated and the user's is group, in the chat's order
        Await.until("both turns", Duration.ofSeconds(30), () -> turns.size() >= 2);
        assertThat(turns).extracting(TurnRequest::contextMode).containsExactly("isolated", "group");
        assertThat(turns).extracting(turn -> turn.message().text()).containsExactly("check the build", "thanks");
    }
}
