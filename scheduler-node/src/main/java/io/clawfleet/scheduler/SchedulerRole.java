package io.clawfleet.scheduler;

import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.vertx.core.Future;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Wiring of the scheduler role.
 *
 * <p>FOUNDATION SKELETON: the node joins the cluster and reports ready, but fires no tasks yet;
 * claiming due tasks and turning them into inbox messages arrives with the scheduler work (issue 6).
 */
public final class SchedulerRole implements NodeRole {

    private final AtomicBoolean running = new AtomicBoolean();

    @Override
    public String name() {
        return "scheduler";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        ctx.readiness().register("scheduler", running::get);
        running.set(true);
        return Future.succeededFuture();
    }

    @Override
    public Future<Void> stop() {
        running.set(false);
        return Future.succeededFuture();
    }
}
