package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.worker.mcp.RemoteMcpTools;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.RuledTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolException;
import io.clawfleet.worker.workspace.WorkspaceSnapshot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.LongSupplier;

/**
 * The tools a bot's MCP servers add to a chat's turn, as {@code mcp__<server>__<tool>} with the server's own input
 * schema: admin chats get every server's tools, other chats those the servers' rules give to everyone
 * ({@link McpServers.Rules}). Remote servers are {@link RemoteMcpTools}' part; what follows is about stdio servers
 * run on sandbox nodes. Each server's tool list is asked of a
 * sandbox node ({@code tools/list}) and kept per tenant and content of {@code .mcp.json}, so a changed file
 * is listed again on the next turn and an unchanged one costs nothing; a list that failed is asked again
 * after {@link #RETRY_FAILED_MS}, in the background. A server whose entry is bad or whose list failed just adds no tools,
 * with a warning in the log and a line in {@code skills_list} ({@link #describe}); the turn goes on.
 */
public final class McpTools {

    private static final Logger LOG = LoggerFactory.getLogger(McpTools.class);
    /** How long a failed tool list stands before a turn asks for it again. */
    static final long RETRY_FAILED_MS = 60_000;
    /** Tool lists kept at most (per tenant, file content and server), least recently used dropped. */
    static final int MAX_LISTINGS = 1_024;

    /** One server's tools as a sandbox listed them, or why it could not. */
    private record Listing(Future<List<Tool>> tools, long expiresAt) {
    }

