package io.clawfleet.worker.llm;

import io.vertx.core.Future;

/** A language model behind an API (seed 000 §6.1, seed 001 {@code bc_provider}). */
public interface LlmProvider {

    /**
     * Completes a chat; fails with {@link LlmException} once retries are spent. With a sink the
     * answer text is streamed into it as it is generated, and the returned response still holds the
     * whole answer. A call is retried only until the first delta has reached the sink: after that a
     * failure fails the call, since the receiver has already seen part of an answer.
     *
     * @param sink receives the answer text as it arrives; null for no streaming
     */
    Future<LlmResponse> complete(LlmRequest request, StreamSink sink);

    /** Completes a chat without streaming. */
    default Future<LlmResponse> complete(LlmRequest request) {
        return complete(request, null);
    }

    /** Name for logs and metrics, never containing a key. */
    String name();

    /** Releases connections; the provider is not used afterwards. */
    default Future<Void> close() {
        return Future.succeededFuture();
    }
}
