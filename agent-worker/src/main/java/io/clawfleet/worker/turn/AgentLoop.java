package io.clawfleet.worker.turn;

import io.clawfleet.shared.tracing.Tracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.db.DatabaseFailures;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.ApprovalStore;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.ConversationStore.ChatState;
import io.clawfleet.shared.store.ConversationStore.CommitResult;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.HistoryEntry;
import io.clawfleet.shared.store.PartitionLostException;
import io.clawfleet.shared.store.TurnCommit;
import io.clawfleet.shared.store.TurnStepStore;
import io.clawfleet.worker.llm.ChatMessage;
import io.clawfleet.worker.llm.LlmRequest;
import io.clawfleet.worker.llm.LlmResponse;
import io.clawfleet.worker.llm.StreamSink;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.ArgumentRedactor;
import io.clawfleet.worker.tools.Autonomy;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolRegistry;
import io.clawfleet.worker.tools.ToolRunner;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import io.clawfleet.shared.store.BotRef;

/**
 * One turn of the agent (seed 000 §6.2): ask the model; run the tools it asks for; give it their
 * results; again, until it answers or the iteration cap is reached; then commit everything at once.
 *
 * <p>Each completed step (a model answer asking for tools, a tool's result) is recorded in the
 * execution ledger under the partition's epoch, so a turn re-run after a crash replays them
 * instead of asking the model again or running a tool twice. A risky call of a supervised bot
 * pauses the turn until an admin outside the chat decides on it ({@link ApprovalCommands}); the
 * decision arrives as a message of kind {@code approval} and the turn carries on from where it
 * stopped, without holding up any other chat.
 */
public final class AgentLoop {

    private static final Logger LOG = LoggerFactory.getLogger(AgentLoop.class);
    private static final int COMMIT_ATTEMPTS = 6;
    private static final long COMMIT_BACKOFF_MS = 100;
    /** What a message that cannot have run before finds; and the hold of a turn that waits for no other. */
    private static final TurnStepStore.Resumed FRESH = new TurnStepStore.Resumed(0, List.of());
    private static final RestartedTurns.Hold NOT_HELD = () -> { };
    /**
     * What the model is told of a call that changes things when an earlier owner of the turn started it and stopped
     * (a crash, a kill, a lost lease) before its result was saved: it is not run again, since it may have had its effect.
     */
    static final String INTERRUPTED = "this call was started by a worker that stopped before its result was saved, so "
            + "it may or may not have taken effect; it was not run again: check its effect before asking for it again";
    /** The ledger's mark of a call that changes things, written before it runs. */
    private static final String STARTED = "tool_started";
    private static final String LOST_SECRET = "this call's arguments held a secret, which is not kept while a call waits "
            + "for approval, so it was not run; ask the user to send the request again";

    /** How the agent model is reached: the configured provider chain for a model role. */
    @FunctionalInterface
    public interface Model {
        /** Asks the bot's models (its own providers or the cluster's) for an answer, in the given role. */
        Future<LlmResponse> complete(BotRef bot, String role, LlmRequest request, StreamSink sink);
    }

    /** Admins' decisions on waiting calls (issue 22); a decision also wakes the chat it enters. */
    public interface Approvals {
        Future<List<ApprovalStore.Waiting>> waiting(BotRef bot);

        Future<ApprovalStore.Outcome> decide(BotRef bot, String approvalId, ApprovalStore.Decision decision,
                                             String decidedBy, long deciderChat);
    }

    /**
     * Per-turn inputs beyond the message.
     *
     * @param context   the system prompt and recent history, as built by the context builder
     * @param tools     the tools this turn offers
     * @param modelRole the model role to use (null: the default)
     */
    public record Turn(TurnRequest request, String nodeId, List<ChatMessage> context, ToolRegistry tools, ChatState chat,
                       Autonomy autonomy, String modelRole) {
    }

