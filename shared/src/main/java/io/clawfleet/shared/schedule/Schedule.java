package io.clawfleet.shared.schedule;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Optional;

/**
 * When a task fires (seed 000 §10): {@code cron} (5 fields, or 6 with seconds first, in an IANA
 * time zone), {@code interval} (milliseconds, at a fixed rate from its anchor) or {@code once}
 * (an ISO-8601 instant with its offset).
 *
 * <p>Cron times are wall-clock times in the task's zone. A time that does not exist on a day
 * (skipped by a spring-forward change) fires the length of the gap later (02:30 becomes 03:30);
 * a time that happens twice (fall-back) fires once, at its first occurrence.
 */
public sealed interface Schedule {

    /** Shortest interval a task may have. */
    long MIN_INTERVAL_MS = 1_000;

    /** The first due time strictly after {@code after}; empty when there is none (a past once). */
    Optional<Instant> nextAfter(Instant after);

    String type();

    String value();

    /** Parses a schedule; errors name the field ({@code schedule_type}, {@code schedule_value}, {@code time_zone}). */
    static Schedule parse(String type, String value, String zone, Instant anchor) {
        if (type == null) {
            throw new ScheduleException("schedule_type", "is required: cron, interval or once");
        }
        if (value == null || value.isBlank()) {
            throw new ScheduleException("schedule_value", "is required");
        }
        return switch (type.toLowerCase(Locale.ROOT)) {
            case "cron" -> Cron5or6.parse(value.strip(), zone(zone));
            case "interval" -> Interval.parse(value.strip(), anchor);
            case "once" -> Once.parse(value.strip());
            default -> throw new ScheduleException("schedule_type", "must be cron, interval or once, not '" + type + "'");
        };
    }

    static ZoneId zone(String zone) {
        if (zone == null || zone.isBlank()) {
            return ZoneOffset.UTC;
        }
        try {
            return ZoneId.of(zone.strip());
        } catch (DateTimeException e) {
            throw new ScheduleException("time_zone", "must be an IANA time zone such as Europe/Berlin, not '" + zone + "'");
        }
    }

    /** A cron expression in a time zone. */
    record Cron5or6(String value, ZoneId zone, ExecutionTime execution) implements Schedule {

        private static final CronParser FIVE = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
        private static final CronParser SIX = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

        static Cron5or6 parse(String value, ZoneId zone) {
            int fields = value.split("\\s+").length;
            if (fields != 5 && fields != 6) {
                throw new ScheduleException("schedule_value", "a cron expression has 5 fields (minute hour day month weekday)"
                        + " or 6 (second first), not " + fields + ": '" + value + "'");
            }
            Cron cron;
            try {
                cron = (fields == 5 ? FIVE : SIX).parse(value);
                cron.validate();
            } catch (IllegalArgumentException e) {
                throw new ScheduleException("schedule_value", "is not a valid cron expression: " + e.getMessage());
            }
            return new Cron5or6(value, zone, ExecutionTime.forCron(cron));
        }

        @Override
        public String type() {
            return "cron";
        }

        @Override
        public Optional<Instant> nextAfter(Instant after) {
            // Search in wall-clock time (a UTC stand-in has no DST), then place each candidate in the zone.
            LocalDateTime local = LocalDateTime.ofInstant(after, zone);
            for (int guard = 0; guard < 1_000; guard++) {
                Optional<ZonedDateTime> next = execution.nextExecution(local.atZone(ZoneOffset.UTC));
                if (next.isEmpty()) {
                    return Optional.empty();
                }
                LocalDateTime wall = next.get().toLocalDateTime();
                Instant candidate = ZonedDateTime.ofLocal(wall, zone, null).toInstant();
                if (candidate.isAfter(after)) {
                    return Optional.of(candidate);
                }
                local = wall;
            }
            return Optional.empty();
        }
    }

    /** Every {@code millis}, at a fixed rate from {@code anchor} (so a late firing does not shift later ones). */
    record Interval(String value, long millis, Instant anchor) implements Schedule {

        static Interval parse(String value, Instant anchor) {
            long millis;
            try {
                millis = Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new ScheduleException("schedule_value", "an interval is a whole number of milliseconds, not '" + value + "'");
            }
            if (millis < MIN_INTERVAL_MS) {
                throw new ScheduleException("schedule_value", "an interval is at least " + MIN_INTERVAL_MS + " ms, not " + millis);
            }
            return new Interval(value, millis, anchor);
        }

        @Override
        public String type() {
            return "interval";
        }

        @Override
        public Optional<Instant> nextAfter(Instant after) {
            long elapsed = Duration.between(anchor, after).toMillis();
            long periods = elapsed < 0 ? 0 : elapsed / millis + 1;
            return Optional.of(anchor.plusMillis(periods * millis));
        }
    }

    /** Once, at an instant. */
    record Once(String value, Instant at) implements Schedule {

        static Once parse(String value) {
            try {
                return new Once(value, OffsetDateTime.parse(value).toInstant());
            } catch (DateTimeParseException e) {
                throw new ScheduleException("schedule_value", "a once time is ISO-8601 with its offset, such as "
                        + "2026-12-24T18:00:00+01:00, not '" + value + "'");
            }
        }

        @Override
        public String type() {
            return "once";
        }

        @Override
        public Optional<Instant> nextAfter(Instant after) {
            return at.isAfter(after) ? Optional.of(at) : Optional.empty();
        }
    }
}
