package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The gateway's group commit of intake: many at once are committed together, each exactly as alone. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IntakeBatcherTest {

    private static final int PARTITIONS = 16;
    private Vertx vertx;
    private Database database;
    private InboxStore inbox;
    private final Partitioner partitioner = new Partitioner(PARTITIONS);

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(PARTITIONS), 4, 5_000);
        inbox = new InboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure("acme", "Acme", "acme-key-0123456789abcdef"));
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    private InboxStore.Intake intake(String chat, String messageId, int maxUnanswered) {
        return new InboxStore.Intake("acme", "main", "api", chat, partitioner.partitionOf("acme", "api", chat), messageId, "alice",
                "user", "text of " + messageId, null, maxUnanswered, null, null);
    }

    private long storedWithKeyPrefix(String prefix) {
        return result(database.pool().preparedQuery("SELECT count(*) AS n FROM inbox WHERE idempotency_key LIKE $1")
                .execute(Tuple.of(prefix + "%")).map(rows -> rows.iterator().next().getLong("n")));
    }

    @Test
    void manyMessagesAtOnceAreAllStoredOnceInOrderPerChat() {
        // given a batcher allowing one commit at a time, so that the messages behind it queue
        IntakeBatcher batcher = new IntakeBatcher(vertx, inbox, 64, 1);
        List<String> chats = List.of("c-" + UUID.randomUUID(), "c-" + UUID.randomUUID(), "c-" + UUID.randomUUID());
        // when 3 chats send 20 messages each at once, and every message is sent twice
        List<Future<InboxStore.Accepted>> sent = new ArrayList<>();
        List<Future<InboxStore.Accepted>> retried = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            for (String chat : chats) {
                sent.add(batcher.accept(intake(chat, chat + "/m" + i, 0)));
            }
        }
        for (int i = 0; i < 20; i++) {
            for (String chat : chats) {
                retried.add(batcher.accept(intake(chat, chat + "/m" + i, 0)));
            }
        }
        result(Future.all(sent));
        result(Future.all(retried));
        // then each message is stored once, numbered 1..20 in its chat in the order it was sent
        Map<String, List<Long>> seqs = new TreeMap<>();
        for (Future<InboxStore.Accepted> future : sent) {
            InboundMessage message = future.result().message();
            assertThat(future.result().created()).isTrue();
            seqs.computeIfAbsent(message.chatKey(), k -> new ArrayList<>()).add(message.seq());
        }
        assertThat(seqs.values()).allSatisfy(list -> assertThat(list).containsExactlyElementsOf(
                java.util.stream.LongStream.rangeClosed(1, 20).boxed().toList()));
        for (int i = 0; i < sent.size(); i++) {
            assertThat(retried.get(i).result().outcome()).isEqualTo(InboxStore.Outcome.DUPLICATE);
            assertThat(retried.get(i).result().message().id()).isEqualTo(sent.get(i).result().message().id());
        }
        for (String chat : chats) {
            assertThat(storedWithKeyPrefix(chat + "/")).isEqualTo(20);
        }
        assertThat(batcher.commits()).as("statements for 120 sends").isLessThan(60);
    }

    @Test
    void aFullBacklogInABatchIsRefusedAsAloneAndTheRestGoesIn() {
        // given a chat at its limit of 2 unanswered messages
        String full = "c-" + UUID.randomUUID();
        result(inbox.accept(intake(full, "f1", 2)));
        result(inbox.accept(intake(full, "f2", 2)));
        IntakeBatcher batcher = new IntakeBatcher(vertx, inbox, 64, 1);
        // when its third message arrives together with other chats' messages
        List<Future<InboxStore.Accepted>> sent = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            sent.add(batcher.accept(intake("c-" + UUID.randomUUID(), "x", 2)));
        }
        Future<InboxStore.Accepted> third = batcher.accept(intake(full, "f3", 2));
        result(Future.all(sent));
        // then it is refused (backlog full), nothing of it is stored, and the others are stored
        assertThat(result(third).outcome()).isEqualTo(InboxStore.Outcome.BACKLOG_FULL);
        assertThat(storedWithKeyPrefix("f3")).isZero();
        assertThat(sent).allSatisfy(f -> assertThat(f.result().created()).isTrue());
    }

    @Test
    void aCallerOnAnEventLoopIsAnsweredOnItsOwnContext() {
        // given a caller running on a context of its own
        IntakeBatcher batcher = new IntakeBatcher(vertx, inbox, 64, 2);
        io.vertx.core.Context caller = vertx.getOrCreateContext();
        // when it sends / then its callback runs on that context
        Future<Boolean> sameContext = Future.future(p -> caller.runOnContext(v -> batcher
                .accept(intake("c-" + UUID.randomUUID(), "m", 0))
                .onComplete(r -> p.complete(Vertx.currentContext() == caller))));
        assertThat(result(sameContext)).isTrue();
    }
}
