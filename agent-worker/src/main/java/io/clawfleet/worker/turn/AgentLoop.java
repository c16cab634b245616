package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretScrubber;
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

/**
 * One turn of the agent (seed 000 §6.2): ask the model; run the tools it asks for; give it their
 * results; again, until it answers or the iteration cap is reached; then commit everything at once.
 *
 * <p>Each completed step (a model answer asking for tools, a tool's result) is recorded in the
 * execution ledger under the partition's epoch, so a turn re-run after a crash replays them
 * instead of asking the model again or running a tool twice. A mutating tool of a supervised bot
 * pauses the turn: the chat is asked {@code /yes}, {@code /no} or {@code /always}, and the turn
 * carries on from where it stopped when the answer comes, without holding up any other chat.
 */
public final class AgentLoop {

    private static final Logger LOG = LoggerFactory.getLogger(AgentLoop.class);
    private static final int COMMIT_ATTEMPTS = 6;
    private static final long COMMIT_BACKOFF_MS = 100;
    private static final String LOST_SECRET = "this call's arguments held a secret, which is not kept while a call waits "
            + "for approval, so it was not run; ask the user to send the request again";

    /** How the agent model is reached: the configured provider chain for a model role. */
    @FunctionalInterface
    public interface Model {
        Future<LlmResponse> complete(String role, LlmRequest request, StreamSink sink);
    }

    /** Whether a chat is an admin chat, read from the record (the policy must not act on a stale role). */
    @FunctionalInterface
    public interface ChatRoles {
        Future<Boolean> isAdmin(long chatId);
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
    private final ChatRoles roles;
    private final ToolRunner tools;
    private final TurnStepStore ledger;
    private final ConversationStore conversations;
    private final SecretScrubber scrubber;
    private final ArgumentRedactor redactor;
    private final int maxIterations;
    private final long turnTimeoutMs;
    private final Metrics metrics;
    private final BusSigner signer;

    public AgentLoop(Vertx vertx, Model model, ChatRoles roles, ToolRunner tools, TurnStepStore ledger,
                     ConversationStore conversations, SecretScrubber scrubber, int maxIterations, long turnTimeoutMs,
                     Metrics metrics, BusSigner signer) {
        this.vertx = Objects.requireNonNull(vertx);
        this.model = Objects.requireNonNull(model);
        this.roles = Objects.requireNonNull(roles);
        this.tools = Objects.requireNonNull(tools);
        this.ledger = Objects.requireNonNull(ledger);
        this.conversations = Objects.requireNonNull(conversations);
        this.scrubber = Objects.requireNonNull(scrubber);
        this.redactor = new ArgumentRedactor(scrubber);
        this.maxIterations = maxIterations;
        this.turnTimeoutMs = turnTimeoutMs;
        this.metrics = Objects.requireNonNull(metrics);
        this.signer = Objects.requireNonNull(signer);
    }

