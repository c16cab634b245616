package io.clawfleet.worker.tools;

import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.PgText;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Runs one tool call the way every call must run: arguments checked against the schema, the
 * policy engine asked, approval sought when the bot is supervised, the tool run with a timeout,
 * its output capped and scrubbed of secrets, and an audit row written with the arguments redacted.
 * Whatever happens, the model gets a text it can act on. A tool that ran has its wall-clock time and whether it ran on a
 * sandbox node in its audit row's metadata ({@code durationMs}, {@code sandbox}): the tool time of usage and of the
 * tenant's {@code toolSecondsPerDay}, which is checked (its {@link Budget}) before a tool runs.
 */
public final class ToolRunner {

    private static final Logger LOG = LoggerFactory.getLogger(ToolRunner.class);
    /** Longest text of an argument or a reason kept in an audit row. */
    private static final int AUDIT_TEXT_CHARS = 2_000;
    /** The audit outcome of a call that waits for the chat's approval. */
    public static final String APPROVAL_REQUESTED = "approval_requested";

    /** How a call ended for the loop. */
    public sealed interface Outcome {
        /** The text to give the model as the tool's result (a success or a clear refusal). */
        record Done(String content, boolean success) implements Outcome {
        }

        /** The bot is supervised: the chat must approve this call first. */
        record NeedsApproval(Tool tool, JsonObject arguments) implements Outcome {
        }
    }

    /** The tools a tenant may still run today ({@code toolSecondsPerDay}); ToolTimeQuota in service. */
    public interface Budget {
        /** No limit: every tool may run. */
        Budget NONE = new Budget() {
            @Override
            public Future<String> refusal(String tenantId) {
                return Future.succeededFuture();
            }

            @Override
            public void spent(String tenantId, long millis) {
            }
        };

        /** Why the tenant's tools may not run now (for the model), or null (succeeded) when they may. Never fails. */
        Future<String> refusal(String tenantId);

        /** A tool of the tenant ran for {@code millis} (it is audited too: this only keeps a cached sum current). */
        void spent(String tenantId, long millis);
    }

    /** Tools that run on sandbox nodes by name; code skills ({@code <skill>__<tool>}) and MCP tools besides. */
    private static final Set<String> SANDBOX_TOOLS = Set.of("shell_exec", "web_fetch", "web_search");

    private final ToolPolicy policy;
    private final AuditStore audit;
    private final SecretScrubber scrubber;
    private final ArgumentRedactor redactor;
    private final int maxOutputChars;
    private final long timeoutMs;
    private final Metrics metrics;
    private final Budget budget;

    public ToolRunner(ToolPolicy policy, AuditStore audit, SecretScrubber scrubber,
                      int maxOutputChars, long timeoutMs, Metrics metrics) {
        this(policy, audit, scrubber, maxOutputChars, timeoutMs, metrics, Budget.NONE);
    }

    public ToolRunner(ToolPolicy policy, AuditStore audit, SecretScrubber scrubber,
                      int maxOutputChars, long timeoutMs, Metrics metrics, Budget budget) {
        this.policy = Objects.requireNonNull(policy);
        this.audit = Objects.requireNonNull(audit);
        this.scrubber = Objects.requireNonNull(scrubber);
        this.redactor = new ArgumentRedactor(scrubber);
        this.maxOutputChars = maxOutputChars;
        this.timeoutMs = timeoutMs;
        this.metrics = Objects.requireNonNull(metrics);
        this.budget = Objects.requireNonNull(budget);
    }

    /** The definitions of the tools a chat is offered (see {@link ToolPolicy#offers}). */
    public List<ToolDefinition> offered(ToolRegistry registry, boolean admin) {
        return registry.tools().stream().filter(tool -> policy.offers(tool, admin)).map(Tool::definition).toList();
    }

    /**
     * @param registry      the tools this turn offers
     * @param approved      calls the chat approved (or /always allowed) are not asked about again
     * @param alwaysAllowed tools this chat answered /always for
     */
    public Future<Outcome> run(ToolRegistry registry, ToolCallRequest call, ToolCallContext ctx, Autonomy autonomy, boolean approved,
                               Set<String> alwaysAllowed) {
        return run(registry, call, ctx, autonomy, approved, alwaysAllowed, Future::succeededFuture);
    }

