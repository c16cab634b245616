package io.clawfleet.shared.schedule;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What the scheduler does with a due task: fire it (the text to put in the chat) or record it as
 * skipped, and when it is due next (none: the task is done). A pure function of the task and the
 * time, so every scheduler node decides alike.
 *
 * <p>A due time more than {@code missedAfter} in the past was missed (no scheduler ran). With
 * {@code fire_once} the first missed time fires, once, and the other missed times are folded into
 * it; with {@code skip} it is recorded as skipped. Either way the task then goes on at its first
 * due time after now. Due times less late than that fire one by one, in order.
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
    private final int heartbeatMaxChars;

    public FiringRules(Duration missedAfter, int heartbeatMaxChars) {
        this.missedAfter = Objects.requireNonNull(missedAfter);
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
        Instant next = schedule.nextAfter(missed ? now : task.dueAt()).orElse(null);
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