    private final Vertx vertx;
    private final Model model;
    private final ApprovalCommands commands;
    private final long approvalTtlSeconds;
    private final ToolRunner tools;
    private final TurnStepStore ledger;
    private final ConversationStore conversations;
    private final SecretScrubber scrubber;
    private final ArgumentRedactor redactor;
    private final int maxIterations;
    private final long turnTimeoutMs;
    private final int maxTurnStarts;
    private final RestartedTurns restarted = new RestartedTurns();
    private final Metrics metrics;
    private final Tracing tracing;
    private final BusSigner signer;

    /** @param approvalTtlSeconds how long a call waits for an admin's approval */
    public AgentLoop(Vertx vertx, Model model, Approvals approvals, ToolRunner tools, TurnStepStore ledger,
                     ConversationStore conversations, SecretScrubber scrubber, int maxIterations, long turnTimeoutMs,
                     int maxTurnStarts, long approvalTtlSeconds, Metrics metrics, BusSigner signer, Tracing tracing) {
        this.vertx = Objects.requireNonNull(vertx);
        this.tracing = Objects.requireNonNull(tracing);
        this.model = Objects.requireNonNull(model);
        this.commands = new ApprovalCommands(approvals);
        this.approvalTtlSeconds = approvalTtlSeconds;
        this.tools = Objects.requireNonNull(tools);
        this.ledger = Objects.requireNonNull(ledger);
        this.conversations = Objects.requireNonNull(conversations);
        this.scrubber = Objects.requireNonNull(scrubber);
        this.redactor = new ArgumentRedactor(scrubber);
        this.maxIterations = maxIterations;
        this.turnTimeoutMs = turnTimeoutMs;
        this.maxTurnStarts = maxTurnStarts;
        this.metrics = Objects.requireNonNull(metrics);
        this.signer = Objects.requireNonNull(signer);
    }

