package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.message.SandboxFailures;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The node's bulkhead on its own, with timers the test fires by hand: runs beyond the slots wait, and
 * a run whose queue timeout passes leaves the queue and is never started, even when a slot frees later.
 */
class BulkheadTest {

    /** Timers that fire only when the test says so. */
    private static final class HandTimers implements Bulkhead.Timers {
        final Map<Long, Runnable> pending = new LinkedHashMap<>();
        long next;

        @Override
        public long set(long delayMs, Runnable action) {
            pending.put(++next, action);
            return next;
        }

        @Override
        public void cancel(long id) {
            pending.remove(id);
        }

        void fireAll() {
            new ArrayList<>(pending.values()).forEach(Runnable::run);
            pending.clear();
        }
    }

    private final HandTimers timers = new HandTimers();
    private final Bulkhead bulkhead = new Bulkhead(1, 4, timers);
    private final List<String> started = new ArrayList<>();

    private Future<String> submit(String name, Promise<String> finish) {
        return bulkhead.submit(1_000, () -> {
            started.add(name);
            return finish.future();
        });
    }

    @Test
    void aQueuedRunPastItsQueueTimeoutIsDroppedAndNeverStarted() {
        // given one slot, taken, and a run waiting for it
        Promise<String> first = Promise.promise();
        submit("first", first);
        Future<String> queued = submit("queued", Promise.promise());
        assertThat(bulkhead.queued()).isEqualTo(1);
        // when its queue timeout passes
        timers.fireAll();
        // then it fails as expired, and leaves the queue
        assertThat(queued.failed()).isTrue();
        assertThat(((SandboxFailure) queued.cause()).code()).isEqualTo(SandboxFailures.EXPIRED);
        assertThat(bulkhead.queued()).isZero();
        // and when the slot frees, it is not started late
        first.complete("done");
        assertThat(started).containsExactly("first");
    }

    @Test
    void aQueuedRunStartedInTimeIsNotExpiredLater() {
        Promise<String> first = Promise.promise();
        submit("first", first);
        Promise<String> second = Promise.promise();
        Future<String> queued = submit("second", second);
        // when the slot frees before its timeout / then it starts, and its timer is gone
        first.complete("done");
        assertThat(started).containsExactly("first", "second");
        assertThat(timers.pending).isEmpty();
        second.complete("ok");
        assertThat(queued.result()).isEqualTo("ok");
    }
}