    /**
     * As {@link #run(ToolRegistry, ToolCallRequest, ToolCallContext, Autonomy, boolean, Set)}, calling
     * {@code beforeEffect} right before a tool that changes things ({@link Tool#mutating}) runs, after every check
     * and approval: the call runs once it completes, and not at all if it fails.
     */
    public Future<Outcome> run(ToolRegistry registry, ToolCallRequest call, ToolCallContext ctx, Autonomy autonomy, boolean approved,
                               Set<String> alwaysAllowed, java.util.function.Supplier<Future<Void>> beforeEffect) {
        Optional<Tool> found = registry.get(call.name());
        Optional<String> refusedByName = found.isEmpty() ? policy.refusal(call.name(), ctx) : Optional.empty();
        if (refusedByName.isPresent()) {
            // A normal chat's turn does not even list MCP tools; asking for one is refused all the same.
            return finish(call, ctx, null, "denied", refusedByName.get(), arguments(call));
        }
        if (found.isEmpty()) {
            String reason = "there is no tool named '" + call.name() + "'; available: " + String.join(", ", registry.names());
            return finish(call, ctx, null, "invalid_args", reason, new JsonObject().put("raw", truncate(call.arguments(), 500)));
        }
        Tool tool = found.get();
        JsonObject args;
        try {
            args = ToolArguments.check(call.arguments(), tool.definition().parameters());
        } catch (ToolException e) {
            return finish(call, ctx, tool, "invalid_args", e.getMessage(), new JsonObject().put("raw", truncate(call.arguments(), 500)));
        }
        Optional<String> refusal = policy.refusal(tool, args, ctx, autonomy);
        if (refusal.isPresent()) {
            return finish(call, ctx, tool, "denied", refusal.get(), args);
        }
        // Over its tool time the call is refused before anyone is asked to approve it; the turn goes on without it.
        return budget.refusal(ctx.tenantId()).compose(over -> over != null
                ? finish(call, ctx, tool, "denied", over, args)
                : approveOrRun(call, ctx, tool, args, autonomy, approved, alwaysAllowed, beforeEffect));
    }

    private Future<Outcome> approveOrRun(ToolCallRequest call, ToolCallContext ctx, Tool tool, JsonObject args, Autonomy autonomy,
                                         boolean approved, Set<String> alwaysAllowed,
                                         java.util.function.Supplier<Future<Void>> beforeEffect) {
        if (autonomy == Autonomy.SUPERVISED && !approved && !alwaysAllowed.contains(tool.name())
                && policy.needsApproval(tool, args, ctx)) {
            return record(ctx, tool.name(), true, APPROVAL_REQUESTED, null, args, null)
                    .map(v -> new Outcome.NeedsApproval(tool, args));
        }
        return (tool.mutating() ? beforeEffect.get() : Future.<Void>succeededFuture())
                .compose(marked -> timedExecute(call, ctx, tool, args));
    }

    private Future<Outcome> timedExecute(ToolCallRequest call, ToolCallContext ctx, Tool tool, JsonObject args) {
        long started = System.nanoTime();
        return execute(tool, ctx, args)
                .timeout(timeoutMs, TimeUnit.MILLISECONDS)
                .transform(result -> {
                    long nanos = System.nanoTime() - started;
                    long millis = TimeUnit.NANOSECONDS.toMillis(nanos);
                    metrics.recordMillis("clawfleet.tool.duration", nanos / 1e6, "tool", metricTag(tool.name(), true));
                    if (result.succeeded()) {
                        budget.spent(ctx.tenantId(), millis);
                        return finishOk(call, ctx, tool, result.result(), args, millis);
                    }
                    Throwable failure = result.cause();
                    if (failure instanceof ToolException e) {
                        String outcome = e.outcome().name().toLowerCase(Locale.ROOT);
                        if (outcome.equals("error")) {
                            budget.spent(ctx.tenantId(), millis);
                        }
                        return finish(call, ctx, tool, outcome, e.getMessage(), args, millis);
                    }
                    String reason = failure instanceof java.util.concurrent.TimeoutException
                            ? tool.name() + " took longer than " + timeoutMs + " ms and was abandoned"
                            : tool.name() + " failed: " + failure.getMessage();
                    LOG.warn("tool failed [tenant: {}, chat: {}, tool: {}]: {}", ctx.tenantId(), ctx.chatKey(), tool.name(),
                            scrubber.scrub(String.valueOf(failure.getMessage())));
                    budget.spent(ctx.tenantId(), millis);
                    return finish(call, ctx, tool, "error", reason, args, millis);
                });
    }

    /**
     * A waiting call was refused (by an admin, or withdrawn by its chat's /no): it is not run, the
     * refusal is audited with {@code reason} and the model told.
     */
    public Future<Outcome.Done> declined(ToolCallRequest call, ToolCallContext ctx, String reason) {
        return record(ctx, call.name(), true, "denied", reason, arguments(call), null)
                .map(v -> new Outcome.Done("The call was not approved (" + reason + ").", false));
    }

    /**
     * A call that cannot run as it was asked and is not run: it is audited with {@code outcome} and
     * the model gets {@code reason} as an error.
     */
    public Future<Outcome> notRun(ToolCallRequest call, ToolCallContext ctx, String outcome, String reason) {
        return finish(call, ctx, null, outcome, reason, arguments(call));
    }

