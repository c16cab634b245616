package io.clawfleet.worker.tools;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The time of a tool run as {@link ToolRunner} records it (issue 14): a run's audit row carries its wall-clock ms and
 * whether it ran on a sandbox node; a call that did not run carries neither; a budget that refuses stops the tool
 * before it runs, and a budget is told what each run took.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ToolRunTimeTest {

    private static final long SLOW_MS = 150;

    private Vertx vertx;
    private Database database;
    private AuditStore audit;
    private final AtomicInteger runs = new AtomicInteger();

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(16), 2, 5_000);
        audit = new AuditStore(database.pool());
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    private Tool tool(String name, FunctionTool.Body body) {
        ToolDefinition definition = new ToolDefinition(name, name, new JsonObject().put("type", "object"));
        return FunctionTool.reading(definition, (ctx, args) -> {
            runs.incrementAndGet();
            return body.run(ctx, args);
        });
    }

    /** A worker tool that takes {@link #SLOW_MS}, a stand-in of a sandboxed one, and one that fails while running. */
    private ToolRegistry registry() {
        return new ToolRegistry(List.of(
                tool("slow_read", (ctx, args) -> {
                    Promise<String> done = Promise.promise();
                    vertx.setTimer(SLOW_MS, t -> done.complete("read"));
                    return done.future();
                }),
                tool("web_fetch", (ctx, args) -> Future.succeededFuture("a page")),
                tool("broken", (ctx, args) -> Future.failedFuture(ToolException.error("it broke")))));
    }

    private ToolRunner runner(ToolRunner.Budget budget) {
        return new ToolRunner(new ToolPolicy(false), audit, new SecretScrubber(List.of()), 10_000, 5_000,
                new MicrometerMetrics("test"), budget);
    }

    private static ToolCallContext context(String tenant, int callIndex) {
        return new ToolCallContext(tenant, "main", 1, "api", "alice", "alice", false, 42, callIndex, null);
    }

    private ToolRunner.Outcome.Done run(ToolRunner runner, String tenant, int index, String tool, String arguments) {
        return (ToolRunner.Outcome.Done) result(runner.run(registry(), new ToolCallRequest("call-" + index, tool, arguments),
                context(tenant, index), Autonomy.FULL, false, Set.of()));
    }

    private JsonObject metadata(String tenant, String tool) {
        return result(audit.list(tenant, 0, 100)).stream().filter(e -> e.toolName().equals(tool)).findFirst().orElseThrow()
                .metadata();
    }

    @Test
    void aRunRecordsItsWallClockTimeAndWhetherItRanOnASandboxNode() {
        String tenant = "t-" + UUID.randomUUID();
        Map<String, Long> spent = new ConcurrentHashMap<>();
        ToolRunner runner = runner(budget(null, spent));
        // when a worker tool that takes a while, a sandboxed one, and one that fails while running run
        assertThat(run(runner, tenant, 0, "slow_read", "{}").success()).isTrue();
        assertThat(run(runner, tenant, 1, "web_fetch", "{}").success()).isTrue();
        assertThat(run(runner, tenant, 2, "broken", "{}").content()).contains("error (error): it broke");
        // then each audit row has its time in ms and where it ran, beside the call's message and index
        JsonObject slow = metadata(tenant, "slow_read");
        assertThat(slow.getLong("durationMs")).isGreaterThanOrEqualTo(SLOW_MS);
        assertThat(slow.getBoolean("sandbox")).isFalse();
        assertThat(slow.getLong("inboxId")).isEqualTo(42);
        assertThat(slow.getInteger("call")).isZero();
        JsonObject fetch = metadata(tenant, "web_fetch");
        assertThat(fetch.getLong("durationMs")).isNotNull().isNotNegative();
        assertThat(fetch.getBoolean("sandbox")).isTrue();
        assertThat(metadata(tenant, "broken").getLong("durationMs")).isNotNull();
        // and the budget was told the same time, once per run
        assertThat(spent.get(tenant)).isEqualTo(slow.getLong("durationMs") + fetch.getLong("durationMs")
                + metadata(tenant, "broken").getLong("durationMs"));
    }

    @Test
    void aCallThatDidNotRunHasNoTime() {
        String tenant = "t-" + UUID.randomUUID();
        int before = runs.get();
        // an argument that is not JSON: invalid, never run
        assertThat(run(runner(ToolRunner.Budget.NONE), tenant, 0, "slow_read", "not json").success()).isFalse();
        JsonObject metadata = metadata(tenant, "slow_read");
        assertThat(metadata.containsKey("durationMs")).isFalse();
        assertThat(metadata.containsKey("sandbox")).isFalse();
        assertThat(runs.get()).isEqualTo(before);
    }

    @Test
    void aBudgetThatRefusesStopsTheToolBeforeItRuns() {
        String tenant = "t-" + UUID.randomUUID();
        int before = runs.get();
        ToolRunner.Outcome.Done done = run(runner(budget("no more tool time today", new ConcurrentHashMap<>())), tenant, 0,
                "web_fetch", "{}");
        assertThat(done.success()).isFalse();
        assertThat(done.content()).isEqualTo("error (denied): no more tool time today");
        assertThat(runs.get()).isEqualTo(before);
        AuditStore.Event event = result(audit.list(tenant, 0, 10)).get(0);
        assertThat(event.outcome()).isEqualTo("denied");
        assertThat(event.reason()).isEqualTo("no more tool time today");
        assertThat(event.metadata().containsKey("durationMs")).isFalse();
    }

    /** A budget that answers {@code refusal} (null: runs may go on) and sums what it is told each tenant's runs took. */
    private static ToolRunner.Budget budget(String refusal, Map<String, Long> spent) {
        return new ToolRunner.Budget() {
            @Override
            public Future<String> refusal(String tenantId) {
                return Future.succeededFuture(refusal);
            }

            @Override
            public void spent(String tenantId, long millis) {
                spent.merge(tenantId, millis, Long::sum);
            }
        };
    }
}
