package io.clawfleet.shared.testing;

import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Checks on a task's recorded runs that hold however busy the machine running a scheduler is. */
public final class TaskRuns {

    private TaskRuns() {
    }

    /**
     * The task's runs lie whole {@code period}s apart, and a due time is missing only where the run
     * before it was claimed a whole {@code tick} after that due time had passed: a scheduler that is
     * behind folds the passed due times into one firing (docs/SCHEDULING.md), an on-time one loses none.
     */
    public static void assertOnGridAndFoldedOnlyWhenBehind(Pool pool, String taskId, Duration period, Duration tick) {
        List<Row> runs = new ArrayList<>();
        Await.result(pool.preparedQuery("SELECT due_at, started_at FROM task_runs WHERE task_id = $1 ORDER BY due_at")
                .execute(Tuple.of(taskId))).forEach(runs::add);
        for (int i = 1; i < runs.size(); i++) {
            Instant previous = runs.get(i - 1).getOffsetDateTime("due_at").toInstant();
            Instant claimed = runs.get(i - 1).getOffsetDateTime("started_at").toInstant();
            Duration gap = Duration.between(previous, runs.get(i).getOffsetDateTime("due_at").toInstant());
            assertThat(gap).as("%s: %s after %s", taskId, gap, previous).isPositive();
            assertThat(gap.toMillis() % period.toMillis()).as("%s: %s after %s", taskId, gap, previous).isZero();
            if (gap.compareTo(period) > 0) {
                Instant lastLeftOut = previous.plus(gap).minus(period);
                assertThat(claimed).as("%s: %s left out, though the run before was claimed at %s", taskId, lastLeftOut, claimed)
                        .isAfterOrEqualTo(lastLeftOut.plus(tick));
            }
        }
    }
}
