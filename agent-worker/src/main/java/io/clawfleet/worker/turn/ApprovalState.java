package io.clawfleet.worker.turn;

import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.ChatMessage;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.tools.ArgumentRedactor;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Set;

/**
 * What a turn paused for an admin's approval keeps to carry on when the answer comes (stored as
 * {@code pending_approvals.state}): its messages so far, the calls left (the waiting one first),
 * its counters. Nothing in it holds a secret; the calls whose arguments lost one to redaction are
 * named, since they cannot run as they were asked.
 *
 * @param lostSecrets ids of calls kept without something their arguments held
 * @param textForm    the calls were written as text by a model without native tool calling
 */
record ApprovalState(List<ChatMessage> messages, List<ToolCallRequest> remaining, Set<String> lostSecrets,
                     int iterations, int calls, boolean textForm) {

    /** The state to keep, made safe to store. */
    static JsonObject keep(List<ChatMessage> messages, List<ToolCallRequest> remaining, int iterations, int calls,
                           boolean textForm, SecretScrubber scrubber, ArgumentRedactor redactor) {
        JsonArray lost = new JsonArray();
        remaining.stream().filter(redactor::changes).forEach(call -> lost.add(call.id()));
        return new JsonObject()
                .put("messages", Transcript.messages(Transcript.redacted(messages, scrubber, redactor)))
                .put("remaining", Transcript.calls(redactor.redact(remaining)))
                .put("redacted", lost)
                .put("iterations", iterations)
                .put("calls", calls)
                .put("textForm", textForm);
    }

    static ApprovalState of(JsonObject state) {
        return new ApprovalState(Transcript.messages(state.getJsonArray("messages")),
                Transcript.calls(state.getJsonArray("remaining")),
                Set.copyOf(state.getJsonArray("redacted", new JsonArray()).stream().map(String::valueOf).toList()),
                state.getInteger("iterations", 0), state.getInteger("calls", 0), state.getBoolean("textForm", false));
    }
}
