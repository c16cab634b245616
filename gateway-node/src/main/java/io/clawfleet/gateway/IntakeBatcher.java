package io.clawfleet.gateway;

import io.clawfleet.shared.store.InboxStore;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Group commit of the gateway's intake: messages that arrive while earlier ones are being committed
 * are committed together, in one statement and one transaction, instead of one each.
 *
 * <p>Nothing waits for a batch to fill: with fewer than {@code maxInFlight} batches under way a
 * message goes at once, alone if it is alone, so an idle gateway answers as fast as before. Only when
 * the database is the bottleneck do messages queue, and then the next batch takes all of them (up to
 * {@code maxBatch}, one per chat). What a batch cannot settle (a full backlog, a concurrent send of
 * the same key, a failed batch) is accepted one by one, exactly as without batching. The queue is
 * bounded by the gateway's in-flight admission limit. All state lives on one context.
 */
public final class IntakeBatcher {

    private record Waiting(InboxStore.Intake intake, Promise<InboxStore.Accepted> result, Context caller) {
    }

    private final InboxStore inbox;
    private final Context context;
    private final int maxBatch;
    private final int maxInFlight;
    private final ArrayDeque<Waiting> queue = new ArrayDeque<>();
    private int inFlight;
    private long commits;

    public IntakeBatcher(Vertx vertx, InboxStore inbox, int maxBatch, int maxInFlight) {
        this.inbox = Objects.requireNonNull(inbox);
        this.context = vertx.getOrCreateContext();
        if (maxBatch < 1 || maxInFlight < 1) {
            throw new IllegalArgumentException("maxBatch and maxInFlight must be at least 1");
        }
        this.maxBatch = maxBatch;
        this.maxInFlight = maxInFlight;
    }

    /** Accepts a message (its own backlog limit applies); completes on the caller's context once committed. */
    public Future<InboxStore.Accepted> accept(InboxStore.Intake intake) {
        Context caller = Vertx.currentContext();
        Promise<InboxStore.Accepted> result = Promise.promise();
        Waiting waiting = new Waiting(intake, result, caller);
        context.runOnContext(v -> {
            queue.add(waiting);
            drain();
        });
        return result.future();
    }

    /** Intake statements issued so far, batches and single messages alike (a counter). */
    public long commits() {
        return commits;
    }

    /** Messages waiting for a batch (a gauge). */
    public int queued() {
        return queue.size();
    }

    private void drain() {
        while (inFlight < maxInFlight && !queue.isEmpty()) {
            List<Waiting> batch = nextBatch();
            inFlight++;
            commits++;
            commit(batch).onComplete(done -> {
                inFlight--;
                drain();
            });
        }
    }

    /** The oldest waiting messages, at most one per chat and all of the same backlog limit, in arrival order. */
    private List<Waiting> nextBatch() {
        List<Waiting> batch = new ArrayList<>();
        Set<String> chats = new HashSet<>();
        int limit = queue.peek().intake().maxUnanswered();
        for (Iterator<Waiting> it = queue.iterator(); it.hasNext() && batch.size() < maxBatch; ) {
            Waiting next = it.next();
            InboxStore.Intake in = next.intake();
            if (in.maxUnanswered() == limit && chats.add(in.tenantId() + '\u0000' + in.channel() + '\u0000' + in.chatKey())) {
                batch.add(next);
                it.remove();
            }
        }
        return batch;
    }

    private Future<Void> commit(List<Waiting> batch) {
        if (batch.size() == 1) {
            Waiting only = batch.get(0);
            return inbox.accept(only.intake()).onComplete(r -> complete(only, r)).<Void>mapEmpty().recover(e -> Future.succeededFuture());
        }
        List<InboxStore.Intake> intakes = batch.stream().map(Waiting::intake).toList();
        return inbox.acceptAll(intakes, intakes.get(0).maxUnanswered()).transform(result -> {
            List<Future<?>> alone = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                Waiting waiting = batch.get(i);
                InboxStore.Accepted accepted = result.succeeded() ? result.result().get(i) : null;
                if (accepted != null) {
                    complete(waiting, Future.succeededFuture(accepted));
                } else {
                    // Unsettled by the batch (or the batch failed as a whole): the single statement decides.
                    alone.add(inbox.accept(waiting.intake()).onComplete(r -> complete(waiting, r)));
                }
            }
            return Future.join(alone).<Void>mapEmpty().recover(e -> Future.succeededFuture());
        });
    }

    private static void complete(Waiting waiting, io.vertx.core.AsyncResult<InboxStore.Accepted> result) {
        if (waiting.caller() == null) {
            waiting.result().handle(result);
        } else {
            waiting.caller().runOnContext(v -> waiting.result().handle(result));
        }
    }
}
