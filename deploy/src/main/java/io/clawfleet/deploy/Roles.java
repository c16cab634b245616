package io.clawfleet.deploy;

import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.sandbox.SandboxRole;
import io.clawfleet.scheduler.SchedulerRole;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.worker.WorkerRole;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** The roles a node runs, in start order: hands and brain first, the edge last (and it stops first). */
final class Roles {

    private Roles() {
    }

    static List<Supplier<NodeRole>> of(ClawfleetConfig config) {
        List<Supplier<NodeRole>> roles = new ArrayList<>();
        if (config.hasRole(Role.SANDBOX)) {
            roles.add(SandboxRole::new);
        }
        if (config.hasRole(Role.WORKER)) {
            roles.add(WorkerRole::new);
        }
        if (config.hasRole(Role.SCHEDULER)) {
            roles.add(SchedulerRole::new);
        }
        if (config.hasRole(Role.GATEWAY)) {
            roles.add(GatewayRole::new);
        }
        return roles;
    }
}
