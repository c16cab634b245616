package io.clawfleet.shared.schedule;

import io.clawfleet.shared.schedule.FiringRules.Decision;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

class FiringRulesTest {

    private static final Instant DUE = Instant.parse("2026-11-22T10:00:00Z");
    private final FiringRules rules = new FiringRules(Duration.ofSeconds(60), Duration.ofSeconds(1), 100);

    private static DueTask task(String kind, String type, String value, String missedPolicy, String checklist) {
        return new DueTask("t-1", "acme", 7, "api", "alice", 3, "stretch your legs", kind, type, value, "UTC", "group",
                missedPolicy, DUE, checklist, "main");
    }

    private static DueTask everyMinute(String missedPolicy) {
        return task("prompt", "interval", "60000", missedPolicy, null);
    }

    @Test
    void anOnTimeFiringGoesToTheNextDueTimeOnTheGrid() {
        Decision decision = rules.decide(everyMinute("fire_once"), DUE.plusMillis(300));
        assertThat(decision.fires()).isTrue();
        assertThat(decision.text()).isEqualTo("stretch your legs");
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plusSeconds(60));
    }

    @Test
    void aSlightlyLateFiringKeepsEveryLaterDueTime() {
        // given a scheduler 45 s late (within the 60 s tolerance) / then the next minute is not lost
        Decision decision = rules.decide(everyMinute("skip"), DUE.plusSeconds(45));
        assertThat(decision.fires()).isTrue();
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plusSeconds(60));
    }

    @Test
    void aTaskBehindByLessThanTheMissedToleranceFiresOnceForAllItsPassedDueTimes() {
        // given an every-5-seconds task whose scheduler stalled for 59 s (less than the 60 s tolerance),
        // so 12 of its due times have passed
        DueTask everyFiveSeconds = task("prompt", "interval", "5000", "skip", null);
        // when its first passed due time is claimed
        Decision decision = rules.decide(everyFiveSeconds, DUE.plusSeconds(59));
        // then it fires (on time enough for skip), once for all of them, and goes on at its next due time from now
        assertThat(decision.fires()).isTrue();
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plusSeconds(60));
    }

    @Test
    void aDueTimeThatCameDueWithinTheTickIsNotFoldedButFiresByItself() {
        // given an every-second task claimed 1.3 s late, by a scheduler ticking every second
        DueTask everySecond = task("prompt", "interval", "1000", "fire_once", null);
        Decision decision = rules.decide(everySecond, DUE.plusMillis(1_300));
        // then the next due time, passed only 0.3 s ago, is not lost to timer jitter: it is next
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plusSeconds(1));
        // and one that passed a whole tick ago is folded
        assertThat(rules.decide(everySecond, DUE.plusMillis(2_300)).nextRunAt()).isEqualTo(DUE.plusSeconds(2));
    }

    @Test
    void afterDowntimeFireOnceFiresTheFirstMissedTimeAndFoldsTheRest() {
        // given an hour without a scheduler / when the every-minute task is claimed
        Instant now = DUE.plus(Duration.ofMinutes(60)).plusSeconds(20);
        Decision decision = rules.decide(everyMinute("fire_once"), now);
        // then it fires once, and goes on at the first due time after now, on its grid
        assertThat(decision.fires()).isTrue();
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plus(Duration.ofMinutes(61)));
    }

    @Test
    void afterDowntimeSkipRecordsTheMissedTimeAndGoesOn() {
        Instant now = DUE.plus(Duration.ofMinutes(60)).plusSeconds(20);
        Decision decision = rules.decide(everyMinute("skip"), now);
        assertThat(decision.fires()).isFalse();
        assertThat(decision.runStatus()).isEqualTo("skipped");
        assertThat(decision.reason()).contains("missed by 3620 s");
        assertThat(decision.nextRunAt()).isEqualTo(DUE.plus(Duration.ofMinutes(61)));
    }

    @Test
    void aOnceTaskIsDoneAfterItsFiringAndAfterItsSkip() {
        DueTask once = task("prompt", "once", "2026-11-22T10:00:00Z", "skip", null);
        assertThat(rules.decide(once, DUE).done()).isTrue();
        Decision missed = rules.decide(once, DUE.plus(Duration.ofHours(2)));
        assertThat(missed.fires()).isFalse();
        assertThat(missed.done()).isTrue();
    }

    @Test
    void aHeartbeatWithNothingToDoIsSkippedWithoutWakingTheBot() {
        for (String checklist : new String[] {null, "", "# Checks\n\n<!-- add items -->\n- [ ]\n"}) {
            Decision decision = rules.decide(task("heartbeat", "interval", "1800000", "fire_once", checklist), DUE);
            assertThat(decision.fires()).as("checklist %s", checklist).isFalse();
            assertThat(decision.reason()).contains("HEARTBEAT.md");
            assertThat(decision.nextRunAt()).isEqualTo(DUE.plusSeconds(1800));
        }
    }

    @Test
    void aHeartbeatWithItemsFiresWithTheChecklistInItsPrompt() {
        Decision decision = rules.decide(task("heartbeat", "interval", "1800000", "fire_once",
                "# Checks\n- [ ] look at the build\n"), DUE);
        assertThat(decision.fires()).isTrue();
        assertThat(decision.text()).contains("HEARTBEAT.md").contains("- [ ] look at the build").contains("HEARTBEAT_OK");
    }

    @Test
    void aLongChecklistIsCut() {
        Decision decision = rules.decide(task("heartbeat", "interval", "1800000", "fire_once", "- item\n".repeat(100)), DUE);
        assertThat(decision.text()).contains("more characters not shown");
    }
}
