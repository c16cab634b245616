package io.clawfleet.shared.node;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.vertx.core.Future;

import java.util.Map;

/** One role of a node (gateway, worker, sandbox, scheduler): a business object with a lifecycle. */
public interface NodeRole {

    String name();

    /**
     * Facts this role publishes with its node's membership, known before the node joins (a
     * sandbox's isolation level, say); they appear in {@code GET /api/v1/cluster}. Called once, before
     * {@link #start}, off the event loop: it may block briefly.
     */
    default Map<String, String> memberAttributes(ClawfleetConfig config) {
        return Map.of();
    }

    Future<Void> start(NodeContext context);

    /** Graceful stop: stop intake, finish or hand off work in flight within bounded time. */
    Future<Void> stop();
}