    private final SandboxClient client;
    private final RemoteMcpTools remote;
    private final ClawfleetConfig.Sandbox config;
    private final LongSupplier clockMs;
    private final Map<String, Listing> listings = java.util.Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Listing> eldest) {
            return size() > MAX_LISTINGS;
        }
    });

    public McpTools(SandboxClient client, RemoteMcpTools remote, ClawfleetConfig.Sandbox config, LongSupplier clockMs) {
        this.client = Objects.requireNonNull(client);
        this.remote = Objects.requireNonNull(remote);
        this.config = Objects.requireNonNull(config);
        this.clockMs = Objects.requireNonNull(clockMs);
    }

    /**
     * The tools of every server that listed them that a chat of this role may use (each a {@link RuledTool} with its
     * access; tools switched off left out); never fails.
     */
    public Future<List<Tool>> tools(BotRef bot, WorkspaceSnapshot snapshot, boolean admin) {
        McpServers.ServerSet set = servers(snapshot);
        Future<List<Tool>> stdio = tools(bot, snapshot.text(WorkspacePaths.MCP), set, admin);
        Future<List<Tool>> remoteTools = remote.servers(bot, set.remote()).compose(servers -> remote.tools(bot, servers, admin));
        return Future.all(stdio, remoteTools).map(both -> {
            List<Tool> all = new ArrayList<>(stdio.result());
            // A name the API gives a remote server shadows a stdio server's of the same name.
            java.util.Set<String> remoteServers = new java.util.HashSet<>();
            remoteTools.result().forEach(tool -> remoteServers.add(McpServers.serverOf(tool.name())));
            all.removeIf(tool -> remoteServers.contains(McpServers.serverOf(tool.name())));
            all.addAll(remoteTools.result());
            return all;
        });
    }

    /** As {@link #tools(BotRef, WorkspaceSnapshot, boolean)} for the stdio servers of {@code set} parsed from {@code content}. */
    Future<List<Tool>> tools(BotRef bot, String content, McpServers.ServerSet set, boolean admin) {
        List<McpServers.Server> wanted = set.servers().stream().filter(s -> s.rules().anyFor(admin)).toList();
        McpServers.ServerSet offered = new McpServers.ServerSet(wanted, List.of(), List.of(), List.of());
        List<Future<List<Tool>>> lists = listings(bot, content, offered);
        return Future.join(lists).transform(done -> {
            List<Tool> tools = new ArrayList<>();
            for (int i = 0; i < lists.size(); i++) {
                Future<List<Tool>> list = lists.get(i);
                McpServers.Rules rules = wanted.get(i).rules();
                if (list.succeeded()) {
                    for (Tool tool : list.result()) {
                        McpServers.Access access = rules.of(((Named) tool).serverName());
                        if (access != McpServers.Access.OFF) {
                            tools.add(new RuledTool(((Named) tool).tool(), access));
                        }
                    }
                }
            }
            return Future.succeededFuture(tools);
        });
    }

    /** A stdio server's tool with its name on the server, which its access rules use. */
    private record Named(Tool tool, String serverName) implements Tool {
        @Override
        public String name() {
            return tool.name();
        }

        @Override
        public ToolDefinition definition() {
            return tool.definition();
        }

        @Override
        public Future<String> execute(io.clawfleet.worker.tools.ToolCallContext context, JsonObject arguments) {
            return tool.execute(context, arguments);
        }

        @Override
        public boolean mutating() {
            return tool.mutating();
        }
    }

    /**
     * One line per server for {@code skills_list}: its tools (and a remote one's prompts), or why it has none; for an
     * admin chat every server with the problems of the file, for another chat only the servers some of whose tools it
     * may use. Never fails.
     */
    public Future<String> describe(BotRef bot, WorkspaceSnapshot snapshot, boolean admin) {
        String content = snapshot.text(WorkspacePaths.MCP);
        McpServers.ServerSet set = servers(snapshot);
        List<McpServers.Server> stdio = set.servers().stream().filter(s -> s.rules().anyFor(admin)).toList();
        List<Future<List<Tool>>> lists = listings(bot, content, new McpServers.ServerSet(stdio, List.of(), List.of(), List.of()));
        Future<String> remoteLines = remote.servers(bot, set.remote()).compose(servers -> remote.describe(bot,
                servers.stream().filter(s -> s.rules().anyFor(admin)).toList()));
        return Future.join(Future.join(lists), remoteLines).transform(done -> {
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < lists.size(); i++) {
                Future<List<Tool>> list = lists.get(i);
                out.append("\n- ").append(stdio.get(i).name()).append(": ").append(list.succeeded()
                        ? list.result().size() + " tools" : "unavailable: " + list.cause().getMessage());
            }
            if (remoteLines.succeeded()) {
                out.append(remoteLines.result());
            }
            if (admin) {
                set.problems().forEach(p -> out.append("\n- ").append(p.message()));
                set.notes().forEach(p -> out.append("\n- note: ").append(p.message()));
            }
            return Future.succeededFuture(out.isEmpty() ? "" : "MCP servers (" + WorkspacePaths.MCP + " and the API):" + out);
        });
    }

    /** Parsed once per snapshot, its problems logged once. */
    private McpServers.ServerSet servers(WorkspaceSnapshot snapshot) {
        return snapshot.derived(McpTools.class, s -> {
            McpServers.ServerSet set = McpServers.parse(s.text(WorkspacePaths.MCP), config.maxTimeoutMs());
            set.problems().forEach(p -> LOG.warn("mcp server not offered [tenant: {}]: {}", s.tenantId(), p.message()));
            set.notes().forEach(p -> LOG.info("mcp server limited [tenant: {}]: {}", s.tenantId(), p.message()));
            return set;
        });
    }

    private List<Future<List<Tool>>> listings(BotRef bot, String content, McpServers.ServerSet set) {
        if (set.servers().isEmpty()) {
            return List.of(); // most bots: no hash of the file per turn
        }
        String hash = sha256(content);
        return set.servers().stream().map(server -> listing(bot.tenantId() + "\n" + bot.botId() + "\n" + hash + "\n" + server.name(), bot, content, server))
                .toList();
    }

    /**
     * The server's tools as listed for this content of the file. A failed list is asked for again once it is
     * {@link #RETRY_FAILED_MS} old, in the background: the turn that finds it goes on without those tools
     * rather than wait again for a server that may hang, and a later turn gets the new list.
     */
    private Future<List<Tool>> listing(String key, BotRef bot, String content, McpServers.Server server) {
        Listing cached = listings.get(key);
        if (cached != null && cached.expiresAt() > clockMs.getAsLong()) {
            return cached.tools();
        }
        Future<List<Tool>> tools = list(bot, content, server);
        listings.put(key, new Listing(tools, Long.MAX_VALUE));
        tools.onFailure(e -> {
            LOG.warn("mcp server's tools not listed [tenant: {}, bot: {}, server: {}]: {}", bot.tenantId(), bot.botId(), server.name(),
                    e.getMessage());
            listings.computeIfPresent(key, (k, listing) -> listing.tools() == tools
                    ? new Listing(tools, clockMs.getAsLong() + RETRY_FAILED_MS) : listing);
        });
        return cached == null ? tools : cached.tools();
    }

    private Future<List<Tool>> list(BotRef bot, String content, McpServers.Server server) {
        ToolCall call = new ToolCall(UUID.randomUUID().toString(), bot.tenantId(), 0, McpServers.PREFIX + server.name(), "{}",
                Map.of(WorkspacePaths.MCP, content), Map.of(), timeoutMs(server), server.network(), config.queueTimeoutMs())
                .forBot(bot.botId());
        // Listing is a read: asking another node after one died with it is safe.
        return client.execute(call, true).map(result -> {
            if (!result.ok()) {
                throw new IllegalStateException(result.output());
            }
            return tools(content, server, new JsonObject(result.output()));
        });
    }

    private List<Tool> tools(String content, McpServers.Server server, JsonObject listed) {
        Map<String, Tool> tools = new LinkedHashMap<>();
        for (Object item : listed.getJsonArray("tools", new io.vertx.core.json.JsonArray())) {
            if (!(item instanceof JsonObject declared) || !(declared.getValue("name") instanceof String name) || name.isEmpty()) {
                continue;
            }
            String wire = McpServers.wireName(server.name(), name);
            if (tools.containsKey(wire)) {
                LOG.warn("mcp tool left out: its name is another's once made a function name [server: {}, tool: {}, name: {}]",
                        server.name(), name, wire);
                continue;
            }
            tools.put(wire, tool(content, server, name, wire, declared));
        }
        return List.copyOf(tools.values());
    }

    private Tool tool(String content, McpServers.Server server, String name, String wire, JsonObject declared) {
        JsonObject schema = declared.getValue("inputSchema") instanceof JsonObject given ? given.copy() : new JsonObject();
        schema.remove("$schema");
        schema.put("type", "object");
        String description = declared.getValue("description") instanceof String text && !text.isBlank() ? text : name;
        ToolDefinition definition = new ToolDefinition(wire, description, schema);
        boolean network = server.network();
        // The server's own hints are all there is to go on; without them a call may change things.
        JsonObject hints = declared.getValue("annotations") instanceof JsonObject given ? given : new JsonObject();
        boolean readOnly = Boolean.TRUE.equals(hints.getValue("readOnlyHint"));
        // A call whose node died may have run there: it is asked of another node only when running it twice is harmless.
        boolean retryable = readOnly || Boolean.TRUE.equals(hints.getValue("idempotentHint"));
        FunctionTool.Body body = (ctx, args) -> {
            ToolCall call = new ToolCall(UUID.randomUUID().toString(), ctx.tenantId(), ctx.chatId(),
                    McpServers.PREFIX + server.name() + McpServers.SEPARATOR + name, args.encode(), Map.of(WorkspacePaths.MCP, content),
                    Map.of(), timeoutMs(server), network, config.queueTimeoutMs()).forBot(ctx.botId())
                    .withTraceParent(ctx.traceParent());
            return client.execute(call, retryable).map(McpTools::text).recover(Results::unavailable);
        };
        return new Named(readOnly ? FunctionTool.reading(definition, body) : FunctionTool.changing(definition, body), name);
    }

    private static String text(ToolResult result) {
        return switch (result.status()) {
            case ToolResult.OK -> result.truncated() ? result.output() + "\n[output cut at the sandbox's limit]" : result.output();
            case ToolResult.DENIED -> throw ToolException.denied(result.output());
            case ToolResult.INVALID_ARGS -> throw ToolException.invalid(result.output());
            default -> throw ToolException.error(result.output());
        };
    }

    /** The server's own limit, else {@code sandbox.skillTimeoutMs}. */
    private long timeoutMs(McpServers.Server server) {
        return server.timeoutMs() > 0 ? server.timeoutMs() : config.skillTimeoutMs();
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