    public Future<TurnOutcome> run(Turn turn) {
        long started = System.nanoTime();
        InboundMessage message = turn.request().message();
        Fence fence = new Fence(turn.request().partition(), turn.nodeId(), turn.request().epoch());
        // The turn continues the trace its message began at intake (kept with the inbox row), on this worker or on
        // the next owner after a failover. A no-op span when tracing is off.
        Span span = tracing.tracer().spanBuilder("clawfleet turn").setSpanKind(SpanKind.CONSUMER)
                .setParent(tracing.parent(message.traceParent()))
                .setAttribute(Tracing.TENANT, message.tenantId()).setAttribute(Tracing.BOT, message.botId())
                .setAttribute(Tracing.CHAT, message.chatKey()).setAttribute(Tracing.PARTITION, (long) message.partition())
                .setAttribute(Tracing.INBOX, message.id()).setAttribute(Tracing.NODE, turn.nodeId())
                .setAttribute("clawfleet.epoch", turn.request().epoch()).startSpan();
        Run run = new Run(turn, fence, span);
        // Steps exist only if a turn for this message ran before; the dispatcher knows when none can have. Such a
        // message may be one whose turn kills its worker: the owners that start it again count it, it runs alone once
        // it was restarted before (RestartedTurns), and once worker.maxTurnStarts owners started it, it is
        // dead-lettered rather than started on the next owner and the next, each taking its chats down with it.
        // A retry on this worker (its turn failed here, the database was gone, say) reads its steps but is no restart;
        // it still runs alone if it was restarted before.
        boolean mayHaveStarted = turn.request().mayHaveStarted();
        boolean counted = mayHaveStarted && !turn.request().retriedHere();
        Future<TurnStepStore.Resumed> resumed = Future.succeededFuture(FRESH);
        if (mayHaveStarted) {
            metrics.increment("clawfleet.ledger.reads", "node", turn.nodeId());
            resumed = counted ? ledger.resume(message.id()) : ledger.retry(message.id());
        }
        int[] startedBefore = {0};
        // A restarted turn's hold ends with its commit, not with its model and tool calls: the next restarted turn
        // may be a poison message that kills this worker as soon as it asks the model, and a commit still under way
        // then would count this message as started by one more owner that died (the chaos run of 2026-12-02: an
        // innocent message placed beside a pill was dead-lettered after four such pill crashes).
        RestartedTurns.Hold[] held = {NOT_HELD};
        return resumed
                .compose(earlier -> {
                    run.recorded = new ArrayList<>(earlier.steps());
                    startedBefore[0] = counted ? earlier.restarts() + 1 : 0;
                    if (counted) {
                        // The partition came from another owner, which may have started this turn: the trace says so.
                        span.addEvent("turn taken over from an earlier owner", Attributes.of(
                                AttributeKey.longKey("clawfleet.earlier_steps"), (long) earlier.steps().size(),
                                AttributeKey.longKey("clawfleet.earlier_starts"), (long) earlier.restarts()));
                    }
                    if (earlier.restarts() == 0 || startedBefore[0] >= maxTurnStarts) {
                        return Future.succeededFuture(NOT_HELD);
                    }
                    if (!counted) {
                        // Retried here: it may be the poison message that the database outage stopped before it could
                        // kill this worker, so it runs alone as before, and no one died to count.
                        return restarted.enter(message.id());
                    }
                    metrics.increment("clawfleet.turn.restarted", "tenant", message.tenantId());
                    span.addEvent("turn restarted", Attributes.of(AttributeKey.longKey("clawfleet.starts_before"),
                            (long) startedBefore[0]));
                    // Logged once counted (past the fence): a stale owner's wait in the queue is no start.
                    return restarted.enter(message.id())
                            .compose(hold -> ledger.countRestart(fence, message.id())
                                    .map(isCounted -> {
                                        Tracing.ids(LOG.atInfo(), span).log("a message started {} times before runs alone "
                                                + "[tenant: {}, chat: {}, partition: {}, inbox: {}]", startedBefore[0],
                                                message.tenantId(), message.chatKey(), message.partition(), message.id());
                                        return hold;
                                    })
                                    .onFailure(failure -> hold.release()));
                })
                .compose(hold -> {
                    held[0] = hold;
                    return startedBefore[0] >= maxTurnStarts
                            ? run.poisoned(startedBefore[0])
                            : run.start().timeout(turnTimeoutMs, TimeUnit.MILLISECONDS);
                })
                // The database gone mid-turn is no fault of the message: no error reply, no dead letter; the turn
                // fails and its chat retries it once the database is back (a retry, not counted as a restart).
                .recover(failure -> failure instanceof PartitionLostException || DatabaseFailures.unreachable(failure)
                        ? Future.failedFuture(failure)
                        : run.failed(failure))
                .compose(this::commit)
                .recover(failure -> failure instanceof PartitionLostException
                        ? Future.succeededFuture(new TurnOutcome.Fenced())
                        : Future.succeededFuture(new TurnOutcome.Failed(failure)))
                .onSuccess(outcome -> metrics.recordMillis("clawfleet.turn.duration", (System.nanoTime() - started) / 1e6,
                        "outcome", outcome.getClass().getSimpleName().toLowerCase(Locale.ROOT)))
                .andThen(result -> {
                    held[0].release();
                    String outcome = result.succeeded() ? result.result().getClass().getSimpleName().toLowerCase(Locale.ROOT)
                            : "error";
                    span.setAttribute("clawfleet.outcome", outcome);
                    if (!outcome.equals("committed")) {
                        span.setStatus(StatusCode.ERROR, outcome);
                    }
                    span.end();
                });
    }

    /** The state of one turn while it runs: its messages, the history it adds, what it spent. */
    private final class Run {
        private final Turn turn;
        private final Fence fence;
        private final InboundMessage message;
        private final List<ChatMessage> messages = new ArrayList<>();
        private final List<HistoryEntry> history = new ArrayList<>();
        private final List<TurnCommit.Usage> usage = new ArrayList<>();
        private List<io.clawfleet.shared.store.TurnStepStore.Step> recorded = List.of();
        private int step;
        private int calls;
        private int iterations;
        private final ReplyStream reply;
        private final List<ToolDefinition> offered;
        private boolean clearPending;
        private String alwaysAllow;
        private boolean usedTools;
        /** The current round's calls were written as text by a model without native tool calling. */
        private boolean textForm;
        /** Ids of calls kept without a secret while the turn waited for approval: they cannot run as asked. */
        private Set<String> lostSecrets = Set.of();
        /** The calls left when one had to wait for approval, the waiting one first. */
        private List<ToolCallRequest> pausedAt;

