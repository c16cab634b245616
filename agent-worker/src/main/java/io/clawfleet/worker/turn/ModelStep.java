package io.clawfleet.worker.turn;

import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.LlmResponse;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.tools.ArgumentRedactor;
import io.clawfleet.worker.tools.ToolCallParser;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Set;

/**
 * One model answer as the tool loop uses it: its text, the calls it asks for and how it asked.
 * A model without native tool calling writes its calls in the text (seed 001); then the calls go
 * back to it as text too ({@link Transcript#addResult}), since such a server may refuse
 * {@code tool_calls} and {@code role: tool} messages, and only the text before the first call is
 * for the user.
 *
 * @param content  the answer's text (may be null when it only asked for tools natively)
 * @param calls    the calls it asks for, none when it answered
 * @param textForm whether the calls were written in the text
 * @param visible  how many characters of {@code content} are for the user
 */
record ModelStep(String content, List<ToolCallRequest> calls, boolean textForm, int visible) {

    ModelStep {
        calls = List.copyOf(calls);
    }

    /** The calls of an answer: native ones, else those written in its text under known tool names. */
    static ModelStep of(LlmResponse response, Set<String> knownTools, String idPrefix) {
        String content = response.content();
        int length = content == null ? 0 : content.length();
        if (!response.toolCalls().isEmpty()) {
            return new ModelStep(content, response.toolCalls(), false, length);
        }
        ToolCallParser.Found found = ToolCallParser.parse(content, knownTools, idPrefix);
        return found.isEmpty() ? new ModelStep(content, List.of(), false, length)
                : new ModelStep(content, found.calls(), true, found.start());
    }

    /**
     * The step as the execution ledger keeps it: the text scrubbed, the arguments redacted, and
     * whether that lost something of them (then the step cannot be replayed, see {@link #lostSecrets}).
     */
    JsonObject toLedger(LlmResponse response, SecretScrubber scrubber, ArgumentRedactor redactor) {
        return new JsonObject().put("content", scrubber.scrub(content))
                .put("calls", Transcript.calls(redactor.redact(calls)))
                .put("redacted", calls.stream().anyMatch(redactor::changes)).put("textForm", textForm)
                .put("model", response.model()).put("provider", response.provider())
                .put("inputTokens", response.inputTokens()).put("outputTokens", response.outputTokens())
                .put("cachedTokens", response.cachedTokens()).put("costMicros", response.costMicros());
    }

    /** Whether a recorded step's calls were kept without something they held, so cannot run as asked. */
    static boolean lostSecrets(JsonObject ledger) {
        return ledger.getBoolean("redacted", false);
    }

    static ModelStep fromLedger(JsonObject ledger) {
        return replayed(ledger.getString("content"), Transcript.calls(ledger.getJsonArray("calls")),
                ledger.getBoolean("textForm", false));
    }

    /** A recorded step: where its text stops being for the user is found again in the stored text. */
    private static ModelStep replayed(String content, List<ToolCallRequest> calls, boolean textForm) {
        int length = content == null ? 0 : content.length();
        if (!textForm) {
            return new ModelStep(content, calls, false, length);
        }
        Set<String> names = Set.copyOf(calls.stream().map(ToolCallRequest::name).toList());
        ToolCallParser.Found found = ToolCallParser.parse(content, names, "");
        return new ModelStep(content, calls, true, found.isEmpty() ? 0 : found.start());
    }

    boolean asksForTools() {
        return !calls.isEmpty();
    }

    /** The part of the text for the user (null when there is no text). */
    String shown() {
        return content == null ? null : content.substring(0, visible);
    }
}
