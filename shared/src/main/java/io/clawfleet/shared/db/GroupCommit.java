package io.clawfleet.shared.db;

import io.vertx.core.AsyncResult;
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
import java.util.function.Function;

/**
 * Group commit for writes that arrive from many callers: what arrives while earlier writes are
 * being committed is committed together, in one statement and one transaction, instead of one each.
 *
 * <p>Nothing waits for a group to fill: with fewer than {@code maxInFlight} commits under way an item
 * goes at once, alone if it is alone (through {@code alone}, the unbatched statement), so an idle node
 * is as fast as without grouping. Only when the database is the bottleneck do items queue, and then
 * the next group takes all of them, up to {@code maxGroup}, at most one per {@code distinctKey} (a
 * chat: the statements lock a row per key) and only of the first item's {@code kind}. Whatever a
 * group does not settle (its statement returns null for it, or fails as a whole) is committed alone,
 * so the result for each item is exactly what {@code alone} would have given. The queue is bounded by
 * the callers (their own admission limits). All state lives on one context; each result is delivered
 * on the caller's context.
 *
 * @param <I> what is committed
 * @param <O> the result for one item
 */
public final class GroupCommit<I, O> {

    /**
     * The multi-row statement: one outcome per item, in order (a completed future: its result or its
     * own failure), or null for an item it left unsettled.
     */
    @FunctionalInterface
    public interface Together<I, O> {
        Future<List<Future<O>>> commit(List<I> items);
    }

    private record Waiting<I, O>(I item, Promise<O> result, Context caller) {
    }

    private final Context context;
    private final Function<I, Future<O>> alone;
    private final Together<I, O> together;
    private final Function<I, Object> distinctKey;
    private final Function<I, Object> kind;
    private final int maxGroup;
    private final int maxInFlight;
    private final ArrayDeque<Waiting<I, O>> queue = new ArrayDeque<>();
    private int inFlight;
    private long commits;

    /**
     * @param distinctKey items of one group differ in this
     * @param kind        items of one group are alike in this (e.g. share a statement parameter)
     */
    public GroupCommit(Vertx vertx, Function<I, Future<O>> alone, Together<I, O> together, Function<I, Object> distinctKey,
                       Function<I, Object> kind, int maxGroup, int maxInFlight) {
        if (maxGroup < 1 || maxInFlight < 1) {
            throw new IllegalArgumentException("maxGroup and maxInFlight must be at least 1");
        }
        this.context = vertx.getOrCreateContext();
        this.alone = Objects.requireNonNull(alone);
        this.together = Objects.requireNonNull(together);
        this.distinctKey = Objects.requireNonNull(distinctKey);
        this.kind = Objects.requireNonNull(kind);
        this.maxGroup = maxGroup;
        this.maxInFlight = maxInFlight;
    }

    /** Commits an item with whatever else is waiting; completes on the caller's context. */
    public Future<O> submit(I item) {
        Waiting<I, O> waiting = new Waiting<>(item, Promise.promise(), Vertx.currentContext());
        context.runOnContext(v -> {
            queue.add(waiting);
            drain();
        });
        return waiting.result().future();
    }

    /** Statements issued so far, groups and single items alike (a counter). */
    public long commits() {
        return commits;
    }

    /** Items waiting for a commit (a gauge). */
    public int queued() {
        return queue.size();
    }

    private void drain() {
        while (inFlight < maxInFlight && !queue.isEmpty()) {
            List<Waiting<I, O>> group = nextGroup();
            inFlight++;
            commits++;
            commit(group).onComplete(done -> {
                inFlight--;
                drain();
            });
        }
    }

    /** The oldest waiting items, at most one per distinct key and all of the first one's kind, in arrival order. */
    private List<Waiting<I, O>> nextGroup() {
        List<Waiting<I, O>> group = new ArrayList<>();
        Set<Object> keys = new HashSet<>();
        Object first = kind.apply(queue.peek().item());
        for (Iterator<Waiting<I, O>> it = queue.iterator(); it.hasNext() && group.size() < maxGroup; ) {
            Waiting<I, O> next = it.next();
            if (Objects.equals(kind.apply(next.item()), first) && keys.add(distinctKey.apply(next.item()))) {
                group.add(next);
                it.remove();
            }
        }
        return group;
    }

    private Future<Void> commit(List<Waiting<I, O>> group) {
        if (group.size() == 1) {
            return commitAlone(group.get(0));
        }
        return together.commit(group.stream().map(Waiting::item).toList()).transform(result -> {
            List<Future<Void>> alones = new ArrayList<>();
            for (int i = 0; i < group.size(); i++) {
                Waiting<I, O> waiting = group.get(i);
                Future<O> settled = result.succeeded() ? result.result().get(i) : null;
                if (settled != null) {
                    deliver(waiting, settled);
                } else {
                    alones.add(commitAlone(waiting));
                }
            }
            return Future.join(alones).<Void>mapEmpty().otherwiseEmpty();
        });
    }

    private Future<Void> commitAlone(Waiting<I, O> waiting) {
        Future<O> result;
        try {
            result = alone.apply(waiting.item());
        } catch (RuntimeException e) {
            result = Future.failedFuture(e);
        }
        return result.onComplete(r -> deliver(waiting, r)).<Void>mapEmpty().otherwiseEmpty();
    }

    private void deliver(Waiting<I, O> waiting, AsyncResult<O> result) {
        if (waiting.caller() == null) {
            waiting.result().handle(result);
        } else {
            waiting.caller().runOnContext(v -> waiting.result().handle(result));
        }
    }
}
