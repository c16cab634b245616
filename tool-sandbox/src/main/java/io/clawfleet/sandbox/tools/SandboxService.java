package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.tracing.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.exec.SetupFailure;
import io.clawfleet.sandbox.mcp.WarmSessions;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.sandbox.web.WebPolicy;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.workspace.CodeSkill;
import io.clawfleet.shared.workspace.McpServers;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;

/**
 * Runs the {@link ToolCall}s a sandbox node receives: {@code shell_exec}, code skills and MCP servers in child
 * processes (on a bounded pool of blocking threads; stdio MCP servers kept warm between calls, {@link WarmSessions}),
 * {@code web_fetch} and {@code web_search} in the JVM, all behind one bulkhead, which counts a call while it runs
 * (an idle warm server holds no slot); every result is scrubbed of the node's own secrets before it leaves.
 * What the run did, however it ended (non-zero exit, timeout, policy refusal), is a result; what the node
 * could not do (full, unable to isolate, broken disk or sandbox) is a {@link SandboxFailure}, so workers
 * go elsewhere and their circuit breakers see it.
 */
public final class SandboxService {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxService.class);

    private final ClawfleetConfig config;
    private final ProcessSandbox processes;
    private final WebFetcher fetcher;
    private final BraveSearch search;
    private final WorkerExecutor blocking;
    private final Metrics metrics;
    private final SecretScrubber scrubber;
    private final ShellTool shell;
    private final SkillTool skills;
    private final McpTool mcp;
    private final WarmSessions mcpSessions;
    private final Bulkhead bulkhead;
    private final Tracing tracing;

    /**
     * @param vertx       timers of the queue: call it on the context that will call {@link #execute}
     * @param environment the node's own environment (the source of allowed variables and of the secrets to redact)
     * @param blocking    a pool of at least {@code sandbox.maxConcurrentWorkers} threads for process runs
     */
    public SandboxService(Vertx vertx, ClawfleetConfig config, ProcessSandbox processes, WebFetcher fetcher, BraveSearch search,
                          WorkerExecutor blocking, Map<String, String> environment, Metrics metrics) {
        this(vertx, config, processes, fetcher, search, blocking, environment, metrics, Tracing.off());
    }

    /** @param tracing spans of runs, joined to the trace of the worker's call when it sends one */
    public SandboxService(Vertx vertx, ClawfleetConfig config, ProcessSandbox processes, WebFetcher fetcher, BraveSearch search,
                          WorkerExecutor blocking, Map<String, String> environment, Metrics metrics, Tracing tracing) {
        this.tracing = Objects.requireNonNull(tracing);
        this.config = Objects.requireNonNull(config);
        this.processes = Objects.requireNonNull(processes);
        this.fetcher = Objects.requireNonNull(fetcher);
        this.search = Objects.requireNonNull(search);
        this.blocking = Objects.requireNonNull(blocking);
        this.metrics = Objects.requireNonNull(metrics);
        this.scrubber = new SecretScrubber(NodeSecrets.of(environment, config));
        this.shell = new ShellTool(config, processes, environment, scrubber);
        this.skills = new SkillTool(config.sandbox(), processes, environment, scrubber);
        this.mcpSessions = new WarmSessions(processes, config.sandbox(), metrics);
        this.mcp = new McpTool(config.sandbox(), processes, mcpSessions, environment, scrubber);
        this.bulkhead = new Bulkhead(config.sandbox().maxConcurrentWorkers(), config.sandbox().maxQueued(), new Bulkhead.Timers() {
            @Override
            public long set(long delayMs, Runnable action) {
                return vertx.setTimer(delayMs, id -> action.run());
            }

            @Override
            public void cancel(long id) {
                vertx.cancelTimer(id);
            }
        });
    }

    /** Fails only with a {@link SandboxFailure}; every outcome of the run itself is a result with a status. */
    public Future<ToolResult> execute(ToolCall call) {
        long started = System.nanoTime();
        // The run joins the trace of the worker's tool call (a no-op span when not traced); the tool is named by its
        // kind, as in the metrics, and neither the arguments nor the output go in.
        Span span = tracing.tracer().spanBuilder("clawfleet sandbox " + metricName(call.tool())).setSpanKind(SpanKind.SERVER)
                .setParent(tracing.parent(call.traceParent()))
                .setAttribute(Tracing.TENANT, call.tenantId()).setAttribute(Tracing.BOT, call.botId())
                .setAttribute("gen_ai.tool.name", call.tool()).setAttribute("clawfleet.network", call.network())
                .startSpan();
        return bulkhead.submit(call.queueTimeoutMs(), () -> dispatch(call))
                .andThen(outcome -> {
                    if (outcome.succeeded()) {
                        span.setAttribute("clawfleet.sandbox.status", outcome.result().status());
                        if (outcome.result().exitCode() >= 0) {
                            span.setAttribute("process.exit.code", (long) outcome.result().exitCode());
                        }
                    } else {
                        span.setStatus(StatusCode.ERROR, outcome.cause() instanceof SandboxFailure f ? "failed_" + f.code() : "failed");
                    }
                    span.end();
                })
                .recover(e -> Future.failedFuture(e instanceof SandboxFailure failure ? failure : broken(call, true, e)))
                .onSuccess(result -> {
                    double ms = (System.nanoTime() - started) / 1e6;
                    metrics.increment("clawfleet.sandbox.runs", "tool", metricName(call.tool()), "status", result.status());
                    metrics.recordMillis("clawfleet.sandbox.run.duration", ms, "tool", metricName(call.tool()));
                    Tracing.ids(LOG.atInfo(), span).log("sandbox run [tenant: {}, chat: {}, tool: {}, status: {}, exit: {}, ms: {}]", call.tenantId(),
                            call.chatId(), call.tool(), result.status(), result.exitCode(), Math.round(ms));
                })
                .onFailure(e -> metrics.increment("clawfleet.sandbox.runs", "tool", metricName(call.tool()), "status",
                        "failed_" + ((SandboxFailure) e).code()));
    }

    public int running() {
        return bulkhead.running();
    }

    public int queued() {
        return bulkhead.queued();
    }

    /** Warm stdio MCP sessions kept on this node now. */
    public int mcpSessions() {
        return mcpSessions.size();
    }

    /** The node's warm stdio MCP sessions (tests look into them). */
    WarmSessions warmSessions() {
        return mcpSessions;
    }

    /** Stops every warm MCP session and kills every run in progress (the node is stopping; workers retry where that is safe). */
    public void stop() {
        mcpSessions.stopAll();
        processes.stopAll();
    }

    private Future<ToolResult> dispatch(ToolCall call) {
        JsonObject arguments;
        try {
            arguments = new JsonObject(call.arguments());
        } catch (DecodeException | ClassCastException e) {
            return Future.succeededFuture(ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, "arguments must be a JSON object"));
        }
        return switch (call.tool()) {
            case "shell_exec" -> process(call, () -> shell.run(call, arguments));
            case "web_fetch" -> fetch(call, arguments.getValue("url"));
            case "web_search" -> search(call, arguments.getValue("query"));
            default -> call.tool().startsWith(McpServers.PREFIX) ? process(call, () -> mcp.run(call))
                    : call.tool().contains(CodeSkill.SEPARATOR) ? process(call, () -> skills.run(call))
                    : Future.succeededFuture(ToolResult.of(call.callId(), ToolResult.INVALID_ARGS,
                    "this sandbox node runs shell_exec, web_fetch, web_search, code skills and MCP servers, not " + call.tool()));
        };
    }

    private Future<ToolResult> process(ToolCall call, Callable<ToolResult> run) {
        if (processes.isolation() == Isolation.NONE) {
            return Future.failedFuture(SandboxFailure.unsupported(call.tool()
                    + " cannot run on this sandbox node: it cannot isolate programs (see its /readyz)"));
        }
        return blocking.executeBlocking(() -> {
            try {
                return run.call();
            } catch (IllegalArgumentException e) {
                return ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, e.getMessage());
            } catch (SetupFailure e) {
                throw broken(call, false, e);
            }
        }, false);
    }

    private Future<ToolResult> fetch(ToolCall call, Object url) {
        if (!(url instanceof String text)) {
            return Future.succeededFuture(ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, "missing required argument 'url' (a string)"));
        }
        return fetcher.fetch(text).map(page -> {
            StringBuilder out = new StringBuilder("URL: ").append(page.url()).append("\nStatus: ").append(page.status());
            if (!page.contentType().isEmpty()) {
                out.append("\nContent-Type: ").append(page.contentType());
            }
            if (page.title() != null && !page.title().isEmpty()) {
                out.append("\nTitle: ").append(page.title());
            }
            out.append("\n\n").append(page.text());
            if (page.truncated()) {
                out.append("\n[cut: the page is longer than ").append(config.sandbox().web().maxResponseBytes()).append(" bytes]");
            }
            String status = page.status() < 400 ? ToolResult.OK : ToolResult.ERROR;
            return new ToolResult(call.callId(), status, -1, scrubber.scrub(out.toString()), page.truncated(), Map.of());
        }).recover(e -> Future.succeededFuture(e instanceof WebPolicy.WebRefusal refusal
                ? ToolResult.of(call.callId(), ToolResult.DENIED, refusal.getMessage())
                : ToolResult.of(call.callId(), ToolResult.ERROR, "fetching " + text + " failed: " + scrubber.scrub(String.valueOf(e.getMessage())))));
    }

    private Future<ToolResult> search(ToolCall call, Object query) {
        if (!(query instanceof String text)) {
            return Future.succeededFuture(ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, "missing required argument 'query' (a string)"));
        }
        return search.search(text).map(results -> {
            StringBuilder out = new StringBuilder();
            if (results.isEmpty()) {
                out.append("No results for: ").append(text);
            }
            for (int i = 0; i < results.size(); i++) {
                BraveSearch.Result r = results.get(i);
                out.append(i + 1).append(". ").append(r.title()).append("\n   ").append(r.url());
                if (!r.description().isEmpty()) {
                    out.append("\n   ").append(r.description());
                }
                out.append('\n');
            }
            return ToolResult.of(call.callId(), ToolResult.OK, scrubber.scrub(out.toString().strip()));
        }).recover(e -> Future.succeededFuture(ToolResult.of(call.callId(),
                e instanceof IllegalArgumentException ? ToolResult.INVALID_ARGS : ToolResult.ERROR,
                e instanceof BraveSearch.SearchFailure || e instanceof IllegalArgumentException ? e.getMessage()
                        : "the search failed: " + scrubber.scrub(String.valueOf(e.getMessage())))));
    }

    private SandboxFailure broken(ToolCall call, boolean started, Throwable e) {
        LOG.error("sandbox node failed a run [tenant: {}, tool: {}, started: {}]", call.tenantId(), call.tool(), started, e);
        return SandboxFailure.broken(started, call.tool() + (started ? " failed on this sandbox node: " : " could not start on this sandbox node: ")
                + scrubber.scrub(String.valueOf(e.getMessage())), e);
    }

    /** Skill and MCP tools share a metric name each, so tenants' tool names do not become metric series. */
    private static String metricName(String tool) {
        return List.of("shell_exec", "web_fetch", "web_search").contains(tool) ? tool
                : tool.startsWith(McpServers.PREFIX) ? "mcp" : "code_skill";
    }
}