        /** The turn's span: model and tool calls are its children. */
        private final Span span;

        Run(Turn turn, Fence fence, Span span) {
            this.turn = turn;
            this.fence = fence;
            this.span = span;
            this.message = turn.request().message();
            this.reply = new ReplyStream(scrubber, vertx.eventBus(), signer, message.replyNode(), message.id());
            this.offered = tools.offered(turn.tools(), turn.chat().admin());
        }

        Future<TurnCommit> start() {
            // What is stored is scrubbed: a key the user pasted must not live on in history and later prompts.
            history.add(HistoryEntry.user(message.senderId(), scrubber.scrub(message.text())));
            TurnCommit.PendingApproval pending = turn.chat().pending();
            if (InboundMessage.KIND_APPROVAL.equals(message.kind())) {
                return decided(pending);
            }
            if (ApprovalCommands.isCommand(message.text())) {
                // An admin's command is carried out here, not by the model: no prompt can make one up.
                return commands.handle(message, turn.chat().admin()).map(text -> {
                    reply.append(text);
                    return finish();
                });
            }
            if (pending != null) {
                String answer = message.text().strip().toLowerCase(Locale.ROOT);
                boolean expired = !pending.expiresAt().isAfter(java.time.Instant.now());
                if (answer.equals("/no")) {
                    // The chat may always withdraw what it asked for; only approving takes an admin.
                    return resume(pending, ApprovalStore.Decision.DENY, "the chat withdrew the call (/no)");
                }
                if ((answer.equals("/yes") || answer.equals("/always")) && !expired) {
                    reply.append(ApprovalCommands.stillWaiting(pending));
                    return Future.succeededFuture(finish());
                }
                // The chat moved on (or the call's time ran out): the waiting call is dropped and the new message answered.
                clearPending = true;
                reply.append(expired ? "(The request to run " + pending.tool() + " expired without an admin's approval.)"
                        : "(The request to run " + pending.tool() + " was cancelled.)");
                if (answer.equals("/yes") || answer.equals("/always")) {
                    return Future.succeededFuture(finish());
                }
            }
            messages.addAll(turn.context());
            messages.add(ChatMessage.user(message.text()));
            return iterate();
        }

        /** An admin's decision on this chat's waiting call arrived: the turn carries on as the admin decided. */
        private Future<TurnCommit> decided(TurnCommit.PendingApproval pending) {
            String[] words = message.text().strip().split("\\s+");
            if (pending == null || pending.decision() == null || words.length < 2 || !words[1].equals(pending.approvalId())) {
                reply.append("(An admin's decision arrived for a call that no longer waits.)");
                return Future.succeededFuture(finish());
            }
            ApprovalStore.Decision decision = ApprovalStore.Decision.parse(pending.decision());
            metrics.increment("clawfleet.approvals.decided", "tenant", message.tenantId(), "decision", decision.id());
            reply.append("(" + pending.tool() + " was " + (decision == ApprovalStore.Decision.DENY ? "refused" : "approved")
                    + " by " + pending.decidedBy() + ".)\n");
            return resume(pending, decision, "refused by " + pending.decidedBy());
        }

