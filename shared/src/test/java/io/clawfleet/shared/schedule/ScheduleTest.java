package io.clawfleet.shared.schedule;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.ZoneId;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ScheduleTest {

    private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

    private static Instant at(String local, ZoneId zone) {
        return java.time.LocalDateTime.parse(local).atZone(zone).toInstant();
    }

    private static Instant next(String cron, String zone, Instant after) {
        return Schedule.parse("cron", cron, zone, after).nextAfter(after).orElseThrow();
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
    void springForwardRunsASkippedTimeOnceAfterTheGap() {
        // 2026-03-08: New York skips 02:00-03:00
        Instant before = at("2026-03-08T00:00", NEW_YORK);
        Instant first = next("30 2 * * *", "America/New_York", before);
        assertThat(ZonedDateTime.ofInstant(first, NEW_YORK).toLocalTime().toString()).isEqualTo("03:30");
        assertThat(ZonedDateTime.ofInstant(first, NEW_YORK).toLocalDate().toString()).isEqualTo("2026-03-08");
        // and the next day it is 02:30 again
        assertThat(next("30 2 * * *", "America/New_York", first)).isEqualTo(at("2026-03-09T02:30", NEW_YORK));
    }

    @Test
    void fallBackRunsARepeatedTimeOnce() {
        // 2026-11-01: New York repeats 01:00-02:00
        Instant before = at("2026-11-01T00:00", NEW_YORK);
        Instant first = next("30 1 * * *", "America/New_York", before);
        Instant second = next("30 1 * * *", "America/New_York", first);
        assertThat(first).isEqualTo(ZonedDateTime.ofLocal(java.time.LocalDateTime.parse("2026-11-01T01:30"), NEW_YORK, null).toInstant());
        assertThat(second).isEqualTo(at("2026-11-02T01:30", NEW_YORK));
    }

    @Test
    void hourlyCronKeepsFiringEveryRealHourAcrossTheChanges() {
        Instant t = at("2026-03-08T00:30", NEW_YORK);
        Instant n1 = next("0 * * * *", "America/New_York", t);
        Instant n2 = next("0 * * * *", "America/New_York", n1);
        assertThat(java.time.Duration.between(n1, n2).toHours()).isEqualTo(1);
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
    void badInputNamesTheField() {
        Instant now = Instant.now();
        assertThatThrownBy(() -> Schedule.parse("cron", "61 * * * *", null, now)).hasMessageStartingWith("schedule_value")
                .hasMessageContaining("not a valid cron");
        assertThatThrownBy(() -> Schedule.parse("cron", "* * *", null, now)).hasMessageContaining("5 fields");
        assertThatThrownBy(() -> Schedule.parse("cron", "0 9 * * *", "Mars/Olympus", now)).hasMessageStartingWith("time_zone");
        assertThatThrownBy(() -> Schedule.parse("interval", "ten", null, now)).hasMessageStartingWith("schedule_value");
        assertThatThrownBy(() -> Schedule.parse("interval", "10", null, now)).hasMessageContaining("at least 1000");
        assertThatThrownBy(() -> Schedule.parse("once", "tomorrow", null, now)).hasMessageContaining("ISO-8601");
        assertThatThrownBy(() -> Schedule.parse("once", "2026-12-24T18:00:00", null, now)).hasMessageContaining("offset");
        assertThatThrownBy(() -> Schedule.parse("weekly", "x", null, now)).hasMessageStartingWith("schedule_type");
    }
}
