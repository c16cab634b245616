package io.clawfleet.shared.node;

import io.vertx.core.Future;

/** One role of a node (gateway, worker, sandbox, scheduler): a business object with a lifecycle. */
public interface NodeRole {

    String name();

    Future<Void> start(NodeContext context);

    /** Graceful stop: stop intake, finish or hand off work in flight within bounded time. */
    Future<Void> stop();
}
