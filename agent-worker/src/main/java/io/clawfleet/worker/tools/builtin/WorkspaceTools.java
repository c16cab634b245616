package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.store.WorkspaceEntry;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.store.WorkspaceLimitException;
import io.clawfleet.shared.workspace.SkillParser;
import io.clawfleet.shared.workspace.WorkspaceEvents;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.clawfleet.worker.workspace.WorkspaceAccess;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;
import io.clawfleet.shared.store.BotRef;

/**
 * {@code fs_read(path)}, {@code fs_write(path, content)}, {@code fs_edit(path, old_text, new_text)}
 * and {@code fs_list(path)}: the tenant's workspace as files (seed 000 §12.1). Paths are relative
 * and confined to the workspace (no "..", no absolute paths, no control characters); which paths a
 * chat may touch is the policy's business ({@link WorkspaceAccess}). Every write tells the cluster,
 * so each worker's cached prompt files follow at once.
 */
public final class WorkspaceTools {

    private static final int MAX_LISTED = 200;

    private final WorkspaceCache cache;
    private final EventBus bus;

    public WorkspaceTools(WorkspaceCache cache, EventBus bus) {
        this.cache = Objects.requireNonNull(cache);
        this.bus = Objects.requireNonNull(bus);
    }

    public List<Tool> tools() {
        return List.of(
                FunctionTool.reading(Schemas.tool("fs_read", "Read a workspace file.", Schemas.required("path"),
                        "path", null), this::read),
                FunctionTool.changing(Schemas.tool("fs_write", "Create or replace a workspace file.",
                        Schemas.required("path", "content"), "path", null, "content", null),
                        this::write),
                FunctionTool.changing(Schemas.tool("fs_edit", "Replace old_text, which must occur once, in a workspace file.",
                        Schemas.required("path", "old_text", "new_text"), "path", null, "old_text", null, "new_text", null), this::edit),
                FunctionTool.reading(Schemas.tool("fs_list", "List workspace files (in a folder).",
                        Schemas.required(), "path", "folder"), this::list));
    }

    /** A file path argument, normalized, or an invalid-argument error naming the problem. */
    static String file(String raw) {
        try {
            return WorkspacePaths.normalize(raw);
        } catch (IllegalArgumentException e) {
            throw ToolException.invalid("path: " + e.getMessage());
        }
    }

    /** A folder argument: "" (or ".", "/") is the whole workspace; a trailing '/' is allowed. */
    public static String folder(String raw) {
        String trimmed = raw == null ? "" : raw.strip();
        while (trimmed.endsWith("/") && trimmed.length() > 1) {
            trimmed = trimmed.substring(0, trimmed.length() - 1);
        }
        return trimmed.isEmpty() || trimmed.equals(".") || trimmed.equals("/") ? "" : file(trimmed);
    }

    /** Writes a file and tells every worker; limits and bad content become errors the model can read. */
    static Future<WorkspaceFile> write(WorkspaceCache cache, EventBus bus, BotRef bot, String path, String content) {
        if (WorkspacePaths.isSkillFile(path)) {
            try {
                SkillParser.parse(path, content);
            } catch (IllegalArgumentException e) {
                return Future.failedFuture(ToolException.invalid("content is not a valid skill: " + e.getMessage()));
            }
        }
        return cache.store().write(bot, path, content).transform(result -> {
            if (result.succeeded()) {
                written(cache, bus, bot, path);
                return Future.succeededFuture(result.result());
            }
            return Future.failedFuture(storeFailure(result.cause()));
        });
    }

    static void written(WorkspaceCache cache, EventBus bus, BotRef bot, String path) {
        cache.invalidate(bot, path);
        WorkspaceEvents.publish(bus, bot, path);
    }

    static Throwable storeFailure(Throwable failure) {
        if (failure instanceof WorkspaceLimitException || failure instanceof IllegalArgumentException) {
            return ToolException.error(failure.getMessage());
        }
        return failure;
    }

    private Future<String> read(ToolCallContext ctx, JsonObject args) {
        String path = file(args.getString("path"));
        return cache.store().read(ctx.bot(), path).map(found -> found
                .map(f -> f.content().isEmpty() ? "(" + path + " is empty)" : f.content())
                .orElseThrow(() -> ToolException.error("no file " + path + " (fs_list shows what exists)")));
    }

    private Future<String> write(ToolCallContext ctx, JsonObject args) {
        String path = file(args.getString("path"));
        String content = args.getString("content");
        return write(cache, bus, ctx.bot(), path, content)
                .map(f -> "Wrote " + path + " (" + content.length() + " characters, version " + f.version() + ").");
    }

    private Future<String> edit(ToolCallContext ctx, JsonObject args) {
        String path = file(args.getString("path"));
        String oldText = args.getString("old_text");
        if (oldText.isEmpty()) {
            throw ToolException.invalid("old_text: must not be empty");
        }
        return cache.store().read(ctx.bot(), path).compose(found -> {
            WorkspaceFile current = found.orElseThrow(() -> ToolException.error("no file " + path));
            String updated = replaceOnce(path, current.content(), oldText, args.getString("new_text"));
            if (WorkspacePaths.isSkillFile(path)) {
                try {
                    SkillParser.parse(path, updated);
                } catch (IllegalArgumentException e) {
                    throw ToolException.invalid("the edit would make an invalid skill: " + e.getMessage());
                }
            }
            // Compare-and-set: an edit never silently overwrites a change made since the read.
            return cache.store().writeIfVersion(ctx.bot(), path, updated, current.version())
                    .recover(failure -> Future.failedFuture(storeFailure(failure)))
                    .map(written -> {
                        WorkspaceFile file = written.orElseThrow(() -> ToolException.error(
                                path + " changed while it was being edited; read it again and retry"));
                        written(cache, bus, ctx.bot(), path);
                        return "Edited " + path + " (version " + file.version() + ").";
                    });
        });
    }

    private static String replaceOnce(String path, String content, String oldText, String newText) {
        int first = content.indexOf(oldText);
        if (first < 0) {
            throw ToolException.error("old_text was not found in " + path + "; read the file and copy the text exactly");
        }
        int count = 0;
        for (int at = first; at >= 0; at = content.indexOf(oldText, at + oldText.length())) {
            count++;
        }
        if (count > 1) {
            throw ToolException.error("old_text occurs " + count + " times in " + path
                    + "; include more surrounding text so it is unique");
        }
        return content.substring(0, first) + newText + content.substring(first + oldText.length());
    }

    private Future<String> list(ToolCallContext ctx, JsonObject args) {
        String folder = folder(args.getString("path", ""));
        WorkspaceAccess.Caller caller = new WorkspaceAccess.Caller(ctx.channel(), ctx.chatKey(), ctx.admin());
        return cache.store().entries(ctx.bot(), folder).map(entries -> {
            List<WorkspaceEntry> visible = entries.stream()
                    .filter(e -> caller.admin() || WorkspaceAccess.visible(e.path(), caller)).toList();
            if (visible.isEmpty()) {
                return folder.isEmpty() ? "The workspace is empty." : "No files under " + folder + ".";
            }
            StringBuilder out = new StringBuilder();
            visible.stream().limit(MAX_LISTED).forEach(e -> out.append(e.path()).append(" (").append(e.size())
                    .append(" bytes)\n"));
            if (visible.size() > MAX_LISTED) {
                out.append("... and ").append(visible.size() - MAX_LISTED).append(" more; list a subfolder\n");
            }
            return out.toString().stripTrailing();
        });
    }
}
