package io.clawfleet.worker.turn;

import io.vertx.core.Future;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Restarted turns run one at a time, oldest message first; a hold ends once. */
class RestartedTurnsTest {

    @Test
    void oneRunsAtATimeOldestMessageFirstAndAHoldEndsOnce() {
        RestartedTurns turns = new RestartedTurns();
        List<String> order = new ArrayList<>();
        // given one running, and three more waiting, entered youngest first
        Future<RestartedTurns.Hold> running = turns.enter(50).onSuccess(h -> order.add("first"));
        Future<RestartedTurns.Hold> youngest = turns.enter(30).onSuccess(h -> order.add("message-30"));
        Future<RestartedTurns.Hold> younger = turns.enter(20).onSuccess(h -> order.add("message-20"));
        Future<RestartedTurns.Hold> oldest = turns.enter(10).onSuccess(h -> order.add("message-10"));
        assertThat(order).containsExactly("first");
        assertThat(turns.waiting()).isEqualTo(3);

        // when each ends (the first twice: only once counts), then the oldest waiting starts next, one at a time
        running.result().release();
        running.result().release();
        assertThat(order).containsExactly("first", "message-10");
        // and one that comes later but is older than those still waiting goes before them: none waits forever
        // behind a line that keeps filling, since fewer and fewer messages are older than it
        Future<RestartedTurns.Hold> older = turns.enter(15).onSuccess(h -> order.add("message-15"));
        oldest.result().release();
        assertThat(order).containsExactly("first", "message-10", "message-15");
        older.result().release();
        younger.result().release();
        assertThat(order).containsExactly("first", "message-10", "message-15", "message-20", "message-30");
        youngest.result().release();
        assertThat(turns.waiting()).isZero();
        // and a turn that comes when none runs starts at once
        assertThat(turns.enter(1).succeeded()).isTrue();
    }
}