    /** The call's arguments as an object for the audit trail; text that is not one is kept as {@code raw}. */
    private static JsonObject arguments(ToolCallRequest call) {
        try {
            return new JsonObject(call.arguments());
        } catch (RuntimeException e) {
            return new JsonObject().put("raw", truncate(call.arguments(), 500));
        }
    }

    /** A tool that throws (a bad argument found late, a bug) fails its call like one that returns a failed future. */
    private static Future<String> execute(Tool tool, ToolCallContext ctx, JsonObject args) {
        try {
            return tool.execute(ctx, args);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    private Future<Outcome> finishOk(ToolCallRequest call, ToolCallContext ctx, Tool tool, String output, JsonObject args,
                                     long millis) {
        String content = cap(scrubber.scrub(output == null ? "" : output));
        return record(ctx, tool.name(), true, "success", null, args, millis)
                .map(v -> (Outcome) new Outcome.Done(content, true));
    }

    private Future<Outcome> finish(ToolCallRequest call, ToolCallContext ctx, Tool tool, String outcome, String reason,
                                   JsonObject args) {
        return finish(call, ctx, tool, outcome, reason, args, null);
    }

    /** @param millis how long the tool ran; null when it did not run */
    private Future<Outcome> finish(ToolCallRequest call, ToolCallContext ctx, Tool tool, String outcome, String reason,
                                   JsonObject args, Long millis) {
        String name = tool == null ? call.name() : tool.name();
        // Errors are capped like outputs: a reason may quote what the model or a failing tool produced.
        String content = cap("error (" + outcome + "): " + scrubber.scrub(reason));
        return record(ctx, name, tool != null, outcome, reason, args, millis).map(v -> (Outcome) new Outcome.Done(content, false));
    }

    /**
     * @param known  whether the turn has a tool of that name (else the model made the name up)
     * @param millis how long the tool ran (with where it ran, the metadata usage and the tool-time limit read); null
     *               when it did not run
     */
    private Future<Void> record(ToolCallContext ctx, String tool, boolean known, String outcome, String reason, JsonObject args,
                                Long millis) {
        metrics.increment("clawfleet.tool.calls", "tool", metricTag(tool, known), "outcome", outcome);
        JsonObject metadata = new JsonObject().put("inboxId", ctx.inboxId()).put("call", ctx.callIndex());
        if (millis != null) {
            metadata.put("durationMs", millis).put("sandbox", sandboxed(tool));
        }
        return audit.record(ctx.tenantId(), "tool_call", tool, ctx.chatId(), ctx.channel(), ctx.chatKey(), ctx.role(),
                        outcome, reason == null ? null : truncate(scrubber.scrub(reason), AUDIT_TEXT_CHARS), redact(args),
                        metadata)
                // The audit row must not cost the user the turn: a failed write is logged, the call stands.
                .recover(e -> {
                    LOG.error("audit row not written [tenant: {}, chat: {}, tool: {}]: {}", ctx.tenantId(), ctx.chatKey(),
                            tool, e.getMessage());
                    return Future.succeededFuture();
                });
    }

    /** Arguments for the audit trail: sensitive names blanked, every text scrubbed and cut (seed 000 §12.9). */
    private JsonObject redact(JsonObject args) {
        return redactor.redact(args, AUDIT_TEXT_CHARS);
    }

    private String cap(String output) {
        String text = PgText.clean(output);
        if (text.length() <= maxOutputChars) {
            return text;
        }
        return text.substring(0, maxOutputChars) + "\n[output truncated: " + (text.length() - maxOutputChars)
                + " more characters]";
    }

    private static String truncate(String text, int max) {
        return text == null || text.length() <= max ? text : text.substring(0, max) + "...";
    }

    /**
     * Whether a tool runs on a sandbox node: {@code shell_exec}, {@code web_fetch}, {@code web_search}, code skills
     * ({@code <skill>__<tool>}) and MCP tools ({@code mcp__<server>__<tool>}); the built-in workspace, memory, message,
     * task, skill and chat tools run in the worker (no built-in name has {@code __}).
     */
    public static boolean sandboxed(String name) {
        return SANDBOX_TOOLS.contains(name) || name.contains("__");
    }

    /**
     * The {@code tool} tag of the tool metrics: a built-in tool's name; {@code mcp} and {@code skill} for the
     * tools tenants name themselves (MCP servers', code skills'), and {@code unknown} for a name the model made
     * up, so that neither tenants nor a model can grow the number of series without bound. The audit row keeps
     * the full name.
     */
    public static String metricTag(String name, boolean known) {
        if (name.startsWith(McpServers.PREFIX)) {
            return "mcp";
        }
        if (name.contains("__")) {
            return "skill";
        }
        return known ? name : "unknown";
    }
}
