package io.clawfleet.worker.llm;

/**
 * Receives a model's answer text as it is generated. Called on the provider's event loop, in order;
 * it must not block. Tool calls are not streamed: they arrive whole in the final {@link LlmResponse}.
 */
@FunctionalInterface
public interface StreamSink {

    /** The next piece of answer text (never empty). */
    void delta(String text);
}
