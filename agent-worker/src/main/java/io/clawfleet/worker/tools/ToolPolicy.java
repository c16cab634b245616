package io.clawfleet.worker.tools;

import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.workspace.WorkspaceAccess;
import io.vertx.core.json.JsonObject;

import java.util.Optional;

/**
 * The role-based policy engine of seed 000 §12.2, in one place. Normal chats may not: write
 * protected workspace paths, write global memory, read or write another chat's memory, send to
 * other chats, change roles, run a shell or use MCP tools (unless the server's entry gives a tool to
 * everyone: {@link RuledTool}). Admin chats may (the shell only when it is enabled). A read-only bot
 * changes nothing. Returns the reason of a refusal, in words the model
 * can relay.
 */
public final class ToolPolicy {

    private final boolean allowShell;

    public ToolPolicy(boolean allowShell) {
        this.allowShell = allowShell;
    }

    public Optional<String> refusal(Tool tool, JsonObject args, ToolCallContext ctx, Autonomy autonomy) {
        if (autonomy == Autonomy.READ_ONLY && tool.mutating()) {
            return Optional.of(tool.name() + " is not available: this bot is read-only (autonomy read_only)");
        }
        String name = tool.name();
        Optional<String> byName = name.startsWith(McpServers.PREFIX) ? mcpRefusal(tool, ctx) : refusal(name, ctx);
        if (byName.isPresent()) {
            return byName;
        }
        return switch (name) {
            case "fs_read", "fs_list" -> path(args).flatMap(path -> WorkspaceAccess.readRefusal(path, caller(ctx)));
            case "fs_write", "fs_edit" -> path(args).flatMap(path -> WorkspaceAccess.writeRefusal(path, caller(ctx)));
            case "memory_write" -> "global".equals(args.getString("scope")) && !ctx.admin()
                    ? adminOnly("writing the global memory") : Optional.empty();
            // Judged on the chat the tool will send to, read the way the tool reads it.
            case "message_send" -> !ctx.admin() && !ChatTargets.parse(args.getString("chat_id"), ctx.channel()).isCaller(ctx)
                    ? adminOnly("sending to another chat") : Optional.empty();
            case "chat_set_role" -> ctx.admin() ? Optional.empty() : adminOnly("changing a chat's role");
            case "shell_exec" -> !ctx.admin() ? adminOnly("running shell commands")
                    : allowShell ? Optional.empty()
                    : Optional.of("shell_exec is disabled on this Clawfleet (CLAWFLEET_ALLOW_SHELL=false)");
            default -> Optional.empty();
        };
    }

    /**
     * Whether a supervised bot must have an admin approve this call first (issue 22): every call that
     * changes something beyond the asking chat's own corner, that is all but writing the chat's own
     * memory and scratch files, the chat's own memory, its skill switches, its registration, and a
     * message to itself.
     * Shell, code skills, MCP tools, tasks, role changes and changes to shared files all wait.
     */
    public boolean needsApproval(Tool tool, JsonObject args, ToolCallContext ctx) {
        if (!tool.mutating()) {
            return false;
        }
        return switch (tool.name()) {
            case "fs_write", "fs_edit" -> path(args).map(path -> !WorkspaceAccess.ownArea(path, caller(ctx))).orElse(true);
            case "memory_write" -> "global".equals(args.getString("scope"));
            // chat_register registers the asking chat as normal, nothing more (the tool refuses any other role)
            case "skills_enable", "skills_disable", "chat_register" -> false;
            case "message_send" -> !ChatTargets.parse(args.getString("chat_id"), ctx.channel()).isCaller(ctx);
            default -> true;
        };
    }

    /** What is refused by the tool's name alone, whether or not the turn has such a tool: MCP tools in a normal chat. */
    public Optional<String> refusal(String name, ToolCallContext ctx) {
        return name.startsWith(McpServers.PREFIX) && !ctx.admin() ? adminOnly("using MCP tools") : Optional.empty();
    }

    /** An MCP tool goes by its server's rules: admin-only unless they give it to every chat. */
    private static Optional<String> mcpRefusal(Tool tool, ToolCallContext ctx) {
        McpServers.Access access = tool instanceof RuledTool ruled ? ruled.access() : McpServers.Access.ADMIN;
        if (access.allows(ctx.admin())) {
            return Optional.empty();
        }
        return access == McpServers.Access.OFF ? Optional.of(tool.name() + " is switched off for this bot")
                : adminOnly("using this MCP tool");
    }

    /**
     * Whether to offer a tool to a chat at all: not when every call of it would be refused
     * (admin-only tools in a normal chat, a disabled shell). Fewer tools make a smaller prompt and
     * no futile calls; a call of a tool not offered is still judged by {@link #refusal}.
     */
    public boolean offers(Tool tool, boolean admin) {
        return switch (tool.name()) {
            case "chat_set_role" -> admin;
            case "shell_exec" -> admin && allowShell;
            default -> !tool.name().startsWith(McpServers.PREFIX)
                    || (tool instanceof RuledTool ruled ? ruled.access() : McpServers.Access.ADMIN).allows(admin);
        };
    }

    /** The normalized path argument; a bad path is left for the tool to report. */
    private static Optional<String> path(JsonObject args) {
        try {
            String raw = args.getString("path", "");
            return Optional.of(raw.isEmpty() || raw.equals(".") || raw.equals("/") ? "" : WorkspacePaths.normalize(raw));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static WorkspaceAccess.Caller caller(ToolCallContext ctx) {
        return new WorkspaceAccess.Caller(ctx.channel(), ctx.chatKey(), ctx.admin());
    }

    private static Optional<String> adminOnly(String what) {
        return Optional.of(what + " is only allowed in an admin chat");
    }
}
