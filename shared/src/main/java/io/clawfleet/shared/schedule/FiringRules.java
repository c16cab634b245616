package io.clawfleet.shared.schedule;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What the scheduler does with a due task: fire it (the text to put in the chat) or record it as
 * skipped, and when it is due next (none: the task is done). A pure function of the task and the
 * time, so every scheduler node decides alike.
 *
 * <p>A task that is behind catches up with one firing, never a burst: the claimed due time stands
 * for every later one that has passed too, and the task goes on at its next due time from now. Only
 * a due time that came due within {@code onTime} (the scheduler's tick: it could not have been fired
 * sooner) is not folded but fires by itself, so timer jitter never costs a firing. A claimed due
 * time more than {@code missedAfter} late was missed (no scheduler ran, or the task was paused):
 * with {@code fire_once} it fires as above, with {@code skip} it is recorded as skipped.
 */
public final class FiringRules {

    /** The decision for one due time. */
    public record Decision(String text, String runStatus, String reason, Instant nextRunAt) {

        static Decision fire(String text, Instant next) {
            return new Decision(text, "pending", null, next);
        }

        static Decision skip(String reason, Instant next) {
            return new Decision(null, "skipped", reason, next);
        }

        public boolean fires() {
            return text != null;
        }

        /** Whether the task has no due time left (a once that ran, a cron that matches no more dates). */
        public boolean done() {
            return nextRunAt == null;
        }
    }

    private final Duration missedAfter;
    private final Duration onTime;
    private final int heartbeatMaxChars;

    /**
     * @param missedAfter a claimed due time later than this was missed: the task's missed policy applies
     * @param onTime      a due time that came due less than this before a claim fires by itself instead of
     *                    being folded into the claimed one; the scheduler's tick
     */
    public FiringRules(Duration missedAfter, Duration onTime, int heartbeatMaxChars) {
        this.missedAfter = Objects.requireNonNull(missedAfter);
        this.onTime = Objects.requireNonNull(onTime);
        this.heartbeatMaxChars = heartbeatMaxChars;
    }

    public Decision decide(DueTask task, Instant now) {
        Schedule schedule;
        try {
            schedule = Schedule.parse(task.scheduleType(), task.scheduleValue(), task.timeZone(), task.dueAt());
        } catch (ScheduleException e) {
            // Stored valid, unusable now (a zone gone from the JDK's database): say so once and stop.
            return new Decision(null, "error", "the schedule cannot be used any more: " + e.getMessage(), null);
        }
        Duration late = Duration.between(task.dueAt(), now);
        boolean missed = late.compareTo(missedAfter) > 0;
        Instant foldedUntil = now.minus(onTime);
        Instant next = schedule.nextAfter(foldedUntil.isAfter(task.dueAt()) ? foldedUntil : task.dueAt()).orElse(null);
        if (missed && TaskDefinition.SKIP.equals(task.missedPolicy())) {
            return Decision.skip("missed by " + late.toSeconds() + " s (no scheduler was running); missed_policy is skip", next);
        }
        if (TaskDefinition.HEARTBEAT.equals(task.kind())) {
            return Heartbeat.isEmpty(task.checklist())
                    ? Decision.skip(Heartbeat.FILE + " is absent or has nothing to do", next)
                    : Decision.fire(Heartbeat.prompt(task.checklist(), task.prompt(), heartbeatMaxChars), next);
        }
        return Decision.fire(task.prompt(), next);
    }
}
