package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.store.WorkspaceEntry;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.workspace.WorkspaceAccess;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * {@code shell_exec(command)}, {@code web_fetch(url)} and {@code web_search(query)}: tools that run on a
 * sandbox node, never on the worker (DESIGN.md, "Tools and the sandbox boundary"). The worker builds
 * the request (the workspace files a shell run works on, no environment of its own), the
 * {@link SandboxClient} finds a node, and what the run changed comes back into the workspace.
 *
 * <p>Only the tools a bot can use are offered, because every definition is sent with every model
 * request: {@code shell_exec} only when the shell is enabled; {@code web_search} only while a sandbox
 * node has a search key (see {@link #offered}).
 */
public final class SandboxTools {

    private final SandboxClient client;
    private final WorkspaceCache cache;
    private final WriteBack writeBack;
    private final ClawfleetConfig config;

    public SandboxTools(SandboxClient client, WorkspaceCache cache, EventBus bus, ClawfleetConfig config) {
        this.client = Objects.requireNonNull(client);
        this.cache = Objects.requireNonNull(cache);
        this.writeBack = new WriteBack(cache, bus);
        this.config = Objects.requireNonNull(config);
    }

    /** The tools to register; {@code shell_exec} only when the shell is enabled at all. */
    public List<Tool> tools() {
        List<Tool> tools = new ArrayList<>();
        if (config.security().allowShell()) {
            tools.add(FunctionTool.changing(definition("shell_exec",
                    "Run a command (no shell syntax: no pipes, redirects or variables) in a copy of the workspace.",
                    "command"), this::shell));
        }
        tools.add(FunctionTool.reading(definition("web_fetch", "Fetch a web page as text.", "url"), this::fetch));
        tools.add(FunctionTool.reading(definition("web_search", "Search the web.", "query"), this::search));
        return tools;
    }

    /** Whether a turn offers {@code tool} now: {@code web_search} needs a node with a search key. */
    public boolean offered(String tool) {
        return !tool.equals("web_search") || client.searchAvailable();
    }

    static ToolDefinition definition(String name, String description, String parameter) {
        JsonObject schema = new JsonObject().put("type", "object")
                .put("properties", new JsonObject().put(parameter, new JsonObject().put("type", "string")))
                .put("required", new JsonArray().add(parameter));
        return new ToolDefinition(name, description, schema);
    }

    private Future<String> shell(ToolCallContext ctx, JsonObject args) {
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        boolean network = sandbox.egress("shell");
        return files(ctx).compose(files -> {
            ToolCall call = new ToolCall(UUID.randomUUID().toString(), ctx.tenantId(), ctx.chatId(), "shell_exec",
                    args.encode(), files.files(), Map.of(), sandbox.shellTimeoutMs(), network, sandbox.queueTimeoutMs())
                    .withTraceParent(ctx.traceParent());
            // A run without egress only touched its private copy of the files: running it again elsewhere is safe.
            return client.execute(call, !network).compose(result -> Results.process(ctx, result, writeBack, files.left()));
        }).recover(Results::unavailable);
    }

    private Future<String> fetch(ToolCallContext ctx, JsonObject args) {
        return web(ctx, "web_fetch", args);
    }

    private Future<String> search(ToolCallContext ctx, JsonObject args) {
        return web(ctx, "web_search", args);
    }

    /** A GET changes nothing, so a fetch or search lost with its node is asked of another. */
    private Future<String> web(ToolCallContext ctx, String tool, JsonObject args) {
        ToolCall call = new ToolCall(UUID.randomUUID().toString(), ctx.tenantId(), ctx.chatId(), tool, args.encode(),
                Map.of(), Map.of(), config.sandbox().web().timeoutMs(), true, config.sandbox().queueTimeoutMs())
                .withTraceParent(ctx.traceParent());
        return client.execute(call, true).map(Results::web).recover(Results::unavailable);
    }

    private record Files(Map<String, String> files, List<String> left) {
    }

    /**
     * The workspace files the chat may see, smallest total first up to {@code sandbox.maxTransferBytes};
     * the ones that do not fit are named in the result so the model knows they were not there.
     */
    private Future<Files> files(ToolCallContext ctx) {
        WorkspaceAccess.Caller caller = new WorkspaceAccess.Caller(ctx.channel(), ctx.chatKey(), ctx.admin());
        long budget = config.sandbox().maxTransferBytes();
        return cache.store().entries(ctx.bot(), "").compose(entries -> {
            List<String> chosen = new ArrayList<>();
            List<String> left = new ArrayList<>();
            long used = 0;
            for (WorkspaceEntry entry : entries) {
                if (!caller.admin() && !WorkspaceAccess.visible(entry.path(), caller)) {
                    continue;
                }
                if (used + entry.size() > budget) {
                    left.add(entry.path());
                } else {
                    used += entry.size();
                    chosen.add(entry.path());
                }
            }
            return cache.store().readAll(ctx.bot(), chosen).map(read -> {
                Map<String, String> files = new java.util.LinkedHashMap<>();
                read.forEach((path, file) -> files.put(path, file.content()));
                return new Files(files, left);
            });
        });
    }
}
