package io.clawfleet.testkit;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.HistoryEntry;
import io.clawfleet.shared.store.LeaseStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static io.clawfleet.shared.testing.Await.result;

/**
 * A stand-in worker for gateway tests (the gateway module may not depend on the worker module):
 * owns every partition and answers each wake-up with {@code re: <text>} through the real fenced
 * commit, then publishes the reply notice as a worker does. One message at a time, in arrival
 * order, so a chat's replies are numbered in its messages' order as a real worker's are. A message with
 * {@code slow:<ms>} in its text is answered that much later (a long turn).
 */
public final class EchoWorker {

    /** A message with {@code slow:<ms>} in it is answered after that long. */
    private static final java.util.regex.Pattern SLOW = java.util.regex.Pattern.compile("slow:([0-9]{1,6})");
    private final Vertx vertx;
    private final ConversationStore conversations;
    private final Map<Integer, Long> epochs;
    private Future<Void> last = Future.succeededFuture();

    public EchoWorker(Vertx vertx, Pool pool, int partitions) {
        this.vertx = vertx;
        this.conversations = new ConversationStore(pool);
        Set<Integer> all = IntStream.range(0, partitions).boxed().collect(Collectors.toSet());
        this.epochs = result(new LeaseStore(pool).claim("echo", all, 600_000, Set.of()));
        for (int p = 0; p < partitions; p++) {
            vertx.eventBus().<WakeUp>consumer(Addresses.partitionWake(p), m -> {
                InboundMessage message = m.body().message();
                last = last.transform(r -> answer(message));
            });
        }
    }

    private Future<Void> answer(InboundMessage message) {
        java.util.regex.Matcher slow = SLOW.matcher(message.text());
        if (slow.find()) {
            // a long turn, for tests of what happens meanwhile
            io.vertx.core.Promise<Void> later = io.vertx.core.Promise.promise();
            vertx.setTimer(Long.parseLong(slow.group(1)), id -> later.complete());
            return later.future().compose(v -> commit(message));
        }
        return commit(message);
    }

    private Future<Void> commit(InboundMessage message) {
        String text = "re: " + message.text();
        return conversations.commitTurn(new Fence(message.partition(), "echo", epochs.get(message.partition())), message,
                        List.of(HistoryEntry.user(message.senderId(), message.text()), HistoryEntry.assistant(text)), text, null)
                .onSuccess(result -> {
                    if (result instanceof ConversationStore.CommitResult.Committed committed) {
                        vertx.eventBus().publish(Addresses.REPLY_READY, committed.reply());
                    }
                })
                .mapEmpty();
    }
}