        private Future<TurnCommit> resume(TurnCommit.PendingApproval pending, ApprovalStore.Decision decision,
                                          String refusal) {
            clearPending = true;
            usedTools = true;
            ApprovalState state = ApprovalState.of(pending.state());
            messages.addAll(state.messages());
            iterations = state.iterations();
            calls = state.calls();
            textForm = state.textForm();
            lostSecrets = state.lostSecrets();
            List<ToolCallRequest> remaining = state.remaining();
            if (decision == ApprovalStore.Decision.ALWAYS) {
                alwaysAllow = pending.tool();
            }
            ToolCallRequest waiting = remaining.get(0);
            // An approved call runs without asking again; a refused one tells the model so.
            Future<Void> first = decision == ApprovalStore.Decision.DENY
                    ? context(calls, null).compose(ctx -> tools.declined(waiting, ctx, refusal))
                            .compose(no -> addToolResult(waiting, no.content()))
                    : runCall(waiting, true).mapEmpty();
            return first.compose(v -> runCalls(remaining.subList(1, remaining.size())))
                    .compose(paused -> paused == null ? iterate() : Future.succeededFuture(paused));
        }

        private Future<TurnCommit> iterate() {
            if (iterations >= maxIterations) {
                metrics.increment("clawfleet.turn.iteration_cap", "tenant", message.tenantId());
                reply.append("I stopped after " + maxIterations
                        + " tool steps without reaching an answer. Ask me to continue, or narrow the request.");
                return Future.succeededFuture(finish());
            }
            iterations++;
            return nextStep().compose(next -> {
                reply.answered(next.content(), next.visible());
                if (!next.asksForTools()) {
                    return Future.succeededFuture(finish());
                }
                usedTools = true;
                textForm = next.textForm();
                // Calls written as text go back as text: a server without native tools may refuse tool_calls.
                messages.add(textForm ? ChatMessage.assistant(next.content())
                        : new ChatMessage("assistant", next.content(), next.calls(), null, null));
                history.add(new HistoryEntry("assistant", null, scrubber.scrub(next.shown()),
                        Transcript.calls(redactor.redact(next.calls())).encode(), null));
                return runCalls(next.calls()).compose(paused -> paused == null ? iterate() : Future.succeededFuture(paused));
            });
        }

        /** The next model answer: replayed from the ledger when a crashed run got that far, else asked for. */
        private Future<ModelStep> nextStep() {
            io.clawfleet.shared.store.TurnStepStore.Step replay = recordedStep("model");
            if (replay != null && ModelStep.lostSecrets(replay.payload())) {
                if (step < recorded.size()) {
                    // Its calls were stored without a secret they held, and one of them started already: asking the
                    // model again would make that call again (the chaos run's counter saw it twice). The step is
                    // replayed instead: a saved result is replayed, a started call is not run again, and a call that
                    // had not started cannot run as asked, so it is not run (the model is told).
                    Set<String> held = new HashSet<>(lostSecrets);
                    ModelStep.fromLedger(replay.payload()).calls().forEach(call -> held.add(call.id()));
                    lostSecrets = held;
                } else {
                    // Nothing of it ran: the turn goes on afresh from here (the model is asked again), so the calls
                    // run as asked, secrets included.
                    recorded = recorded.subList(0, --step);
                    replay = null;
                }
            }
            if (replay != null) {
                JsonObject p = replay.payload();
                usage.add(new TurnCommit.Usage(p.getString("provider"), p.getString("model"), p.getInteger("inputTokens", 0),
                        p.getInteger("outputTokens", 0), p.getInteger("cachedTokens", 0), p.getLong("costMicros")));
                metrics.increment("clawfleet.ledger.replayed", "kind", "model");
                return Future.succeededFuture(ModelStep.fromLedger(p));
            }
            LlmRequest request = new LlmRequest(null, messages, offered);
            // GenAI semantic conventions: operation, models, tokens, finish reason; never the prompt or the answer.
            Span call = tracing.tracer().spanBuilder("chat").setSpanKind(SpanKind.CLIENT)
                    .setParent(Context.root().with(span))
                    .setAttribute("gen_ai.operation.name", "chat")
                    .setAttribute("clawfleet.model_role", turn.modelRole() == null ? "default" : turn.modelRole()).startSpan();
            return model.complete(message.bot(), turn.modelRole(), request, reply.sink()).andThen(result -> {
                if (result.succeeded()) {
                    LlmResponse r = result.result();
                    if (r.model() != null) {
                        call.updateName("chat " + r.model()).setAttribute("gen_ai.response.model", r.model());
                    }
                    if (r.provider() != null) {
                        call.setAttribute("gen_ai.provider.name", r.provider());
                    }
                    call.setAttribute("gen_ai.usage.input_tokens", (long) r.inputTokens())
                            .setAttribute("gen_ai.usage.output_tokens", (long) r.outputTokens());
                    if (r.finishReason() != null) {
                        call.setAttribute(AttributeKey.stringArrayKey("gen_ai.response.finish_reasons"), List.of(r.finishReason()));
                    }
                } else {
                    call.setStatus(StatusCode.ERROR, result.cause().getClass().getSimpleName())
                            .setAttribute("error.type", result.cause().getClass().getName());
                }
                call.end();
            }).compose(response -> {
                usage.add(usage(response));
                // Models without native tool calling write calls in structured delimiters.
                ModelStep next = ModelStep.of(response, turn.tools().names(), "call_" + message.id() + "_" + step + "_");
                if (!next.asksForTools()) {
                    return Future.succeededFuture(next);
                }
                return ledger.record(fence, message.id(), message.tenantId(), step++, "model",
                        next.toLedger(response, scrubber, redactor)).map(next);
            });
        }

