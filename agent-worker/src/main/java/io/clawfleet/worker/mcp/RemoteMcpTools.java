package io.clawfleet.worker.mcp;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.McpListChanged;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.store.BotMcpServerStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.worker.llm.CircuitBreaker;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.RuledTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The tools a bot's remote MCP servers give its turns (issue 16): servers reached over Streamable HTTP from this
 * worker, named in the bot's {@code .mcp.json} ({@code "url"}) or given with {@code PUT /api/v1/bots/{botId}/mcp-servers}
 * (with sealed headers; a name in both is the API's). Each server's tools appear as {@code mcp__<server>__<tool>}; a
 * server with resources adds {@code mcp__<server>__list_resources} and {@code mcp__<server>__read_resource}, one with
 * prompts {@code mcp__<server>__get_prompt} (its prompts are listed by {@code skills_list}, like skills).
 *
 * <p>One session per (tenant, bot, server, URL and headers) on this worker, never shared between bots; every
 * connection goes to an address the SSRF guard checked. A server's lists are kept until it says they changed
 * ({@code notifications/*}/list_changed}, which this worker publishes so every worker lists the server again), the
 * bot's servers change, or {@link #LIST_TTL_MS} passes. A per-server circuit breaker keeps a server that is down from
 * costing every call its timeout. Sessions idle for {@link #IDLE_MS} are closed.
 */
public final class RemoteMcpTools {

    private static final Logger LOG = LoggerFactory.getLogger(RemoteMcpTools.class);
    /** How long a server's lists stand without a change notice. */
    static final long LIST_TTL_MS = 10 * 60_000;
    /** How long a failed list stands before a turn asks again. */
    static final long RETRY_FAILED_MS = 30_000;
    /** A session unused this long is closed (its notification stream too). */
    static final long IDLE_MS = 5 * 60_000;
    /** How long a bot's API servers are cached without a change notice. */
    static final long CONFIG_TTL_MS = 30_000;
    /** The largest answer of a remote server accepted (a tool's result, a resource). */
    static final int MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
    /** Sessions this worker keeps at most; the least recently used is closed. */
    static final int MAX_SESSIONS = 4_096;
    static final int MAX_PAGES = 20;

    /** What a server offers, as listed. */
    record Listing(List<JsonObject> tools, boolean resources, List<JsonObject> prompts) {
    }

    /** One server as this worker talks to it. */
    private final class Remote {
        final BotRef bot;
        final McpServers.Remote server;
        final RemoteMcpSession session;
        final CircuitBreaker breaker;
        Future<Listing> listing;
        long listingExpiresAt;
        long lastUsed;

        Remote(BotRef bot, McpServers.Remote server) {
            this.bot = bot;
            this.server = server;
            this.breaker = new CircuitBreaker(circuitFailures, circuitCooldownMs, clockMs);
            this.session = new RemoteMcpSession(vertx, client, egress, URI.create(server.url()), server.headers(),
                    timeoutMs(server), MAX_RESPONSE_BYTES, (method, params) -> {
                if (method.endsWith("/list_changed")) {
                    vertx.eventBus().publish(Addresses.MCP_LIST_CHANGED, new McpListChanged(bot, server.name()));
                }
            });
        }
    }

    private record Config(Future<Map<String, McpServers.Remote>> servers, long expiresAt) {
    }

    /** Where a bot's servers given with the API come from ({@link BotMcpServerStore}, headers opened). */
    @FunctionalInterface
    public interface ApiServers {
        Future<Map<String, McpServers.Remote>> servers(BotRef bot);

        static ApiServers of(BotMcpServerStore store) {
            return bot -> store.get(bot).map(stored -> stored.map(s -> s.servers().servers()).orElse(Map.of()));
        }
    }

    private final Vertx vertx;
    private final HttpClient client;
    private final EgressGuard egress;
    private final ApiServers store;
    private final long toolTimeoutMs;
    private final int circuitFailures;
    private final long circuitCooldownMs;
    private final LongSupplier clockMs;
    private final io.clawfleet.shared.metrics.Metrics metrics;
    private final Map<String, Remote> remotes = new LinkedHashMap<>(64, 0.75f, true);
    private final Map<BotRef, Config> configs = new LinkedHashMap<>(64, 0.75f, true);

    /**
     * @param toolTimeoutMs the longest a call may take ({@code agent.toolTimeoutMs}); a server's own limit may be shorter
     */
    public RemoteMcpTools(Vertx vertx, EgressGuard egress, ApiServers store, long toolTimeoutMs, int circuitFailures,
                          long circuitCooldownMs, LongSupplier clockMs, io.clawfleet.shared.metrics.Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.metrics = Objects.requireNonNull(metrics);
        this.egress = Objects.requireNonNull(egress);
        this.store = Objects.requireNonNull(store);
        this.toolTimeoutMs = toolTimeoutMs;
        this.circuitFailures = circuitFailures;
        this.circuitCooldownMs = circuitCooldownMs;
        this.clockMs = Objects.requireNonNull(clockMs);
        this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                        .setVerifyHost(true).setForceSni(true).setConnectTimeout((int) Math.min(toolTimeoutMs, 10_000))
                        .setIdleTimeout(60).setIdleTimeoutUnit(TimeUnit.SECONDS),
                new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(10_000));
    }

    /** Listens for change notices and closes idle sessions; call on the worker's event loop. */
    public Future<Void> start() {
        vertx.setPeriodic(60_000, id -> closeIdle());
        return Future.all(
                Consumers.register(vertx, Addresses.MCP_LIST_CHANGED, (Message<McpListChanged> m) -> relist(m.body())),
                Consumers.register(vertx, Addresses.TENANT_CHANGED, (Message<TenantChanged> m) -> forget(m.body().tenantId())))
                .mapEmpty();
    }

    /**
     * The bot's remote servers: the API's, then the file's whose names the API does not use; never fails (servers
     * whose headers cannot be opened are left out, and the log says why).
     *
     * @param fromFile the remote entries of the bot's {@code .mcp.json}
     */
    public Future<List<McpServers.Remote>> servers(BotRef bot, List<McpServers.Remote> fromFile) {
        return apiServers(bot).map(api -> {
            Map<String, McpServers.Remote> all = new LinkedHashMap<>(api);
            for (McpServers.Remote server : fromFile) {
                if (all.putIfAbsent(server.name(), server) != null) {
                    LOG.info("mcp server in .mcp.json shadowed by the API's of the same name [tenant: {}, bot: {}, server: {}]",
                            bot.tenantId(), bot.botId(), server.name());
                }
            }
            return List.copyOf(all.values());
        });
    }

    private synchronized Future<Map<String, McpServers.Remote>> apiServers(BotRef bot) {
        Config cached = configs.get(bot);
        if (cached != null && cached.expiresAt() > clockMs.getAsLong()) {
            return cached.servers();
        }
        Future<Map<String, McpServers.Remote>> servers = store.servers(bot)
                .recover(e -> {
                    LOG.warn("remote mcp servers not read [tenant: {}, bot: {}]: {}", bot.tenantId(), bot.botId(), e.getMessage());
                    return Future.succeededFuture(Map.of());
                });
        configs.put(bot, new Config(servers, clockMs.getAsLong() + CONFIG_TTL_MS));
        if (configs.size() > MAX_SESSIONS) {
            configs.remove(configs.keySet().iterator().next());
        }
        return servers;
    }

    /** The tools of the servers some of whose tools a chat of this role may use; never fails. */
    public Future<List<Tool>> tools(BotRef bot, List<McpServers.Remote> servers, boolean admin) {
        List<Future<List<Tool>>> lists = new ArrayList<>();
        for (McpServers.Remote server : servers) {
            if (server.rules().anyFor(admin)) {
                Remote remote = remote(bot, server);
                lists.add(listing(remote).map(listing -> tools(remote, server, listing)));
            }
        }
        return Future.join(lists).transform(done -> {
            List<Tool> tools = new ArrayList<>();
            lists.stream().filter(Future::succeeded).forEach(list -> tools.addAll(list.result()));
            return Future.succeededFuture(tools);
        });
    }

    /** One line per server for {@code skills_list}: its tools and prompts, or why it has none. Never fails. */
    public Future<String> describe(BotRef bot, List<McpServers.Remote> servers) {
        List<Future<Listing>> lists = servers.stream().map(server -> listing(remote(bot, server))).toList();
        return Future.join(lists).transform(done -> {
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < lists.size(); i++) {
                McpServers.Remote server = servers.get(i);
                Future<Listing> list = lists.get(i);
                out.append("\n- ").append(server.name()).append(" (").append(hostOf(server.url())).append("): ");
                if (list.failed()) {
                    out.append("unavailable: ").append(list.cause().getMessage());
                    continue;
                }
                Listing listing = list.result();
                out.append(listing.tools().size()).append(" tools").append(listing.resources() ? ", resources" : "");
                for (JsonObject prompt : listing.prompts()) {
                    out.append("\n  - prompt ").append(prompt.getString("name")).append(": ")
                            .append(prompt.getString("description", "")).append(" (mcp__").append(server.name())
                            .append("__get_prompt)");
                }
            }
            return Future.succeededFuture(out.toString());
        });
    }

    private synchronized Remote remote(BotRef bot, McpServers.Remote server) {
        String key = bot.tenantId() + '\u0000' + bot.botId() + '\u0000' + server.name() + '\u0000' + fingerprint(server);
        Remote remote = remotes.get(key);
        if (remote == null) {
            remote = new Remote(bot, server);
            remotes.put(key, remote);
            if (remotes.size() > MAX_SESSIONS) {
                var eldest = remotes.entrySet().iterator().next();
                remotes.remove(eldest.getKey());
                eldest.getValue().session.close();
            }
        }
        remote.lastUsed = clockMs.getAsLong();
        return remote;
    }

    /** The server's lists; asked again when they changed, expired, or failed {@link #RETRY_FAILED_MS} ago. */
    private Future<Listing> listing(Remote remote) {
        synchronized (this) {
            if (remote.listing != null && remote.listingExpiresAt > clockMs.getAsLong()) {
                return remote.listing;
            }
            if (!remote.breaker.tryAcquire()) {
                return Future.failedFuture(unavailable(remote));
            }
            Future<Listing> listing = list(remote);
            remote.listing = listing;
            remote.listingExpiresAt = Long.MAX_VALUE;
            listing.onComplete(done -> {
                synchronized (this) {
                    if (remote.listing == listing) {
                        remote.listingExpiresAt = clockMs.getAsLong() + (done.succeeded() ? LIST_TTL_MS : RETRY_FAILED_MS);
                    }
                }
                if (done.succeeded()) {
                    remote.breaker.onSuccess();
                } else {
                    countFailure(remote, done.cause());
                    LOG.warn("remote mcp server not listed [tenant: {}, bot: {}, server: {}, host: {}]: {}", remote.bot.tenantId(),
                            remote.bot.botId(), remote.server.name(), hostOf(remote.server.url()), done.cause().getMessage());
                }
            });
            return listing;
        }
    }

    private Future<Listing> list(Remote remote) {
        RemoteMcpSession session = remote.session;
        return session.capabilities().compose(capabilities -> {
            Future<List<JsonObject>> tools = capabilities.containsKey("tools")
                    ? session.listAll("tools/list", "tools", MAX_PAGES) : Future.succeededFuture(List.of());
            Future<List<JsonObject>> prompts = capabilities.containsKey("prompts")
                    ? session.listAll("prompts/list", "prompts", MAX_PAGES) : Future.succeededFuture(List.of());
            boolean listens = capabilities.stream().anyMatch(c -> c.getValue() instanceof JsonObject o
                    && Boolean.TRUE.equals(o.getValue("listChanged")));
            return Future.all(tools, prompts).map(both -> {
                if (listens) {
                    session.listen();
                }
                return new Listing(tools.result(), capabilities.containsKey("resources"), prompts.result());
            });
        });
    }

    /** The tools of a listing, each with the access its server's rules give it; those switched off left out. */
    private List<Tool> tools(Remote remote, McpServers.Remote server, Listing listing) {
        Map<String, Tool> tools = new LinkedHashMap<>();
        for (JsonObject declared : listing.tools()) {
            if (!(declared.getValue("name") instanceof String name) || name.isEmpty()) {
                continue;
            }
            JsonObject schema = declared.getValue("inputSchema") instanceof JsonObject given ? given.copy() : new JsonObject();
            schema.remove("$schema");
            schema.put("type", "object");
            String description = declared.getValue("description") instanceof String text && !text.isBlank() ? text : name;
            boolean readOnly = declared.getValue("annotations") instanceof JsonObject hints
                    && Boolean.TRUE.equals(hints.getValue("readOnlyHint"));
            add(tools, server, name, new ToolDefinition(McpServers.wireName(server.name(), name), description, schema), readOnly,
                    (ctx, args) -> call(remote, "tools/call", new JsonObject().put("name", name).put("arguments", args))
                            .map(RemoteMcpTools::toolText));
        }
        if (listing.resources()) {
            add(tools, server, "list_resources", new ToolDefinition(McpServers.wireName(server.name(), "list_resources"),
                            "List the resources of the MCP server " + server.name() + " (uri, name, type).",
                            new JsonObject().put("type", "object").put("properties", new JsonObject())), true,
                    (ctx, args) -> call(remote, "resources/list", new JsonObject())
                            .map(page -> page.getJsonArray("resources", new JsonArray()).stream()
                                    .filter(JsonObject.class::isInstance).map(JsonObject.class::cast).toList())
                            .map(list -> new JsonArray(list.stream().map(r -> (Object) new JsonObject().put("uri", r.getValue("uri"))
                                    .put("name", r.getValue("name")).put("mimeType", r.getValue("mimeType"))
                                    .put("description", r.getValue("description"))).toList()).encode()));
            add(tools, server, "read_resource", new ToolDefinition(McpServers.wireName(server.name(), "read_resource"),
                            "Read one resource of the MCP server " + server.name() + " by its uri.",
                            new JsonObject().put("type", "object").put("properties", new JsonObject()
                                    .put("uri", new JsonObject().put("type", "string"))).put("required", new JsonArray().add("uri"))),
                    true, (ctx, args) -> call(remote, "resources/read", new JsonObject().put("uri", args.getString("uri")))
                            .map(RemoteMcpTools::resourceText));
        }
        if (!listing.prompts().isEmpty()) {
            List<String> names = listing.prompts().stream().map(p -> p.getString("name")).filter(Objects::nonNull).toList();
            add(tools, server, "get_prompt", new ToolDefinition(McpServers.wireName(server.name(), "get_prompt"),
                            "Get one of the MCP server " + server.name() + "'s prompts (skills), filled with its arguments: "
                                    + String.join(", ", names) + ".",
                            new JsonObject().put("type", "object").put("properties", new JsonObject()
                                            .put("name", new JsonObject().put("type", "string").put("enum", new JsonArray(new ArrayList<>(names))))
                                            .put("arguments", new JsonObject().put("type", "object")
                                                    .put("additionalProperties", new JsonObject().put("type", "string"))))
                                    .put("required", new JsonArray().add("name"))), true,
                    (ctx, args) -> call(remote, "prompts/get", new JsonObject().put("name", args.getString("name"))
                            .put("arguments", args.getJsonObject("arguments", new JsonObject()))).map(RemoteMcpTools::promptText));
        }
        return List.copyOf(tools.values());
    }

    private static void add(Map<String, Tool> tools, McpServers.Remote server, String name, ToolDefinition definition,
                            boolean readOnly, FunctionTool.Body body) {
        McpServers.Access access = server.rules().of(name);
        if (access == McpServers.Access.OFF || tools.containsKey(definition.name())) {
            return;
        }
        // The server's own hint is all there is to go on; without it a call may change things.
        Tool tool = readOnly ? FunctionTool.reading(definition, body) : FunctionTool.changing(definition, body);
        tools.put(definition.name(), new RuledTool(tool, access));
    }

    /** One request to the server under its circuit breaker; failures become errors the model can read. */
    private Future<JsonObject> call(Remote remote, String method, JsonObject params) {
        remote.lastUsed = clockMs.getAsLong();
        if (!remote.breaker.tryAcquire()) {
            count(remote, "circuit_open");
            return Future.failedFuture(unavailable(remote));
        }
        return remote.session.request(method, params)
                .onSuccess(r -> {
                    remote.breaker.onSuccess();
                    count(remote, "ok");
                })
                .recover(failure -> {
                    countFailure(remote, failure);
                    count(remote, failure instanceof McpCallException call ? call.kind().name().toLowerCase(java.util.Locale.ROOT)
                            : "failed");
                    if (failure instanceof McpCallException call && call.kind() == McpCallException.Kind.ERROR) {
                        return Future.failedFuture(ToolException.error("the MCP server " + remote.server.name() + " refused: "
                                + call.getMessage()));
                    }
                    return Future.failedFuture(ToolException.error("the MCP server " + remote.server.name() + " did not answer: "
                            + failure.getMessage()));
                });
    }

    /** {@code clawfleet.mcp.remote.calls} by tenant, bot, server and outcome (ok, circuit_open, or the failure's kind). */
    private void count(Remote remote, String outcome) {
        metrics.increment("clawfleet.mcp.remote.calls", "tenant", remote.bot.tenantId(), "bot", remote.bot.botId(),
                "server", remote.server.name(), "outcome", outcome);
    }

    private void countFailure(Remote remote, Throwable failure) {
        boolean serverFault = !(failure instanceof McpCallException call) || call.serverFault();
        if (serverFault) {
            if (remote.breaker.onFailure()) {
                LOG.warn("remote mcp server's circuit opened [tenant: {}, bot: {}, server: {}, host: {}]", remote.bot.tenantId(),
                        remote.bot.botId(), remote.server.name(), hostOf(remote.server.url()));
            }
        } else {
            remote.breaker.onSuccess();
        }
    }

    private ToolException unavailable(Remote remote) {
        long seconds = Math.max(1, TimeUnit.MILLISECONDS.toSeconds(remote.breaker.remainingCooldownMs()));
        return ToolException.error("the MCP server " + remote.server.name() + " is unavailable after repeated failures; "
                + "it is tried again in " + seconds + " s");
    }

    /** A tool result's content as text; {@code isError} makes it an error the model reads. */
    static String toolText(JsonObject result) {
        StringBuilder out = new StringBuilder();
        for (Object item : result.getJsonArray("content", new JsonArray())) {
            if (item instanceof JsonObject content) {
                if (!out.isEmpty()) {
                    out.append('\n');
                }
                out.append(contentText(content));
            }
        }
        if (out.isEmpty() && result.getValue("structuredContent") instanceof JsonObject structured) {
            out.append(structured.encode());
        }
        if (Boolean.TRUE.equals(result.getValue("isError"))) {
            throw ToolException.error(out.isEmpty() ? "the tool failed and said nothing" : out.toString());
        }
        return out.toString();
    }

    private static String contentText(JsonObject content) {
        return switch (content.getString("type", "")) {
            case "text" -> content.getString("text", "");
            case "image", "audio" -> "[" + content.getString("type") + " " + content.getString("mimeType", "") + ", "
                    + content.getString("data", "").length() * 3 / 4 + " bytes]";
            case "resource" -> content.getValue("resource") instanceof JsonObject resource
                    ? resource.getValue("text") instanceof String text ? text
                    : "[resource " + resource.getString("uri", "") + ", " + resource.getString("mimeType", "binary") + "]"
                    : "[resource]";
            case "resource_link" -> "[resource link " + content.getString("uri", "") + " " + content.getString("name", "") + "]";
            default -> content.encode();
        };
    }

    static String resourceText(JsonObject result) {
        StringBuilder out = new StringBuilder();
        for (Object item : result.getJsonArray("contents", new JsonArray())) {
            if (item instanceof JsonObject content) {
                if (!out.isEmpty()) {
                    out.append('\n');
                }
                out.append(content.getValue("text") instanceof String text ? text
                        : "[" + content.getString("mimeType", "binary") + " content of " + content.getString("uri", "")
                        + ", " + content.getString("blob", "").length() * 3 / 4 + " bytes]");
            }
        }
        return out.toString();
    }

    static String promptText(JsonObject result) {
        StringBuilder out = new StringBuilder();
        if (result.getValue("description") instanceof String description && !description.isBlank()) {
            out.append(description).append("\n\n");
        }
        for (Object item : result.getJsonArray("messages", new JsonArray())) {
            if (item instanceof JsonObject message && message.getValue("content") instanceof JsonObject content) {
                out.append(message.getString("role", "user")).append(": ").append(contentText(content)).append('\n');
            }
        }
        return out.toString().strip();
    }

    private void relist(McpListChanged changed) {
        synchronized (this) {
            for (Remote remote : remotes.values()) {
                if (remote.bot.equals(changed.bot()) && remote.server.name().equals(changed.server())) {
                    remote.listingExpiresAt = 0;
                }
            }
        }
        LOG.info("remote mcp server's lists changed [tenant: {}, bot: {}, server: {}]", changed.tenantId(), changed.botId(),
                changed.server());
    }

    /** A tenant's bots changed (their servers, or the tenant went): its config is read again and its sessions closed. */
    private void forget(String tenantId) {
        List<Remote> closing = new ArrayList<>();
        synchronized (this) {
            configs.keySet().removeIf(bot -> bot.tenantId().equals(tenantId));
            remotes.values().removeIf(remote -> remote.bot.tenantId().equals(tenantId) && closing.add(remote));
        }
        closing.forEach(remote -> remote.session.close());
    }

    private void closeIdle() {
        long now = clockMs.getAsLong();
        List<Remote> closing = new ArrayList<>();
        synchronized (this) {
            remotes.values().removeIf(remote -> now - remote.lastUsed > IDLE_MS && closing.add(remote));
        }
        closing.forEach(remote -> remote.session.close());
    }

    /** A server's limit, at most the worker's ({@code agent.toolTimeoutMs}). */
    private long timeoutMs(McpServers.Remote server) {
        return server.timeoutMs() > 0 ? Math.min(server.timeoutMs(), toolTimeoutMs) : toolTimeoutMs;
    }

    int sessions() {
        synchronized (this) {
            return remotes.size();
        }
    }

    private static String hostOf(String url) {
        return Optional.ofNullable(URI.create(url).getHost()).orElse("?");
    }

    /** A change of URL or headers is another session: credentials are never carried over. */
    private static String fingerprint(McpServers.Remote server) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(server.url().getBytes(StandardCharsets.UTF_8));
            server.headers().forEach((name, value) -> digest.update(("\n" + name + ":" + value).getBytes(StandardCharsets.UTF_8)));
            digest.update(Long.toString(server.timeoutMs()).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest.digest(), 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
