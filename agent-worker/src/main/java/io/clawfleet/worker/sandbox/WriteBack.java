package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.workspace.SkillParser;
import io.clawfleet.shared.workspace.WorkspaceEvents;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.workspace.WorkspaceAccess;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import io.clawfleet.shared.store.BotRef;

/**
 * Writes what a sandbox run changed back to the tenant's workspace, under the same rules as
 * {@code fs_write}: a path the calling chat may not write ({@link WorkspaceAccess}) is left out, and
 * so is a skill file that would no longer parse. Every write tells the cluster, so caches follow.
 * Returns a line per file for the model, saying what was kept and what was not.
 */
final class WriteBack {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WriteBack.class);

    private final WorkspaceCache cache;
    private final EventBus bus;

    WriteBack(WorkspaceCache cache, EventBus bus) {
        this.cache = Objects.requireNonNull(cache);
        this.bus = Objects.requireNonNull(bus);
    }

    Future<List<String>> apply(ToolCallContext ctx, ToolResult result) {
        WorkspaceAccess.Caller caller = new WorkspaceAccess.Caller(ctx.channel(), ctx.chatKey(), ctx.admin());
        List<String> notes = new ArrayList<>();
        Future<Void> chain = Future.succeededFuture();
        for (Map.Entry<String, String> file : result.changedFiles().entrySet()) {
            chain = chain.compose(v -> write(ctx, caller, file.getKey(), file.getValue(), notes));
        }
        for (String path : result.deletedFiles()) {
            chain = chain.compose(v -> delete(ctx, caller, path, notes));
        }
        return chain.map(v -> notes);
    }

    private Future<Void> write(ToolCallContext ctx, WorkspaceAccess.Caller caller, String rawPath, String content, List<String> notes) {
        BotRef bot = ctx.bot();
        Optional<String> refusal = refusal(ctx, rawPath, caller);
        if (refusal.isPresent()) {
            notes.add("not saved: " + refusal.get());
            return Future.succeededFuture();
        }
        String path = WorkspacePaths.normalize(rawPath);
        if (WorkspacePaths.isSkillFile(path)) {
            try {
                SkillParser.parse(path, content);
            } catch (IllegalArgumentException e) {
                notes.add("not saved: " + path + " is not a valid skill (" + e.getMessage() + ")");
                return Future.succeededFuture();
            }
        }
        return cache.store().write(bot, path, content).transform(done -> {
            if (done.succeeded()) {
                changed(bot, path);
                notes.add("saved " + path);
            } else {
                notes.add("not saved: " + path + " (" + done.cause().getMessage() + ")");
            }
            return Future.succeededFuture();
        });
    }

    private Future<Void> delete(ToolCallContext ctx, WorkspaceAccess.Caller caller, String rawPath, List<String> notes) {
        BotRef bot = ctx.bot();
        Optional<String> refusal = refusal(ctx, rawPath, caller);
        if (refusal.isPresent()) {
            notes.add("not deleted: " + refusal.get());
            return Future.succeededFuture();
        }
        String path = WorkspacePaths.normalize(rawPath);
        return cache.store().delete(bot, path).map(deleted -> {
            if (deleted) {
                changed(bot, path);
                notes.add("deleted " + path);
            }
            return null;
        });
    }

    /** The sandbox checked paths already; the worker checks again, as it trusts no node with its workspace. */
    private static Optional<String> refusal(ToolCallContext ctx, String rawPath, WorkspaceAccess.Caller caller) {
        Optional<String> refusal;
        try {
            refusal = WorkspaceAccess.writeRefusal(WorkspacePaths.normalize(rawPath), caller);
        } catch (IllegalArgumentException e) {
            refusal = Optional.of("'" + rawPath + "' is not a workspace path (" + e.getMessage() + ")");
        }
        // A run that touched what its chat may not write is a skill gone wrong or a forged result: worth a line.
        refusal.ifPresent(why -> LOG.warn("sandbox file change dropped [tenant: {}, chat: {}]: {}", ctx.tenantId(),
                ctx.chatKey(), why));
        return refusal;
    }

    private void changed(BotRef bot, String path) {
        cache.invalidate(bot, path);
        WorkspaceEvents.publish(bus, bot, path);
    }
}