        /** Runs the calls in order; completes with a commit when one of them must wait for approval, else null. */
        private Future<TurnCommit> runCalls(List<ToolCallRequest> toolCalls) {
            Future<Boolean> chain = Future.succeededFuture(true);
            for (int i = 0; i < toolCalls.size(); i++) {
                ToolCallRequest call = toolCalls.get(i);
                List<ToolCallRequest> rest = toolCalls.subList(i, toolCalls.size());
                chain = chain.compose(running -> !running ? Future.succeededFuture(false)
                        : runCall(call, false).compose(done -> {
                            if (!done) {
                                pausedAt = rest;
                            }
                            return Future.succeededFuture(done);
                        }));
            }
            return chain.map(done -> done ? null : pause(pausedAt));
        }

        /** Runs one call (or replays its recorded result); false when it waits for approval. */
        private Future<Boolean> runCall(ToolCallRequest call, boolean approved) {
            // A call that changes things has its start marked before it runs, its result after: [started, tool].
            io.clawfleet.shared.store.TurnStepStore.Step started = recordedStep(STARTED);
            io.clawfleet.shared.store.TurnStepStore.Step replay = recordedStep("tool");
            int index = calls++;
            if (replay != null) {
                metrics.increment("clawfleet.ledger.replayed", "kind", "tool");
                addMessage(call, replay.payload().getString("content"));
                return Future.succeededFuture(true);
            }
            if (started != null) {
                Tracing.ids(LOG.atWarn(), span).log("a call an earlier owner started and did not finish is not run again [tenant: {}, chat: {}, "
                        + "partition: {}, inbox: {}, tool: {}]", message.tenantId(), message.chatKey(), message.partition(),
                        message.id(), call.name());
                metrics.increment("clawfleet.tool.interrupted", "tenant", message.tenantId());
            }
            // Span names stay few, as the metrics' tool tag: MCP and skill tools by kind, a made-up name as unknown.
            String spanName = !tracing.on() ? "execute_tool" : "execute_tool " + io.clawfleet.worker.tools.ToolRunner.metricTag(
                    call.name(), offered.stream().anyMatch(d -> d.name().equals(call.name())));
            Span tool = tracing.tracer().spanBuilder(spanName).setSpanKind(SpanKind.INTERNAL)
                    .setParent(Context.root().with(span))
                    .setAttribute("gen_ai.operation.name", "execute_tool").setAttribute("gen_ai.tool.name", call.name())
                    .setAttribute("gen_ai.tool.call.id", call.id()).startSpan();
            return context(index, tracing.traceparent(tool)).compose(ctx -> started != null ? tools.notRun(call, ctx, "error", INTERRUPTED)
                    : lostSecrets.contains(call.id()) ? tools.notRun(call, ctx, "error", LOST_SECRET)
                    : tools.run(turn.tools(), call, ctx, turn.autonomy(), approved, alwaysAllowed(), () -> ledger.record(
                            fence, message.id(), message.tenantId(), step++, STARTED,
                            new JsonObject().put("callId", call.id()).put("name", call.name())))
            ).andThen(result -> {
                if (result.failed()) {
                    tool.setStatus(StatusCode.ERROR, result.cause().getClass().getSimpleName());
                } else if (result.result() instanceof ToolRunner.Outcome.NeedsApproval) {
                    tool.setAttribute("clawfleet.tool.outcome", "approval_requested");
                }
                tool.end();
            }).compose(outcome -> switch (outcome) {
                case ToolRunner.Outcome.NeedsApproval waiting -> {
                    calls--;
                    yield Future.succeededFuture(false);
                }
                case ToolRunner.Outcome.Done done -> addToolResult(call, done.content()).map(true);
            });
        }

