package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.ConversationStore.CommitResult;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.HistoryEntry;
import io.clawfleet.shared.store.PartitionLostException;
import io.clawfleet.worker.llm.LlmProvider;
import io.clawfleet.worker.llm.LlmRequest;
import io.clawfleet.worker.llm.LlmResponse;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Runs one turn: context, model call, fenced commit. The model call is an external side effect
 * (at-least-once); the commit is exactly-once (the inbox row flips from pending to done in the
 * same statement that writes history and reply, under the partition's epoch).
 */
public final class TurnExecutor {

    private static final Logger LOG = LoggerFactory.getLogger(TurnExecutor.class);
    private static final int COMMIT_ATTEMPTS = 6;
    private static final long COMMIT_BACKOFF_MS = 100;

    private final Vertx vertx;
    private final LlmProvider provider;
    private final ConversationStore conversations;
    private final ContextBuilder context;
    private final long turnTimeoutMs;
    private final Metrics metrics;

    public TurnExecutor(Vertx vertx, LlmProvider provider, ConversationStore conversations, ContextBuilder context,
                        long turnTimeoutMs, Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.provider = Objects.requireNonNull(provider);
        this.conversations = Objects.requireNonNull(conversations);
        this.context = Objects.requireNonNull(context);
        this.turnTimeoutMs = turnTimeoutMs;
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** Runs the turn as {@code nodeId}, fenced by the request's partition epoch. */
    public Future<TurnOutcome> run(TurnRequest turn, String nodeId, List<HistoryEntry> history, String summary) {
        Fence fence = new Fence(turn.partition(), nodeId, turn.epoch());
        InboundMessage message = turn.message();
        long started = System.nanoTime();
        LlmRequest request = new LlmRequest(null, context.build(message, history, summary), List.of());
        return provider.complete(request)
                .timeout(turnTimeoutMs, TimeUnit.MILLISECONDS)
                .compose(response -> {
                    metrics.recordMillis("clawfleet.llm.duration", (System.nanoTime() - started) / 1e6, "provider", provider.name());
                    String text = replyText(response);
                    HistoryEntry user = HistoryEntry.user(message.senderId(), message.text());
                    HistoryEntry assistant = HistoryEntry.assistant(text);
                    return commit(fence, message, List.of(user, assistant), text, null, 1);
                }, failure -> {
                    // The model failed for good: answer with a clear error and record a dead letter.
                    String reason = failure instanceof java.util.concurrent.TimeoutException
                            ? "the turn timed out after " + turnTimeoutMs + " ms"
                            : failure.getMessage();
                    LOG.warn("turn failed [tenant: {}, chat: {}, partition: {}]: {}", message.tenantId(),
                            message.chatKey(), message.partition(), reason);
                    metrics.increment("clawfleet.turn.model_failures", "tenant", message.tenantId());
                    String text = "Sorry, I could not get an answer from the language model (" + reason
                            + "). Your message is saved; an operator can replay it.";
                    // The model never saw this exchange: keep it out of the history, so a replay is clean.
                    return commit(fence, message, List.of(), text, reason, 1);
                })
                .onSuccess(outcome -> metrics.recordMillis("clawfleet.turn.duration", (System.nanoTime() - started) / 1e6,
                        "outcome", outcome.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT)));
    }

    private static String replyText(LlmResponse response) {
        String content = response.content();
        return content == null || content.isBlank() ? "(the model returned an empty answer)" : content;
    }

    private Future<TurnOutcome> commit(Fence fence, InboundMessage message, List<HistoryEntry> entries, String text,
                                       String deadLetterError, int attempt) {
        return conversations.commitTurn(fence, message, entries, text, deadLetterError)
                .<TurnOutcome>map(result -> switch (result) {
                    case CommitResult.Committed committed -> new TurnOutcome.Committed(committed.reply(), entries);
                    case CommitResult.AlreadyDone done -> new TurnOutcome.AlreadyDone();
                })
                .recover(failure -> {
                    if (failure instanceof PartitionLostException) {
                        return Future.succeededFuture(new TurnOutcome.Fenced());
                    }
                    if (attempt >= COMMIT_ATTEMPTS) {
                        LOG.warn("turn commit failed for good [tenant: {}, chat: {}, partition: {}]: {}",
                                message.tenantId(), message.chatKey(), message.partition(), failure.getMessage());
                        return Future.succeededFuture(new TurnOutcome.Failed(failure));
                    }
                    Promise<TurnOutcome> retried = Promise.promise();
                    vertx.setTimer(COMMIT_BACKOFF_MS << (attempt - 1), id ->
                            commit(fence, message, entries, text, deadLetterError, attempt + 1).onComplete(retried));
                    return retried.future();
                });
    }
}
