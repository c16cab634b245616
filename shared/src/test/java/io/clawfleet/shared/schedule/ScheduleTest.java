package io.clawfleet.shared.schedule;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.zone.ZoneOffsetTransition;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ScheduleTest {

    private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

    private static Instant at(String local, ZoneId zone) {
        return LocalDateTime.parse(local).atZone(zone).toInstant();
    }

    /** The later of the two instants a repeated wall time has. */
    private static Instant secondOccurrence(String local, ZoneId zone) {
        return LocalDateTime.parse(local).atZone(zone).withLaterOffsetAtOverlap().toInstant();
    }

    private static Instant next(String cron, String zone, Instant after) {
        return Schedule.parse("cron", cron, zone, after).nextAfter(after).orElseThrow();
    }

    private static List<Instant> firings(String cron, String zone, Instant from, Instant until) {
        Schedule schedule = Schedule.parse("cron", cron, zone, from);
        List<Instant> out = new ArrayList<>();
        Instant t = from;
        while (true) {
            t = schedule.nextAfter(t).orElseThrow();
            if (t.isAfter(until)) {
                return out;
            }
            out.add(t);
        }
    }

    @Test
    void cronFiresAtLocalTimesInItsZone() {
        Instant now = at("2026-11-22T08:00", BERLIN);
        assertThat(next("30 9 * * *", "Europe/Berlin", now)).isEqualTo(at("2026-11-22T09:30", BERLIN));
        assertThat(next("30 9 * * *", "America/New_York", now)).isEqualTo(at("2026-11-22T09:30", NEW_YORK));
    }

    @Test
    void sixFieldCronHasSecondsFirst() {
        Instant now = at("2026-11-22T08:00:00", BERLIN);
        assertThat(next("15 0 8 * * *", "Europe/Berlin", now)).isEqualTo(at("2026-11-22T08:00:15", BERLIN));
    }

    @Test
    void zoneNamesAreReadInAnyLetterCase() {
        Instant now = at("2026-11-22T08:00", BERLIN);
        assertThat(next("30 9 * * *", "europe/berlin", now)).isEqualTo(at("2026-11-22T09:30", BERLIN));
        assertThat(Schedule.zone("america/NEW_york")).isEqualTo(NEW_YORK);
        assertThat(Schedule.zone(null)).isEqualTo(ZoneOffset.UTC);
    }

    @Test
    void springForwardRunsASkippedTimeOnceAfterTheGap() {
        // given 2026-03-08, when New York skips 02:00-03:00
        Instant before = at("2026-03-08T00:00", NEW_YORK);
        // when a daily 02:30 is due / then it runs at 03:30 that day, and at 02:30 again the next day
        Instant first = next("30 2 * * *", "America/New_York", before);
        assertThat(first).isEqualTo(at("2026-03-08T03:30", NEW_YORK));
        assertThat(next("30 2 * * *", "America/New_York", first)).isEqualTo(at("2026-03-09T02:30", NEW_YORK));
    }

    @Test
    void aSkippedTimeStillRunsWhenTheTaskIsCreatedJustAfterTheChange() {
        // given it is 03:10 on the day New York skipped 02:00-03:00
        Instant justAfter = at("2026-03-08T03:10", NEW_YORK);
        // when a daily 02:30 task is created / then today's 02:30 still runs, shifted to 03:30
        assertThat(next("30 2 * * *", "America/New_York", justAfter)).isEqualTo(at("2026-03-08T03:30", NEW_YORK));
    }

    @Test
    void fallBackRunsAFixedRepeatedTimeOnce() {
        // given 2026-11-01, when New York repeats 01:00-02:00
        Instant before = at("2026-11-01T00:00", NEW_YORK);
        // when a daily 01:30 is due / then it runs at the first 01:30 only
        Instant first = next("30 1 * * *", "America/New_York", before);
        assertThat(first).isEqualTo(at("2026-11-01T01:30", NEW_YORK));
        assertThat(next("30 1 * * *", "America/New_York", first)).isEqualTo(at("2026-11-02T01:30", NEW_YORK));
        // and created during the second 01:00-02:00 it waits for the next day
        assertThat(next("30 1 * * *", "America/New_York", secondOccurrence("2026-11-01T01:10", NEW_YORK)))
                .isEqualTo(at("2026-11-02T01:30", NEW_YORK));
    }

    @Test
    void fallBackKeepsAQuarterHourlyCronFiringThroughBothPasses() {
        // given the repeated hour in New York / when */15 runs through it / then it fires every 15 real minutes
        List<Instant> fired = firings("*/15 * * * *", "America/New_York", at("2026-11-01T00:40", NEW_YORK),
                at("2026-11-01T02:00", NEW_YORK));
        assertThat(fired).containsExactly(
                at("2026-11-01T00:45", NEW_YORK),
                at("2026-11-01T01:00", NEW_YORK), at("2026-11-01T01:15", NEW_YORK),
                at("2026-11-01T01:30", NEW_YORK), at("2026-11-01T01:45", NEW_YORK),
                secondOccurrence("2026-11-01T01:00", NEW_YORK), secondOccurrence("2026-11-01T01:15", NEW_YORK),
                secondOccurrence("2026-11-01T01:30", NEW_YORK), secondOccurrence("2026-11-01T01:45", NEW_YORK),
                at("2026-11-01T02:00", NEW_YORK));
    }

    @Test
    void hourlyCronKeepsFiringEveryRealHourAcrossTheChanges() {
        Instant t = at("2026-03-08T00:30", NEW_YORK);
        Instant n1 = next("0 * * * *", "America/New_York", t);
        Instant n2 = next("0 * * * *", "America/New_York", n1);
        assertThat(Duration.between(n1, n2).toHours()).isEqualTo(1);
        List<Instant> autumn = firings("0 * * * *", "America/New_York", at("2026-11-01T00:30", NEW_YORK),
                at("2026-11-01T03:00", NEW_YORK));
        for (int i = 1; i < autumn.size(); i++) {
            assertThat(Duration.between(autumn.get(i - 1), autumn.get(i))).isEqualTo(Duration.ofHours(1));
        }
        assertThat(autumn).hasSize(4);
    }

    @Test
    void berlinsChangesAreHandledTheSameWay() {
        // 2026-03-29: 02:00 -> 03:00; 2026-10-25: 03:00 -> 02:00
        assertThat(next("30 2 * * *", "Europe/Berlin", at("2026-03-29T01:00", BERLIN))).isEqualTo(at("2026-03-29T03:30", BERLIN));
        Instant autumn = next("30 2 * * *", "Europe/Berlin", at("2026-10-25T01:00", BERLIN));
        assertThat(autumn).isEqualTo(at("2026-10-25T02:30", BERLIN));
        assertThat(next("30 2 * * *", "Europe/Berlin", autumn)).isEqualTo(at("2026-10-26T02:30", BERLIN));
    }

    @ParameterizedTest
    @ValueSource(strings = {"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago"})
    void aQuarterHourlyCronFiresEveryFifteenRealMinutesAroundEveryChangeOfTheYear(String zoneName) {
        ZoneId zone = ZoneId.of(zoneName);
        for (ZoneOffsetTransition change : transitionsIn2026(zone)) {
            // given a day either side of a change / when */15 fires through it / then every gap is 15 minutes
            List<Instant> fired = firings("*/15 * * * *", zoneName, change.getInstant().minus(Duration.ofDays(1)),
                    change.getInstant().plus(Duration.ofDays(1)));
            assertThat(fired).hasSize(2 * 24 * 4);
            for (int i = 1; i < fired.size(); i++) {
                assertThat(Duration.between(fired.get(i - 1), fired.get(i))).as(zoneName + " at " + fired.get(i))
                        .isEqualTo(Duration.ofMinutes(15));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"30 2 * * *", "30 1 * * *", "0 3 * * *", "45 23 * * *"})
    void aDailyCronFiresExactlyOnceOnEveryLocalDateOfTheYear(String cron) {
        for (String zoneName : List.of("America/New_York", "Europe/Berlin", "Australia/Lord_Howe")) {
            ZoneId zone = ZoneId.of(zoneName);
            List<Instant> fired = firings(cron, zoneName, at("2026-01-01T00:00", zone), at("2026-12-31T23:59", zone));
            Set<LocalDate> dates = new HashSet<>();
            fired.forEach(t -> dates.add(ZonedDateTime.ofInstant(t, zone).toLocalDate()));
            assertThat(fired).as(cron + " in " + zoneName).hasSize(365);
            assertThat(dates).as(cron + " in " + zoneName).hasSize(365);
        }
    }

    private static List<ZoneOffsetTransition> transitionsIn2026(ZoneId zone) {
        List<ZoneOffsetTransition> out = new ArrayList<>();
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        while (true) {
            ZoneOffsetTransition next = zone.getRules().nextTransition(t);
            if (next == null || next.getInstant().isAfter(Instant.parse("2027-01-01T00:00:00Z"))) {
                return out;
            }
            out.add(next);
            t = next.getInstant();
        }
    }

    @Test
    void intervalsRunAtAFixedRateFromTheirAnchor() {
        Instant anchor = Instant.parse("2026-11-22T10:00:00Z");
        Schedule every = Schedule.parse("interval", "60000", null, anchor);
        assertThat(every.nextAfter(anchor)).contains(Instant.parse("2026-11-22T10:01:00Z"));
        // a late check does not shift the grid
        assertThat(every.nextAfter(Instant.parse("2026-11-22T10:05:30Z"))).contains(Instant.parse("2026-11-22T10:06:00Z"));
    }

    @Test
    void onceFiresOnceAtItsTime() {
        Schedule once = Schedule.parse("once", "2026-12-24T18:00:00+01:00", null, Instant.now());
        assertThat(once.nextAfter(Instant.parse("2026-11-22T00:00:00Z"))).contains(Instant.parse("2026-12-24T17:00:00Z"));
        assertThat(once.nextAfter(Instant.parse("2026-12-25T00:00:00Z"))).isEmpty();
    }

    @Test
    void aOnceTimeIsKeptToTheMillisecondSoItsStoredDueTimeIsNotDueAgain() {
        Schedule once = Schedule.parse("once", "2026-12-24T17:00:00.123456789Z", null, Instant.now());
        Instant stored = Instant.parse("2026-12-24T17:00:00.123Z");
        assertThat(once.nextAfter(stored.minusMillis(1))).contains(stored);
        assertThat(once.nextAfter(stored)).isEmpty();
    }

    @Test
    void badInputNamesTheField() {
        Instant now = Instant.now();
        assertThatThrownBy(() -> Schedule.parse("cron", "61 * * * *", null, now)).hasMessageStartingWith("schedule_value")
                .hasMessageContaining("not a valid cron");
        assertThatThrownBy(() -> Schedule.parse("cron", "* * *", null, now)).hasMessageContaining("5 fields");
        assertThatThrownBy(() -> Schedule.parse("cron", "0 9 * * *", "Mars/Olympus", now)).hasMessageStartingWith("time_zone");
        assertThatThrownBy(() -> Schedule.parse("cron", "0 9 * * *", "+02:00", now)).hasMessageStartingWith("time_zone");
        assertThatThrownBy(() -> Schedule.parse("interval", "ten", null, now)).hasMessageStartingWith("schedule_value");
        assertThatThrownBy(() -> Schedule.parse("interval", "10", null, now)).hasMessageContaining("from 1000");
        assertThatThrownBy(() -> Schedule.parse("interval", "999999999999999", null, now)).hasMessageContaining("366 days");
        assertThatThrownBy(() -> Schedule.parse("once", "tomorrow", null, now)).hasMessageContaining("ISO-8601");
        assertThatThrownBy(() -> Schedule.parse("once", "2026-12-24T18:00:00", null, now)).hasMessageContaining("offset");
        assertThatThrownBy(() -> Schedule.parse("once", "2026-02-30T18:00:00Z", null, now)).hasMessageStartingWith("schedule_value");
        assertThatThrownBy(() -> Schedule.parse("weekly", "x", null, now)).hasMessageStartingWith("schedule_type");
        assertThatThrownBy(() -> Schedule.parse(null, "x", null, now)).isInstanceOf(ScheduleException.class)
                .extracting(e -> ((ScheduleException) e).field()).isEqualTo("schedule_type");
    }
}
