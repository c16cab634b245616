package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;
import io.clawfleet.shared.store.BotRef;

/**
 * Published by whatever wrote or deleted a workspace file (API, tools, seeding), so that nodes
 * caching the tenant's workspace drop their copy of that file. Best-effort, like every bus message:
 * a cache must also expire on its own.
 *
 * @param path  the normalized path that changed
 * @param botId the bot whose workspace it is (absent in notices of nodes older than bots: {@code main})
 */
public record WorkspaceChanged(String type, String tenantId, String path, String botId) implements Versioned {

    public static final String TYPE = "workspace-changed-v1";

    @JsonCreator
    public WorkspaceChanged {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(tenantId, "tenantId");
        Versioned.require(path, "path");
        botId = botId == null ? BotRef.MAIN : botId;
    }

    public WorkspaceChanged(BotRef bot, String path) {
        this(TYPE, bot.tenantId(), path, bot.botId());
    }

    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }
}
