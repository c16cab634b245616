package io.clawfleet.worker.tools;

import io.clawfleet.shared.workspace.McpServers;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * An MCP tool with the access its server's entry gives it ({@code access} and {@code tools} in {@code .mcp.json} or
 * the API): admin chats only, as the seeds have it for every {@code mcp__*} tool, or every chat. {@link ToolPolicy}
 * reads it; the tool itself is unchanged.
 */
public record RuledTool(Tool tool, McpServers.Access access) implements Tool {

    public RuledTool {
        Objects.requireNonNull(tool, "tool");
        Objects.requireNonNull(access, "access");
    }

    @Override
    public String name() {
        return tool.name();
    }

    @Override
    public io.clawfleet.worker.llm.ToolDefinition definition() {
        return tool.definition();
    }

    @Override
    public Future<String> execute(ToolCallContext context, JsonObject arguments) {
        return tool.execute(context, arguments);
    }

    @Override
    public boolean mutating() {
        return tool.mutating();
    }
}
