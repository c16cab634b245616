package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;

/**
 * {@code memory_read(scope)} and {@code memory_write(scope, content)} (seed 000 §5): the bot's
 * long-term notes. Scope {@code chat} is this chat's memory file, {@code global} the tenant's
 * memory/MEMORY.md, shared by every chat and writable from admin chats only. A write replaces the
 * whole file: the model is told to rewrite, not to pile up. Both files are in every prompt.
 */
public final class MemoryTools {

    static final String CHAT = "chat";
    static final String GLOBAL = "global";

    private final WorkspaceCache cache;
    private final EventBus bus;

    public MemoryTools(WorkspaceCache cache, EventBus bus) {
        this.cache = Objects.requireNonNull(cache);
        this.bus = Objects.requireNonNull(bus);
    }

    public List<Tool> tools() {
        ToolDefinition write = Schemas.withEnum(Schemas.tool("memory_write",
                "Rewrite long-term memory (keep what still matters).", Schemas.required("scope", "content"),
                "scope", null, "content", "the whole new memory"), "scope", CHAT, GLOBAL);
        write.parameters().getJsonObject("properties").getJsonObject("content").put("maxLength", 20_000);
        return List.of(
                FunctionTool.reading(Schemas.withEnum(Schemas.tool("memory_read", "Read long-term memory.",
                        Schemas.required(), "scope", null), "scope", CHAT, GLOBAL), this::read),
                FunctionTool.changing(write, this::write));
    }

    static String path(ToolCallContext ctx, String scope) {
        return GLOBAL.equals(scope) ? WorkspacePaths.MEMORY : WorkspacePaths.chatMemory(ctx.channel(), ctx.chatKey());
    }

    private Future<String> read(ToolCallContext ctx, JsonObject args) {
        String scope = args.getString("scope", CHAT);
        return cache.file(ctx.bot(), path(ctx, scope)).map(found -> found
                .map(file -> file.content().isBlank() ? "(the " + scope + " memory is empty)" : file.content())
                .orElse("(the " + scope + " memory is empty)"));
    }

    private Future<String> write(ToolCallContext ctx, JsonObject args) {
        String scope = args.getString("scope");
        String path = path(ctx, scope);
        return WorkspaceTools.write(cache, bus, ctx.bot(), path, args.getString("content"))
                .map(file -> "Saved the " + scope + " memory (" + path + ").");
    }
}
