package io.clawfleet.scheduler;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.schedule.FiringRules;
import io.clawfleet.shared.store.TaskFiringStore;
import io.vertx.core.Future;

import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/** Wiring of the scheduler role: the firing rules, the firing store and the node's task clock. */
public final class SchedulerRole implements NodeRole {

    private final AtomicBoolean running = new AtomicBoolean();
    private TaskScheduler scheduler;

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
        scheduler = new TaskScheduler(ctx.vertx(), ctx.nodeId(), firings, settings, ctx.metrics(), Clock.systemUTC());
        ctx.readiness().register("scheduler", running::get);
        scheduler.start();
        running.set(true);
        return Future.succeededFuture();
    }

    @Override
    public Future<Void> stop() {
        running.set(false);
        return scheduler == null ? Future.succeededFuture() : scheduler.stop();
    }
}
