package io.clawfleet.shared.workspace;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.eventbus.EventBus;

/** Publishes {@link WorkspaceChanged} notices; call it after every successful workspace write or delete. */
public final class WorkspaceEvents {

    private WorkspaceEvents() {
    }

    /** Tells every node that {@code path} of the bot's workspace changed. */
    public static void publish(EventBus bus, BotRef bot, String path) {
        bus.publish(Addresses.WORKSPACE_CHANGED, new WorkspaceChanged(bot, path));
    }
}
