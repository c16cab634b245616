package io.clawfleet.worker.tools;

import io.vertx.core.json.JsonObject;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The role-based policy engine of seed 000 §12.2, in one place. Normal chats may not: write
 * protected workspace paths, write global memory, send to other chats, change roles, run a shell
 * or use MCP tools. Admin chats may (the shell only when it is enabled). A read-only bot changes
 * nothing. Returns the reason of a refusal, in words the model can relay.
 */
public final class ToolPolicy {

    private final Predicate<String> protectedPath;
    private final boolean allowShell;

    /** @param protectedPath whether a workspace path is protected (IDENTITY.md, skills/, ...) */
    public ToolPolicy(Predicate<String> protectedPath, boolean allowShell) {
        this.protectedPath = Objects.requireNonNull(protectedPath);
        this.allowShell = allowShell;
    }

    public Optional<String> refusal(Tool tool, JsonObject args, ToolCallContext ctx, Autonomy autonomy) {
        if (autonomy == Autonomy.READ_ONLY && tool.mutating()) {
            return Optional.of(tool.name() + " is not available: this bot is read-only (autonomy read_only)");
        }
        String name = tool.name();
        if (name.startsWith("mcp__") && !ctx.admin()) {
            return adminOnly("MCP tools");
        }
        return switch (name) {
            case "fs_write", "fs_edit" -> {
                String path = args.getString("path", "");
                yield !ctx.admin() && protectedPath.test(path)
                        ? Optional.of(path + " is protected: only an admin chat may change it") : Optional.empty();
            }
            case "memory_write" -> "global".equals(args.getString("scope")) && !ctx.admin()
                    ? adminOnly("writing the global memory") : Optional.empty();
            case "message_send" -> !ctx.admin() && !ctx.chatKey().equals(args.getString("chat_id"))
                    ? adminOnly("sending to another chat") : Optional.empty();
            case "chat_set_role" -> ctx.admin() ? Optional.empty() : adminOnly("changing a chat's role");
            case "shell_exec" -> !ctx.admin() ? adminOnly("running shell commands")
                    : allowShell ? Optional.empty()
                    : Optional.of("shell_exec is disabled on this Clawfleet (CLAWFLEET_ALLOW_SHELL=false)");
            default -> Optional.empty();
        };
    }

    private static Optional<String> adminOnly(String what) {
        return Optional.of(what + " is only allowed in an admin chat");
    }
}
