package io.clawfleet.shared.schedule;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Set;

/**
 * A task as it is asked for, checked field by field before anything is stored (seed 000 §10). Every
 * refusal is a {@link ScheduleException} naming the field: {@code prompt}, {@code kind},
 * {@code schedule_type}, {@code schedule_value}, {@code time_zone}, {@code context_mode},
 * {@code missed_policy}.
 *
 * @param prompt       what the bot is asked when the task fires; for a heartbeat, optional extra instructions ("")
 * @param kind         {@value #PROMPT} or {@value #HEARTBEAT} (read HEARTBEAT.md and act on it)
 * @param timeZone     the IANA zone cron times are read in, canonical ({@code Europe/Berlin})
 * @param contextMode  {@code group} (chat history included) or {@code isolated}
 * @param missedPolicy {@value #FIRE_ONCE} or {@value #SKIP}: what a due time missed during downtime does
 * @param firstRun     the first due time, strictly after the time of definition
 */
public record TaskDefinition(String prompt, String kind, Schedule schedule, String timeZone, String contextMode,
                             String missedPolicy, Instant firstRun) {

    public static final String PROMPT = "prompt";
    public static final String HEARTBEAT = "heartbeat";
    public static final String GROUP = "group";
    public static final String ISOLATED = "isolated";
    public static final String FIRE_ONCE = "fire_once";
    public static final String SKIP = "skip";
    /** Longest prompt a task may carry. */
    public static final int MAX_PROMPT_CHARS = 10_000;

    /**
     * This task, if its interval is at least {@code minIntervalMs}: each firing costs a model call, so a
     * chat or a tenant may not schedule them faster than the operator allows (scheduler.minIntervalMs).
     */
    public TaskDefinition requireMinInterval(long minIntervalMs) {
        long shortest = shortestGapMillis();
        if (shortest < minIntervalMs) {
            throw new ScheduleException("schedule_value", "fires every " + shortest + " ms; this Clawfleet allows at most one "
                    + "firing every " + minIntervalMs + " ms (scheduler.minIntervalMs)");
        }
        return this;
    }

    /** The shortest time between two firings: the interval, or for cron the least gap among its next 20 due times. */
    private long shortestGapMillis() {
        if (schedule instanceof Schedule.Interval interval) {
            return interval.millis();
        }
        long shortest = Long.MAX_VALUE;
        Instant previous = firstRun;
        for (int i = 0; i < 20 && previous != null; i++) {
            Instant next = schedule.nextAfter(previous).orElse(null);
            if (next != null) {
                shortest = Math.min(shortest, Duration.between(previous, next).toMillis());
            }
            previous = next;
        }
        return shortest;
    }

    /**
     * Checks and normalizes a task. Null optional fields take their defaults: kind prompt, the
     * given default zone, context group (isolated for a heartbeat), missed policy fire_once.
     *
     * @param defaultZone the tenant's time zone, used when {@code timeZone} is null
     * @param now         the time of definition: the anchor of an interval, the "past" of a once
     */
    public static TaskDefinition of(String prompt, String kind, String scheduleType, String scheduleValue, String timeZone,
                                    String defaultZone, String contextMode, String missedPolicy, Instant now) {
        String checkedKind = oneOf("kind", kind, PROMPT, Set.of(PROMPT, HEARTBEAT));
        String checkedPrompt = prompt(prompt, checkedKind);
        String zone = Schedule.zone(timeZone == null ? defaultZone : timeZone).getId();
        String context = oneOf("context_mode", contextMode, HEARTBEAT.equals(checkedKind) ? ISOLATED : GROUP,
                Set.of(GROUP, ISOLATED));
        String missed = oneOf("missed_policy", missedPolicy, FIRE_ONCE, Set.of(FIRE_ONCE, SKIP));
        // Milliseconds are what due times are keyed by; finer anchors would only blur the keys.
        Instant anchor = now.truncatedTo(ChronoUnit.MILLIS);
        Schedule schedule = Schedule.parse(scheduleType, scheduleValue, zone, anchor);
        Instant first = schedule.nextAfter(anchor).orElseThrow(() -> new ScheduleException("schedule_value",
                schedule instanceof Schedule.Once ? "is in the past (" + scheduleValue + "); a once time must be in the future"
                        : "never matches a date (such as the 30th of February)"));
        return new TaskDefinition(checkedPrompt, checkedKind, schedule, zone, context, missed, first);
    }

    private static String prompt(String prompt, String kind) {
        String text = prompt == null ? "" : prompt.strip();
        if (text.isEmpty() && PROMPT.equals(kind)) {
            throw new ScheduleException("prompt", "is required: what the bot is asked when the task fires");
        }
        if (text.length() > MAX_PROMPT_CHARS) {
            throw new ScheduleException("prompt", "is longer than " + MAX_PROMPT_CHARS + " characters");
        }
        return text;
    }

    private static String oneOf(String field, String value, String defaultValue, Set<String> allowed) {
        if (value == null) {
            return defaultValue;
        }
        String normalized = value.strip().toLowerCase(Locale.ROOT);
        if (!allowed.contains(normalized)) {
            throw new ScheduleException(field, "must be " + String.join(" or ", allowed.stream().sorted().toList())
                    + ", not '" + value + "'");
        }
        return normalized;
    }
}
