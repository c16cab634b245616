package io.clawfleet.worker.turn;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Turns of messages that were in flight when two or more owners in a row stopped (issue 20): they run one at a time on
 * a worker, those restarted fewest times first. A message that kills its worker then kills it alone: the other
 * messages that were in flight with it run before or after it, not beside it, so they do not pile up restarts and
 * reach {@code worker.maxTurnStarts} with it. Fresh turns are never held here.
 */
final class RestartedTurns {

    /** Ends a turn's hold; only its first call counts. */
    interface Hold {
        void release();
    }

    private record Waiting(int restarts, long messageId, Promise<Hold> promise) {
    }

    private final PriorityQueue<Waiting> waiting = new PriorityQueue<>(
            Comparator.comparingInt(Waiting::restarts).thenComparingLong(Waiting::messageId));
    private boolean running;

    /** Completes when this turn may run: at once when no restarted turn runs, else after those before it. */
    synchronized Future<Hold> enter(int restarts, long messageId) {
        Promise<Hold> promise = Promise.promise();
        waiting.add(new Waiting(restarts, messageId, promise));
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
