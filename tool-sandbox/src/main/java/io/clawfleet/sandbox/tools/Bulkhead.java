package io.clawfleet.sandbox.tools;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.function.Supplier;

/**
 * At most {@code maxRunning} runs at once on this node, at most {@code maxQueued} waiting (seed 000
 * §12.8); past that a call is refused at once with a busy {@link SandboxFailure}, so the worker can try another node.
 * Used from one Vert.x context only, so it needs no locks.
 */
final class Bulkhead {

    private final int maxRunning;
    private final int maxQueued;
    private final Queue<Runnable> waiting = new ArrayDeque<>();
    private int running;

    Bulkhead(int maxRunning, int maxQueued) {
        this.maxRunning = maxRunning;
        this.maxQueued = maxQueued;
    }

    <T> Future<T> submit(Supplier<Future<T>> work) {
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
                Runnable next = waiting.poll();
                if (next != null) {
                    next.run();
                }
                result.handle(done);
            });
        };
        if (running < maxRunning) {
            start.run();
        } else if (waiting.size() < maxQueued) {
            waiting.add(start);
        } else {
            return Future.failedFuture(SandboxFailure.busy("sandbox node busy: " + running + " runs in progress and " + waiting.size()
                    + " waiting"));
        }
        return result.future();
    }

    int running() {
        return running;
    }

    int queued() {
        return waiting.size();
    }
}
