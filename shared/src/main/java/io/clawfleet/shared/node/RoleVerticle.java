package io.clawfleet.shared.node;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

import java.util.Objects;
import java.util.function.Function;

/**
 * Wiring only: runs a role on a context of its own, so the role's state is touched by one thread
 * and every callback it awaits comes back to that same thread.
 */
final class RoleVerticle extends VerticleBase {

    private final NodeRole role;
    private final Function<io.vertx.core.Vertx, NodeContext> contextFactory;

    RoleVerticle(NodeRole role, Function<io.vertx.core.Vertx, NodeContext> contextFactory) {
        this.role = Objects.requireNonNull(role);
        this.contextFactory = Objects.requireNonNull(contextFactory);
    }

    @Override
    public Future<?> start() {
        return role.start(contextFactory.apply(vertx));
    }

    @Override
    public Future<?> stop() {
        return role.stop();
    }
}
