package io.clawfleet.sandbox.tools;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.function.Supplier;

/**
 * At most {@code maxRunning} runs at once on this node, at most {@code maxQueued} waiting (seed 000
 * §12.8); past that a call is refused at once with a busy {@link SandboxFailure}, so the worker can try another node.
 * A call waits at most its own queue timeout: then it leaves the queue unstarted with an expired
 * {@link SandboxFailure}, because its worker is about to give up on this node and ask another, and a
 * copy started here later would run the call twice. Used from one Vert.x context only, so it needs no locks.
 */
final class Bulkhead {

    /** One-shot timers on the bulkhead's context ({@code vertx::setTimer} and {@code vertx::cancelTimer}). */
    interface Timers {
        long set(long delayMs, Runnable action);

        void cancel(long id);
    }

    private static final class Waiting {
        final Runnable start;
        long timer;

        Waiting(Runnable start) {
            this.start = start;
        }
    }

    private final int maxRunning;
    private final int maxQueued;
    private final Timers timers;
    private final Deque<Waiting> waiting = new ArrayDeque<>();
    private int running;

    Bulkhead(int maxRunning, int maxQueued, Timers timers) {
        this.maxRunning = maxRunning;
        this.maxQueued = maxQueued;
        this.timers = timers;
    }

    /** @param queueTimeoutMs how long the work may wait for a slot before it is dropped unstarted */
    <T> Future<T> submit(long queueTimeoutMs, Supplier<Future<T>> work) {
        Promise<T> result = Promise.promise();
        Runnable start = () -> {
            running++;
            Future<T> started;
            try {
                started = work.get();
            } catch (RuntimeException e) {
                started = Future.failedFuture(e);
            }
            started.onComplete(done -> {
                running--;
                startNext();
                result.handle(done);
            });
        };
        if (running < maxRunning) {
            start.run();
        } else if (waiting.size() < maxQueued) {
            Waiting entry = new Waiting(start);
            waiting.add(entry);
            entry.timer = timers.set(Math.max(1, queueTimeoutMs), () -> {
                // Removed here or started by startNext, never both: both run on this one context.
                if (waiting.remove(entry)) {
                    result.fail(SandboxFailure.expired("waited " + queueTimeoutMs + " ms for a free slot on this sandbox node ("
                            + running + " runs in progress); not started"));
                }
            });
        } else {
            return Future.failedFuture(SandboxFailure.busy("sandbox node busy: " + running + " runs in progress and " + waiting.size()
                    + " waiting"));
        }
        return result.future();
    }

    private void startNext() {
        Waiting next = waiting.poll();
        if (next != null) {
            timers.cancel(next.timer);
            next.start.run();
        }
    }

    int running() {
        return running;
    }

    int queued() {
        return waiting.size();
    }
}