        /** Tools the chat answered /always for, the answer this turn carries on from included. */
        private Set<String> alwaysAllowed() {
            if (alwaysAllow == null) {
                return turn.chat().alwaysAllowed();
            }
            Set<String> allowed = new HashSet<>(turn.chat().alwaysAllowed());
            allowed.add(alwaysAllow);
            return allowed;
        }

        /** The call's context; the role is the sender's as the turn read it when it began (AgentTurns). */
        private Future<ToolCallContext> context(int index, String traceParent) {
            return Future.succeededFuture(new ToolCallContext(message.tenantId(), message.botId(), message.chatId(), message.channel(),
                    message.chatKey(), message.senderId(), turn.chat().admin(), message.id(), index, fence, traceParent));
        }

        private Future<Void> addToolResult(ToolCallRequest call, String content) {
            JsonObject payload = new JsonObject().put("callId", call.id()).put("name", call.name()).put("content", content);
            return ledger.record(fence, message.id(), message.tenantId(), step++, "tool", payload)
                    .onSuccess(v -> addMessage(call, content));
        }

        private void addMessage(ToolCallRequest call, String content) {
            Transcript.addResult(messages, call, content, textForm);
            history.add(new HistoryEntry("tool", null, content, null, call.id()));
        }

        private io.clawfleet.shared.store.TurnStepStore.Step recordedStep(String kind) {
            if (step < recorded.size() && recorded.get(step).kind().equals(kind)) {
                return recorded.get(step++);
            }
            return null;
        }

        /** The turn stops here and asks the chat to approve the first of {@code remaining}. */
        private TurnCommit pause(List<ToolCallRequest> remaining) {
            ToolCallRequest waiting = remaining.get(0);
            // Nothing kept while the chat decides holds a secret; calls that held one are remembered
            // by id, and cannot run when the answer comes (see resume).
            JsonObject args = new JsonObject(redactor.redact(waiting.arguments()));
            String approvalId = ApprovalCommands.newId();
            String argsHash = ApprovalCommands.argsHash(waiting.name(), waiting.id(), args);
            java.time.Instant expiresAt = java.time.Instant.now().plusSeconds(approvalTtlSeconds)
                    .truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            reply.append(ApprovalCommands.question(waiting.name(), args, approvalId, argsHash, expiresAt));
            String question = reply.text();
            JsonObject state = ApprovalState.keep(messages, remaining, iterations, calls, textForm, scrubber, redactor);
            metrics.increment("clawfleet.approvals.requested", "tenant", message.tenantId(), "tool",
                    ToolRunner.metricTag(waiting.name(), turn.tools().names().contains(waiting.name())));
            // History keeps what the chat saw: its message and the question.
            List<HistoryEntry> seen = List.of(history.get(0), HistoryEntry.assistant(question));
            return new TurnCommit(fence, message, seen, question, null, usage,
                    new TurnCommit.PendingApproval(waiting.name(), waiting.id(), args, state, approvalId, argsHash,
                            message.senderId(), expiresAt), false, alwaysAllow);
        }

