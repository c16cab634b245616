package io.clawfleet.worker.llm;

import io.vertx.core.Future;

import java.util.List;

/**
 * Used when no model is configured. Every reply says so plainly and says how to configure one;
 * it never pretends to be a model.
 */
public final class OfflineProvider implements LlmProvider {

    public static final String REPLY = "No language model is configured on this Clawfleet, so I cannot answer yet. "
            + "Set CLAWFLEET_LLM_BASE_URL to an OpenAI-compatible endpoint (for example https://api.openai.com/v1), "
            + "CLAWFLEET_LLM_API_KEY to its key and CLAWFLEET_LLM_MODEL to a model name, then restart. "
            + "Your message was received and stored.";

    @Override
    public Future<LlmResponse> complete(LlmRequest request, StreamSink sink) {
        if (sink != null) {
            sink.delta(REPLY);
        }
        return Future.succeededFuture(new LlmResponse(REPLY, List.of(), "stop", "offline", 0, 0));
    }

    @Override
    public String name() {
        return "offline";
    }
}
