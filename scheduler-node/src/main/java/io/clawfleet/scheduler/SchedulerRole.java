package io.clawfleet.scheduler;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.schedule.FiringRules;
import io.clawfleet.shared.store.FleetStatsStore;
import io.clawfleet.shared.store.RetentionStore;
import io.clawfleet.shared.store.TaskFiringStore;
import io.vertx.core.Future;

import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/** Wiring of the scheduler role: the firing rules, the firing store, the node's task clock, its retention pruner and the fleet gauges. */
public final class SchedulerRole implements NodeRole {

    private final AtomicBoolean running = new AtomicBoolean();
    private TaskScheduler scheduler;
    private Pruner pruner;
    private FleetGauges gauges;

    @Override
    public String name() {
        return "scheduler";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        ClawfleetConfig config = ctx.config();
        ClawfleetConfig.Scheduler settings = config.scheduler();
        FiringRules rules = new FiringRules(Duration.ofMillis(settings.missedAfterMs()), Duration.ofMillis(settings.tickMs()),
                settings.heartbeatMaxChars());
        TaskFiringStore firings = new TaskFiringStore(ctx.database().pool(), rules, config.limits().maxUnansweredPerChat(),
                settings.keepRunsPerTask());
        scheduler = new TaskScheduler(ctx.vertx(), ctx.nodeId(), firings, settings, ctx.metrics(), Clock.systemUTC(),
                ctx.tracing());
        ctx.readiness().register("scheduler", running::get);
        scheduler.start();
        pruner = new Pruner(ctx.vertx(), ctx.nodeId(), new RetentionStore(ctx.database().pool()), config.retention(),
                ctx.metrics());
        pruner.start();
        gauges = new FleetGauges(ctx.vertx(), new FleetStatsStore(ctx.database().pool()), ctx.metrics(),
                settings.fleetStatsMs());
        gauges.start();
        running.set(true);
        return Future.succeededFuture();
    }

    @Override
    public Future<Void> stop() {
        running.set(false);
        if (gauges != null) {
            gauges.stop();
        }
        Future<Void> pruned = pruner == null ? Future.succeededFuture() : pruner.stop();
        Future<Void> fired = scheduler == null ? Future.succeededFuture() : scheduler.stop();
        return Future.join(pruned, fired).mapEmpty();
    }
}
