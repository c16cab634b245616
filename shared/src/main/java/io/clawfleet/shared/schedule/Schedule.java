package io.clawfleet.shared.schedule;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneOffsetTransition;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * When a task fires (seed 000 §10): {@code cron} (5 fields, or 6 with seconds first, in an IANA
 * time zone), {@code interval} (milliseconds, at a fixed rate from its anchor) or {@code once}
 * (an ISO-8601 instant with its offset).
 *
 * <p>Cron times are wall-clock times in the task's zone, with the daylight-saving rules of Vixie
 * cron. A time skipped by a spring-forward change fires the length of the gap later (02:30
 * becomes 03:30). In a repeated hour (fall-back), an expression with a fixed minute and hour fires
 * once, at the first occurrence; one with {@code *} in its minute or hour field (every 15 minutes,
 * hourly) keeps firing through both passes, so it never falls silent for an hour.
 */
public sealed interface Schedule {

    /** Shortest interval a task may have. */
    long MIN_INTERVAL_MS = 1_000;
    /** Longest interval a task may have (a year and a day); longer rhythms are cron expressions. */
    long MAX_INTERVAL_MS = Duration.ofDays(366).toMillis();

    /** The first due time strictly after {@code after}; empty when there is none (a past once). */
    Optional<Instant> nextAfter(Instant after);

    String type();

    String value();

    /** Parses a schedule; errors name the field ({@code schedule_type}, {@code schedule_value}, {@code time_zone}). */
    static Schedule parse(String type, String value, String zone, Instant anchor) {
        if (type == null || type.isBlank()) {
            throw new ScheduleException("schedule_type", "is required: cron, interval or once");
        }
        if (value == null || value.isBlank()) {
            throw new ScheduleException("schedule_value", "is required");
        }
        return switch (type.strip().toLowerCase(Locale.ROOT)) {
            case "cron" -> Cron5or6.parse(value.strip(), zone(zone));
            case "interval" -> Interval.parse(value.strip(), anchor);
            case "once" -> Once.parse(value.strip());
            default -> throw new ScheduleException("schedule_type", "must be cron, interval or once, not '" + type + "'");
        };
    }

    /**
     * An IANA time zone by name, in any letter case ({@code europe/berlin} is {@code Europe/Berlin});
     * null or blank is UTC. Fixed offsets such as {@code +02:00} are refused: they know no DST.
     */
    static ZoneId zone(String zone) {
        if (zone == null || zone.isBlank()) {
            return ZoneOffset.UTC;
        }
        String canonical = Zones.CANONICAL.get(zone.strip().toLowerCase(Locale.ROOT));
        if (canonical == null) {
            throw new ScheduleException("time_zone", "must be an IANA time zone such as Europe/Berlin or America/New_York, not '"
                    + zone + "'");
        }
        return ZoneId.of(canonical);
    }

    /** The IANA zone names the JDK knows, by lower-case name. */
    final class Zones {
        private static final Map<String, String> CANONICAL = new TreeMap<>();

        static {
            ZoneId.getAvailableZoneIds().forEach(id -> CANONICAL.put(id.toLowerCase(Locale.ROOT), id));
        }

        private Zones() {
        }
    }

    /** A cron expression in a time zone. */
    record Cron5or6(String value, ZoneId zone, ExecutionTime execution, boolean wildcard) implements Schedule {

