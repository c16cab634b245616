package io.clawfleet.worker.turn;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Turns of messages that were in flight when two or more owners in a row stopped (issue 20): they run one at a time on
 * a worker, each from its start to its commit, oldest message first. A message that kills its worker then kills it
 * alone: the other messages that were in flight with it run before or after it, not beside it, so they do not pile up
 * restarts and reach {@code worker.maxTurnStarts} with it. Fresh turns are never held here.
 * <p>
 * Oldest first, not fewest restarts first: under steady faults every takeover brings new messages restarted once,
 * and one restarted more often waited behind them all; in the chaos run of 2026-12-02 a chat waited 8 minutes so,
 * its backlog full. A message waiting here is not counted, so its place in the line costs it no restart.
 */
final class RestartedTurns {

    /** Ends a turn's hold; only its first call counts. */
    interface Hold {
        void release();
    }

    private record Waiting(long messageId, Promise<Hold> promise) {
    }

    private final PriorityQueue<Waiting> waiting = new PriorityQueue<>(Comparator.comparingLong(Waiting::messageId));
    private boolean running;

    /** Completes when this turn may run: at once when no restarted turn runs, else after those before it. */
    synchronized Future<Hold> enter(long messageId) {
        Promise<Hold> promise = Promise.promise();
        waiting.add(new Waiting(messageId, promise));
        if (!running) {
            next();
        }
        return promise.future();
    }

    /** How many restarted turns wait for their turn on this worker. */
    synchronized int waiting() {
        return waiting.size();
    }

    private void next() {
        Waiting first = waiting.poll();
        running = first != null;
        if (first != null) {
            AtomicBoolean released = new AtomicBoolean();
            first.promise().complete(() -> {
                if (released.compareAndSet(false, true)) {
                    synchronized (this) {
                        next();
                    }
                }
            });
        }
    }
}
