package io.clawfleet.shared.workspace;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.vertx.core.eventbus.EventBus;

/** Publishes {@link WorkspaceChanged} notices; call it after every successful workspace write or delete. */
public final class WorkspaceEvents {

    private WorkspaceEvents() {
    }

    /** Tells every node that {@code path} of the tenant's workspace changed. */
    public static void publish(EventBus bus, String tenantId, String path) {
        bus.publish(Addresses.WORKSPACE_CHANGED, new WorkspaceChanged(tenantId, path));
    }
}
