package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.schedule.FiringRules;
import io.clawfleet.shared.schedule.TaskDefinition;
import io.clawfleet.shared.store.TaskFiringStore.Fired;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Cron tasks in a zone with daylight saving, fired through the scheduler's claim (the path a scheduler
 * node takes, with the clock in the test's hand) across New York's 2026 changes: 02:00 EST became
 * 03:00 EDT on 8 March (07:00Z), 02:00 EDT became 01:00 EST on 1 November (06:00Z). The scheduler
 * looks every minute, as an on-time scheduler would; what counts is which due times enter the chat.
 */
class TaskFiringDstTest {

    private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    private static final String TENANT = "dst";

    private Vertx vertx;
    private Database database;
    private TaskStore tasks;
    private TaskFiringStore scheduler;
    private long chat;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(16), 4, 5_000);
        tasks = new TaskStore(database.pool());
        scheduler = new TaskFiringStore(database.pool(), new FiringRules(Duration.ofSeconds(60), Duration.ofSeconds(1), 8_000), 0, 100);
        result(new TenantStore(database.pool()).ensure(TENANT, "DST", "dst-key-0123456789abcdef"));
        chat = result(new InboxStore(database.pool()).accept(TENANT, "api", "clock", new Partitioner(16).partitionOf(TENANT,
                "api", "clock"), "hello", "alice", "user", "hello", null)).message().chatId();
    }

    @AfterEach
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    private String cronTask(String id, String expression, Instant createdAt) {
        TaskDefinition definition = TaskDefinition.of("tick", null, "cron", expression, "America/New_York", "UTC", null, null,
                createdAt);
        return result(tasks.create(id, TENANT, chat, definition, 100)).task().id();
    }

    /**
     * Runs a scheduler that looks at {@code from + 30 s}, then every minute until {@code until}, and
     * returns each task's fired due times. Every firing must come within that minute of its due time.
     */
    private Map<String, List<Instant>> runScheduler(Instant from, Instant until) {
        Map<String, List<Instant>> fired = new LinkedHashMap<>();
        for (Instant now = from.plusSeconds(30); now.isBefore(until); now = now.plus(Duration.ofMinutes(1))) {
            for (Optional<Fired> next = result(scheduler.fireNext(now)); next.isPresent(); next = result(scheduler.fireNext(now))) {
                Fired firing = next.get();
                assertThat(firing.runStatus()).isEqualTo("pending");
                assertThat(Duration.between(firing.task().dueAt(), now)).as("lateness of %s", firing.task())
                        .isLessThan(Duration.ofMinutes(1));
                fired.computeIfAbsent(firing.task().id(), id -> new ArrayList<>()).add(firing.task().dueAt());
            }
        }
        return fired;
    }

    private static List<Instant> every15Minutes(Instant first, Instant last) {
        List<Instant> out = new ArrayList<>();
        for (Instant at = first; !at.isAfter(last); at = at.plus(Duration.ofMinutes(15))) {
            out.add(at);
        }
        return out;
    }

    private List<String> inboxKeys() {
        List<String> keys = new ArrayList<>();
        result(database.pool().preparedQuery("SELECT idempotency_key FROM inbox WHERE chat_id = $1 AND kind = 'task' ORDER BY seq")
                .execute(io.vertx.sqlclient.Tuple.of(chat))).forEach(row -> keys.add(row.getString(0)));
        return keys;
    }

    @Test
    void springForwardFiresASkippedTimeOnceAnHourLaterAndKeepsAQuarterHourlyTaskOnItsRealRhythm() {
        // given, the evening before the change, a daily 02:30 task (a time that does not exist on 8 March)
        // and a quarter-hourly one
        Instant evening = Instant.parse("2026-03-08T04:00:00Z"); // 23:00 EST on the 7th
        String daily = cronTask("t-daily", "30 2 * * *", evening);
        String quarterly = cronTask("t-quarterly", "*/15 * * * *", evening);
        // when a scheduler runs through the night
        Map<String, List<Instant>> fired = runScheduler(evening, Instant.parse("2026-03-08T10:00:00Z"));
        // then the daily task fired once, at 03:30 EDT, and is next due at 02:30 EDT the day after
        assertThat(fired.get(daily)).containsExactly(Instant.parse("2026-03-08T07:30:00Z"));
        assertThat(fired.get(daily).get(0).atZone(NEW_YORK).toLocalTime()).isEqualTo(LocalTime.of(3, 30));
        assertThat(result(tasks.get(BotRef.main(TENANT), daily)).orElseThrow().nextRunAt()).isEqualTo(Instant.parse("2026-03-09T06:30:00Z"));
        // and the quarter-hourly one every 15 real minutes: ..., 01:45 EST, 03:00 EDT, 03:15 EDT, ...
        assertThat(fired.get(quarterly)).containsExactlyElementsOf(
                every15Minutes(Instant.parse("2026-03-08T04:15:00Z"), Instant.parse("2026-03-08T09:45:00Z")));
        assertThat(fired.get(quarterly).stream().map(at -> at.atZone(NEW_YORK).toLocalTime()))
                .contains(LocalTime.of(1, 45), LocalTime.of(3, 0)).noneMatch(time -> time.getHour() == 2);
        // and each due time entered the chat once
        assertThat(inboxKeys()).hasSize(1 + fired.get(quarterly).size()).doesNotHaveDuplicates();
    }

    @Test
    void fallBackFiresAFixedTimeOnceAndAQuarterHourlyTaskThroughBothPassesOfTheRepeatedHour() {
        // given, the evening before the change, a daily 01:30 task (a time that happens twice on 1 November)
        // and a quarter-hourly one
        Instant evening = Instant.parse("2026-11-01T03:00:00Z"); // 23:00 EDT on 31 October
        String daily = cronTask("t-daily", "30 1 * * *", evening);
        String quarterly = cronTask("t-quarterly", "*/15 * * * *", evening);
        // when a scheduler runs through the night
        Map<String, List<Instant>> fired = runScheduler(evening, Instant.parse("2026-11-01T09:00:00Z"));
        // then the daily task fired once, at the first 01:30 (EDT), not again an hour later at 01:30 EST,
        // and is next due at 01:30 EST the day after
        assertThat(fired.get(daily)).containsExactly(Instant.parse("2026-11-01T05:30:00Z"));
        assertThat(result(tasks.get(BotRef.main(TENANT), daily)).orElseThrow().nextRunAt()).isEqualTo(Instant.parse("2026-11-02T06:30:00Z"));
        // and the quarter-hourly one every 15 real minutes, through 01:00-01:45 EDT and again through 01:00-01:45 EST
        assertThat(fired.get(quarterly)).containsExactlyElementsOf(
                every15Minutes(Instant.parse("2026-11-01T03:15:00Z"), Instant.parse("2026-11-01T08:45:00Z")));
        assertThat(fired.get(quarterly).stream().filter(at -> at.atZone(NEW_YORK).toLocalTime().equals(LocalTime.of(1, 30))))
                .containsExactly(Instant.parse("2026-11-01T05:30:00Z"), Instant.parse("2026-11-01T06:30:00Z"));
        assertThat(inboxKeys()).hasSize(1 + fired.get(quarterly).size()).doesNotHaveDuplicates();
    }
}
