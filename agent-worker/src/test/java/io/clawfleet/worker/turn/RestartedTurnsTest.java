package io.clawfleet.worker.turn;

import io.vertx.core.Future;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Restarted turns run one at a time, fewest restarts first, then oldest message first; a hold ends once. */
class RestartedTurnsTest {

    @Test
    void oneRunsAtATimeFewestRestartsFirstAndAHoldEndsOnce() {
        RestartedTurns turns = new RestartedTurns();
        List<String> order = new ArrayList<>();
        // given one running, and three more waiting: a poison restarted 3 times and two innocents restarted once
        Future<RestartedTurns.Hold> running = turns.enter(2, 50).onSuccess(h -> order.add("first"));
        Future<RestartedTurns.Hold> poison = turns.enter(3, 10).onSuccess(h -> order.add("poison"));
        Future<RestartedTurns.Hold> later = turns.enter(1, 30).onSuccess(h -> order.add("innocent-30"));
        Future<RestartedTurns.Hold> older = turns.enter(1, 20).onSuccess(h -> order.add("innocent-20"));
        assertThat(order).containsExactly("first");
        assertThat(turns.waiting()).isEqualTo(3);

        // when each ends (the first twice: only once counts), then the next in line starts, one at a time
        running.result().release();
        running.result().release();
        assertThat(order).containsExactly("first", "innocent-20");
        older.result().release();
        assertThat(order).containsExactly("first", "innocent-20", "innocent-30");
        later.result().release();
        assertThat(order).containsExactly("first", "innocent-20", "innocent-30", "poison");
        poison.result().release();
        assertThat(turns.waiting()).isZero();
        // and a turn that comes when none runs starts at once
        assertThat(turns.enter(9, 1).succeeded()).isTrue();
    }
}
