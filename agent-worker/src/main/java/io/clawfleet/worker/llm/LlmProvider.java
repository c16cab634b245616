package io.clawfleet.worker.llm;

import io.vertx.core.Future;

/** A language model behind an API (seed 000 §6.1, seed 001 {@code bc_provider}). */
public interface LlmProvider {

    /** Completes a chat; fails with {@link LlmException} once retries are spent. */
    Future<LlmResponse> complete(LlmRequest request);

    /** Name for logs and metrics, never containing a key. */
    String name();
}