    public Future<TurnOutcome> run(Turn turn) {
        long started = System.nanoTime();
        InboundMessage message = turn.request().message();
        Fence fence = new Fence(turn.request().partition(), turn.nodeId(), turn.request().epoch());
        Run run = new Run(turn, fence);
        // Steps exist only if a turn for this message ran before; the dispatcher knows when none can have.
        Future<List<TurnStepStore.Step>> recorded = Future.succeededFuture(List.of());
        if (turn.request().mayHaveStarted()) {
            metrics.increment("clawfleet.ledger.reads", "node", turn.nodeId());
            recorded = ledger.load(message.id());
        }
        return recorded
                .compose(steps -> {
                    run.recorded = new ArrayList<>(steps);
                    return run.start();
                })
                .timeout(turnTimeoutMs, TimeUnit.MILLISECONDS)
                .recover(failure -> failure instanceof PartitionLostException
                        ? Future.failedFuture(failure)
                        : run.failed(failure))
                .compose(this::commit)
                .recover(failure -> failure instanceof PartitionLostException
                        ? Future.succeededFuture(new TurnOutcome.Fenced())
                        : Future.succeededFuture(new TurnOutcome.Failed(failure)))
                .onSuccess(outcome -> metrics.recordMillis("clawfleet.turn.duration", (System.nanoTime() - started) / 1e6,
                        "outcome", outcome.getClass().getSimpleName().toLowerCase(Locale.ROOT)));
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
        private Future<Boolean> admin;
        private boolean clearPending;
        private String alwaysAllow;
        private boolean usedTools;
        /** The current round's calls were written as text by a model without native tool calling. */
        private boolean textForm;
        /** Ids of calls kept without a secret while the turn waited for approval: they cannot run as asked. */
        private Set<String> lostSecrets = Set.of();
        /** The calls left when one had to wait for approval, the waiting one first. */
        private List<ToolCallRequest> pausedAt;

        Run(Turn turn, Fence fence) {
            this.turn = turn;
            this.fence = fence;
            this.message = turn.request().message();
            this.reply = new ReplyStream(scrubber, vertx.eventBus(), signer, message.replyNode(), message.id());
            this.offered = tools.offered(turn.tools(), turn.chat().admin());
        }

        Future<TurnCommit> start() {
            // What is stored is scrubbed: a key the user pasted must not live on in history and later prompts.
            history.add(HistoryEntry.user(message.senderId(), scrubber.scrub(message.text())));
            TurnCommit.PendingApproval pending = turn.chat().pending();
            if (pending != null) {
                String answer = message.text().strip().toLowerCase(Locale.ROOT);
                if (answer.equals("/yes") || answer.equals("/no") || answer.equals("/always")) {
                    return resume(pending, answer);
                }
                // The chat moved on: the waiting call is dropped and the new message answered.
                clearPending = true;
                reply.append("(The request to run " + pending.tool() + " was cancelled.)");
            }
            messages.addAll(turn.context());
            messages.add(ChatMessage.user(message.text()));
            return iterate();
        }

        private Future<TurnCommit> resume(TurnCommit.PendingApproval pending, String answer) {
            clearPending = true;
            usedTools = true;
            ApprovalState state = ApprovalState.of(pending.state());
            messages.addAll(state.messages());
            iterations = state.iterations();
            calls = state.calls();
            textForm = state.textForm();
            lostSecrets = state.lostSecrets();
            List<ToolCallRequest> remaining = state.remaining();
            if (answer.equals("/always")) {
                alwaysAllow = pending.tool();
            }
            ToolCallRequest waiting = remaining.get(0);
            // An approved call runs without asking again; a refused one tells the model so.
            Future<Void> first = answer.equals("/no")
                    ? context(calls).compose(ctx -> tools.declined(waiting, ctx)).compose(no -> addToolResult(waiting, no.content()))
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
                // Its calls were stored without a secret they held, so they cannot be run as asked:
                // the turn goes on afresh from here (the model is asked again).
                recorded = recorded.subList(0, --step);
                replay = null;
            }
            if (replay != null) {
                JsonObject p = replay.payload();
                usage.add(new TurnCommit.Usage(p.getString("provider"), p.getString("model"), p.getInteger("inputTokens", 0),
                        p.getInteger("outputTokens", 0)));
                metrics.increment("clawfleet.ledger.replayed", "kind", "model");
                return Future.succeededFuture(ModelStep.fromLedger(p));
            }
            LlmRequest request = new LlmRequest(null, messages, offered);
            return model.complete(turn.modelRole(), request, reply.sink()).compose(response -> {
                usage.add(new TurnCommit.Usage(response.provider(), response.model(), response.inputTokens(),
                        response.outputTokens()));
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
            io.clawfleet.shared.store.TurnStepStore.Step replay = recordedStep("tool");
            int index = calls++;
            if (replay != null) {
                metrics.increment("clawfleet.ledger.replayed", "kind", "tool");
                addMessage(call, replay.payload().getString("content"));
                return Future.succeededFuture(true);
            }
            return context(index).compose(ctx -> lostSecrets.contains(call.id())
                    ? tools.notRun(call, ctx, "error", LOST_SECRET)
                    : tools.run(turn.tools(), call, ctx, turn.autonomy(), approved, alwaysAllowed())
            ).compose(outcome -> switch (outcome) {
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

        private Future<ToolCallContext> context(int index) {
            return admin().map(admin -> new ToolCallContext(message.tenantId(), message.chatId(), message.channel(),
                    message.chatKey(), message.senderId(), admin, message.id(), index, fence));
        }

        /** The chat's role as it is now (another chat may have changed it since the lane loaded), read once a turn. */
        private Future<Boolean> admin() {
            if (admin == null) {
                admin = roles.isAdmin(message.chatId());
            }
            return admin;
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
            String shown = args.encode();
            reply.append("I need your approval to run " + waiting.name() + " " + (shown.length() > 500
                    ? shown.substring(0, 500) + "..." : shown) + ".\nReply /yes to run it, /no to refuse, or /always to allow "
                    + waiting.name() + " in this chat from now on.");
            String question = reply.text();
            JsonObject state = ApprovalState.keep(messages, remaining, iterations, calls, textForm, scrubber, redactor);
            metrics.increment("clawfleet.approvals.requested", "tool", waiting.name());
            // History keeps what the chat saw: its message and the question.
            List<HistoryEntry> seen = List.of(history.get(0), HistoryEntry.assistant(question));
            return new TurnCommit(fence, message, seen, question, null, usage,
                    new TurnCommit.PendingApproval(waiting.name(), waiting.id(), args, state), false, alwaysAllow);
        }

        private TurnCommit finish() {
            if (reply.isEmpty()) {
                reply.append("(the model returned an empty answer)");
            }
            String text = reply.text();
            history.add(HistoryEntry.assistant(text));
            return new TurnCommit(fence, message, history, text, null, usage, null, clearPending, alwaysAllow);
        }

        /** The model failed for good: a clear error reply and a dead letter (the exchange stays out of history). */
        Future<TurnCommit> failed(Throwable failure) {
            String reason = failure instanceof java.util.concurrent.TimeoutException
                    ? "the turn timed out after " + turnTimeoutMs + " ms"
                    : scrubber.scrub(String.valueOf(failure.getMessage()));
            LOG.warn("turn failed [tenant: {}, chat: {}, partition: {}]: {}", message.tenantId(), message.chatKey(),
                    message.partition(), reason);
            metrics.increment("clawfleet.turn.model_failures", "tenant", message.tenantId());
            reply.append("Sorry, I could not get an answer from the language model (" + reason
                    + "). Your message is saved; an operator can replay it.");
            return Future.succeededFuture(new TurnCommit(fence, message, List.of(), reply.text(), reason, usage, null,
                    clearPending, null));
        }

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
