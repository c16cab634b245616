package io.clawfleet.shared.schedule;

import org.junit.jupiter.api.Test;

import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TaskDefinitionTest {

    private static final Instant NOW = Instant.parse("2026-11-22T10:00:00Z");

    private static TaskDefinition define(String prompt, String type, String value, String zone) {
        return TaskDefinition.of(prompt, null, type, value, zone, "UTC", null, null, NOW);
    }

    private static String fieldOf(Runnable definition) {
        try {
            definition.run();
        } catch (ScheduleException e) {
            return e.field();
        }
        throw new AssertionError("expected a refusal");
    }

    @Test
    void defaultsAreGroupContextFireOnceAndTheTenantsZone() {
        // given a cron task without a zone / when defined for a tenant in Berlin / then it runs in Berlin
        TaskDefinition task = TaskDefinition.of("water the plants", null, "cron", "0 9 * * *", null, "Europe/Berlin",
                null, null, NOW);
        assertThat(task.kind()).isEqualTo("prompt");
        assertThat(task.contextMode()).isEqualTo("group");
        assertThat(task.missedPolicy()).isEqualTo("fire_once");
        assertThat(task.timeZone()).isEqualTo("Europe/Berlin");
        assertThat(task.firstRun()).isEqualTo(Instant.parse("2026-11-23T08:00:00Z"));
    }

    @Test
    void aHeartbeatNeedsNoPromptAndRunsIsolated() {
        TaskDefinition beat = TaskDefinition.of(null, "heartbeat", "interval", "1800000", null, "UTC", null, null, NOW);
        assertThat(beat.prompt()).isEmpty();
        assertThat(beat.contextMode()).isEqualTo("isolated");
        assertThat(beat.firstRun()).isEqualTo(NOW.plusSeconds(1800));
    }

    @Test
    void anExplicitZoneIsStoredInItsCanonicalSpelling() {
        assertThat(define("x", "cron", "0 9 * * *", "asia/kolkata").timeZone()).isEqualTo("Asia/Kolkata");
    }

    @Test
    void eachBadFieldIsNamed() {
        assertThat(fieldOf(() -> define(" ", "once", "2026-12-24T18:00:00Z", null))).isEqualTo("prompt");
        assertThat(fieldOf(() -> define("x".repeat(10_001), "once", "2026-12-24T18:00:00Z", null))).isEqualTo("prompt");
        assertThat(fieldOf(() -> define("x", "hourly", "1", null))).isEqualTo("schedule_type");
        assertThat(fieldOf(() -> define("x", "cron", "0 25 * * *", null))).isEqualTo("schedule_value");
        assertThat(fieldOf(() -> define("x", "cron", "0 9 * * *", "Europe/Atlantis"))).isEqualTo("time_zone");
        assertThat(fieldOf(() -> define("x", "interval", "-5", null))).isEqualTo("schedule_value");
        assertThat(fieldOf(() -> define("x", "once", "2026-13-01T00:00:00Z", null))).isEqualTo("schedule_value");
        assertThat(fieldOf(() -> TaskDefinition.of("x", "nap", "interval", "60000", null, "UTC", null, null, NOW)))
                .isEqualTo("kind");
        assertThat(fieldOf(() -> TaskDefinition.of("x", null, "interval", "60000", null, "UTC", "shared", null, NOW)))
                .isEqualTo("context_mode");
        assertThat(fieldOf(() -> TaskDefinition.of("x", null, "interval", "60000", null, "UTC", null, "twice", NOW)))
                .isEqualTo("missed_policy");
    }

    @Test
    void aOnceTimeInThePastIsRefused() {
        assertThatThrownBy(() -> define("x", "once", "2026-11-22T09:59:59Z", null))
                .hasMessageStartingWith("schedule_value").hasMessageContaining("in the past");
        assertThatThrownBy(() -> define("x", "once", "2026-11-22T10:00:00Z", null)).hasMessageContaining("in the past");
    }

    @Test
    void aCronThatMatchesNoDateIsRefused() {
        assertThatThrownBy(() -> define("x", "cron", "0 0 30 2 *", null))
                .hasMessageStartingWith("schedule_value").hasMessageContaining("never matches");
    }

    /** Issue 22: each firing is a model call; a chat or a tenant may not schedule them faster than the operator allows. */
    @Test
    void schedulesFasterThanTheOperatorsMinimumAreRefusedCronIncluded() {
        long minute = 60_000;
        assertThat(define("x", "interval", "60000", null).requireMinInterval(minute)).isNotNull();
        assertThat(define("x", "cron", "0 9 * * *", null).requireMinInterval(minute)).isNotNull();
        assertThat(define("x", "once", "2026-12-01T09:00:00Z", null).requireMinInterval(minute)).isNotNull();
        assertThatThrownBy(() -> define("x", "interval", "30000", null).requireMinInterval(minute))
                .isInstanceOfSatisfying(ScheduleException.class, e -> assertThat(e.field()).isEqualTo("schedule_value"))
                .hasMessageContaining("fires every 30000 ms").hasMessageContaining("scheduler.minIntervalMs");
        // a cron expression with seconds fires as often as an interval would
        assertThatThrownBy(() -> define("x", "cron", "*/10 * * * * *", null).requireMinInterval(minute))
                .hasMessageContaining("fires every 10000 ms");
    }
}
