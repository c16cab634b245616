package io.clawfleet.worker.llm;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.List;

/** A provider that answers, fails or hangs as the test says, and counts its calls. */
final class ScriptedProvider implements LlmProvider {

    private final String name;
    private volatile Throwable failure;
    private volatile Promise<LlmResponse> hanging;
    private volatile String partial;
    private int calls;

    ScriptedProvider(String name) {
        this.name = name;
    }

    /** Every call fails with this from now on; null makes it answer again. */
    ScriptedProvider failing(Throwable failure) {
        this.failure = failure;
        return this;
    }

    /** The next calls stream {@code text}, then fail. */
    ScriptedProvider breakingAfter(String text) {
        this.partial = text;
        return this;
    }

    /** The next call stays pending until the returned promise is completed. */
    Promise<LlmResponse> hangNext() {
        hanging = Promise.promise();
        return hanging;
    }

    int calls() {
        return calls;
    }

    static LlmResponse answer(String text) {
        return new LlmResponse(text, List.of(), "stop", "model-x", 1, 1);
    }

    @Override
    public Future<LlmResponse> complete(LlmRequest request, StreamSink sink) {
        calls++;
        if (hanging != null) {
            Promise<LlmResponse> pending = hanging;
            hanging = null;
            return pending.future();
        }
        if (partial != null) {
            if (sink != null) {
                sink.delta(partial);
            }
            return Future.failedFuture(new LlmException("stream broke", 0, true, -1, null));
        }
        if (failure != null) {
            return Future.failedFuture(failure);
        }
        String text = "answer from " + name;
        if (sink != null) {
            sink.delta(text);
        }
        return Future.succeededFuture(answer(text));
    }

    @Override
    public String name() {
        return name;
    }
}
