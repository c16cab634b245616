package io.clawfleet.worker.turn;

import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.worker.llm.LlmRequest;
import io.clawfleet.worker.llm.LlmResponse;
import io.clawfleet.worker.llm.StreamSink;
import io.vertx.core.Future;

import java.util.Objects;

/**
 * Every model call timed, as {@code clawfleet.llm.duration} tagged with the role, the provider that answered, the model
 * it named in its answer and the outcome (the names tenants choose are bounded by MetricLabels).
 */
public final class TimedModel implements AgentLoop.Model {

    private final AgentLoop.Model model;
    private final Metrics metrics;

    public TimedModel(AgentLoop.Model model, Metrics metrics) {
        this.model = Objects.requireNonNull(model);
        this.metrics = Objects.requireNonNull(metrics);
    }

    @Override
    public Future<LlmResponse> complete(BotRef bot, String role, LlmRequest request, StreamSink sink) {
        long started = System.nanoTime();
        String tag = role == null ? "default" : role;
        return model.complete(bot, role, request, sink).andThen(result -> metrics.recordMillis("clawfleet.llm.duration",
                (System.nanoTime() - started) / 1e6, "role", tag,
                "provider", result.succeeded() && result.result().provider() != null ? result.result().provider() : "none",
                "model", result.succeeded() && result.result().model() != null ? result.result().model() : "none",
                "outcome", result.succeeded() ? "ok" : "failed"));
    }
}