        private static final CronParser FIVE = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
        private static final CronParser SIX = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));
        private static final int GUARD = 1_000;

        static Cron5or6 parse(String value, ZoneId zone) {
            String[] fields = value.split("\\s+");
            if (fields.length != 5 && fields.length != 6) {
                throw new ScheduleException("schedule_value", "must have 5 fields (minute hour day month weekday) or 6"
                        + " (second first) for a cron task, not " + fields.length + ": '" + value + "'");
            }
            Cron cron;
            try {
                cron = (fields.length == 5 ? FIVE : SIX).parse(value);
                cron.validate();
            } catch (IllegalArgumentException e) {
                throw new ScheduleException("schedule_value", "is not a valid cron expression: " + e.getMessage());
            }
            int minute = fields.length == 5 ? 0 : 1;
            boolean wildcard = fields[minute].contains("*") || fields[minute + 1].contains("*");
            return new Cron5or6(value, zone, ExecutionTime.forCron(cron), wildcard);
        }

        @Override
        public String type() {
            return "cron";
        }

        @Override
        public Optional<Instant> nextAfter(Instant after) {
            Optional<Instant> first = firstPass(after);
            if (!wildcard) {
                return first;
            }
            Optional<Instant> repeated = secondPassOfRepeatedHour(after);
            if (first.isEmpty() || repeated.isEmpty()) {
                return first.isEmpty() ? repeated : first;
            }
            return Optional.of(first.get().isBefore(repeated.get()) ? first.get() : repeated.get());
        }

        /**
         * Wall times mapped to instants the usual way (a skipped time moves past the gap, a repeated
         * time takes its first occurrence), which keeps them in order; the search starts at the
         * earliest wall time whose instant can still lie after {@code after}.
         */
        private Optional<Instant> firstPass(Instant after) {
            LocalDateTime wall = LocalDateTime.ofInstant(after, zone);
            ZoneOffsetTransition last = zone.getRules().previousTransition(after.plusNanos(1));
            if (last != null && after.isBefore(last.getInstant().plus(last.getDuration().abs()))) {
                // Just after a change: times in a gap fire shifted after it; times in a repeated hour fired already.
                wall = last.isGap() ? wall.minus(last.getDuration()) : last.getDateTimeBefore().minusSeconds(1);
            }
            for (int guard = 0; guard < GUARD; guard++) {
                Optional<LocalDateTime> match = nextWall(wall);
                if (match.isEmpty()) {
                    return Optional.empty();
                }
                wall = match.get();
                Instant candidate = ZonedDateTime.ofLocal(wall, zone, null).toInstant();
                if (candidate.isAfter(after)) {
                    return Optional.of(candidate);
                }
            }
            return Optional.empty();
        }

        /** The second occurrence of a repeated wall time (fall-back), for wildcard expressions only. */
        private Optional<Instant> secondPassOfRepeatedHour(Instant after) {
            ZoneOffsetTransition overlap = overlapAround(after);
            if (overlap == null) {
                return Optional.empty();
            }
            ZoneOffset second = overlap.getOffsetAfter();
            LocalDateTime from = LocalDateTime.ofInstant(after, second);
            LocalDateTime start = overlap.getDateTimeAfter().minusSeconds(1);
            return nextWall(from.isAfter(start) ? from : start)
                    .filter(wall -> wall.isBefore(overlap.getDateTimeBefore()))
                    .map(wall -> wall.toInstant(second));
        }

        /** The fall-back change whose repeated hour {@code after} is in or before (the next change), or null. */
        private ZoneOffsetTransition overlapAround(Instant after) {
            ZoneOffsetTransition last = zone.getRules().previousTransition(after.plusNanos(1));
            if (last != null && last.isOverlap() && after.isBefore(last.getInstant().plus(last.getDuration().abs()))) {
                return last;
            }
            ZoneOffsetTransition next = zone.getRules().nextTransition(after);
            return next != null && next.isOverlap() ? next : null;
        }

        /** The next matching wall time strictly after {@code wall}; UTC stands in for a zone without DST. */
        private Optional<LocalDateTime> nextWall(LocalDateTime wall) {
            return execution.nextExecution(wall.atZone(ZoneOffset.UTC)).map(ZonedDateTime::toLocalDateTime);
        }
    }

    /** Every {@code millis}, at a fixed rate from {@code anchor} (so a late firing does not shift later ones). */
    record Interval(String value, long millis, Instant anchor) implements Schedule {

        static Interval parse(String value, Instant anchor) {
            long millis;
            try {
                millis = Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new ScheduleException("schedule_value", "must be a whole number of milliseconds for an interval task, not '"
                        + value + "'");
            }
            if (millis < MIN_INTERVAL_MS || millis > MAX_INTERVAL_MS) {
                throw new ScheduleException("schedule_value", "must be from " + MIN_INTERVAL_MS + " to " + MAX_INTERVAL_MS
                        + " ms (366 days) for an interval task, not " + millis);
            }
            return new Interval(Long.toString(millis), millis, anchor);
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

    /**
     * Once, at an instant, kept to the millisecond: due times are stored and keyed in milliseconds,
     * and a finer instant would never equal its stored self.
     */
    record Once(String value, Instant at) implements Schedule {

        static Once parse(String value) {
            try {
                return new Once(value, OffsetDateTime.parse(value).toInstant().truncatedTo(ChronoUnit.MILLIS));
            } catch (DateTimeParseException e) {
                throw new ScheduleException("schedule_value", "must be an ISO-8601 time with its offset for a once task, such as "
                        + "2026-12-24T18:00:00+01:00 or 2026-12-24T17:00:00Z, not '" + value + "'");
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