        private TurnCommit finish() {
            if (reply.isEmpty()) {
                reply.append("(the model returned an empty answer)");
            }
            String text = reply.text();
            history.add(HistoryEntry.assistant(text));
            return new TurnCommit(fence, message, history, text, null, usage, null, clearPending, alwaysAllow);
        }

        /**
         * Owners started this message's turn {@code starts} times and none finished it: a dead letter and a clear
         * error reply, without starting it again (replaying the dead letter starts it once more, on purpose).
         */
        Future<TurnCommit> poisoned(int starts) {
            String reason = "its turn was started " + starts + " times by workers that stopped before finishing it"
                    + " (worker.maxTurnStarts " + maxTurnStarts + ")";
            Tracing.ids(LOG.atError(), span).log("message dead-lettered without a turn [tenant: {}, chat: {}, partition: {}, inbox: {}]: {}",
                    message.tenantId(), message.chatKey(), message.partition(), message.id(), reason);
            metrics.increment("clawfleet.turn.poisoned", "tenant", message.tenantId());
            reply.append("Sorry, I could not answer this message: " + reason
                    + ". Your message is saved; an operator can replay it.");
            return Future.succeededFuture(new TurnCommit(fence, message, List.of(), reply.text(), reason, usage, null,
                    clearPending, null));
        }

        /** The model failed for good: a clear error reply and a dead letter (the exchange stays out of history). */
        Future<TurnCommit> failed(Throwable failure) {
            String reason = failure instanceof java.util.concurrent.TimeoutException
                    ? "the turn timed out after " + turnTimeoutMs + " ms"
                    : scrubber.scrub(String.valueOf(failure.getMessage()));
            Tracing.ids(LOG.atWarn(), span).log("turn failed [tenant: {}, chat: {}, partition: {}]: {}", message.tenantId(), message.chatKey(),
                    message.partition(), reason);
            metrics.increment("clawfleet.turn.model_failures", "tenant", message.tenantId());
            reply.append("Sorry, I could not get an answer from the language model (" + reason
                    + "). Your message is saved; an operator can replay it.");
            return Future.succeededFuture(new TurnCommit(fence, message, List.of(), reply.text(), reason, usage, null,
                    clearPending, null));
        }

    }

    /** What one model call used, as its turn's commit records it. */
    static TurnCommit.Usage usage(LlmResponse response) {
        return new TurnCommit.Usage(response.provider(), response.model(), response.inputTokens(), response.outputTokens(),
                response.cachedTokens(), response.costMicros());
    }

    private Future<TurnOutcome> commit(TurnCommit turn) {
        return commit(turn, 1);
    }

    private Future<TurnOutcome> commit(TurnCommit turn, int attempt) {
        return conversations.commit(turn)
                .<TurnOutcome>map(result -> switch (result) {
                    case CommitResult.Committed committed -> new TurnOutcome.Committed(committed.reply(), turn.history(),
                            turn.pending() != null || turn.clearPending() || turn.alwaysAllow() != null
                                    || turn.history().stream().anyMatch(h -> "tool".equals(h.role())));
                    case CommitResult.AlreadyDone done -> new TurnOutcome.AlreadyDone();
                })
                .recover(failure -> {
                    if (failure instanceof PartitionLostException) {
                        return Future.failedFuture(failure);
                    }
                    if (attempt >= COMMIT_ATTEMPTS) {
                        LOG.warn("turn commit failed for good [tenant: {}, chat: {}]: {}", turn.message().tenantId(),
                                turn.message().chatKey(), failure.getMessage());
                        return Future.failedFuture(failure);
                    }
                    Promise<TurnOutcome> retried = Promise.promise();
                    vertx.setTimer(COMMIT_BACKOFF_MS << (attempt - 1), id -> commit(turn, attempt + 1).onComplete(retried));
                    return retried.future();
                });
    }
}
