package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;
import io.clawfleet.shared.store.BotRef;

/**
 * Published by the worker that heard a bot's remote MCP server say its tools, resources or prompts changed
 * ({@code notifications/tools/list_changed} and the like), so that every worker lists that server again at its
 * next turn. Best-effort, like every bus message: the lists also expire on their own.
 *
 * @param server the server's name in the bot's configuration
 */
public record McpListChanged(String type, String tenantId, String botId, String server) implements Versioned {

    public static final String TYPE = "mcp-list-changed-v1";

    @JsonCreator
    public McpListChanged {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(tenantId, "tenantId");
        Versioned.require(botId, "botId");
        Versioned.require(server, "server");
    }

    public McpListChanged(BotRef bot, String server) {
        this(TYPE, bot.tenantId(), bot.botId(), server);
    }

    public BotRef bot() {
        return new BotRef(tenantId, botId);
    }
}
