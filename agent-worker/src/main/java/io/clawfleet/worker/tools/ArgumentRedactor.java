package io.clawfleet.worker.tools;

import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Tool-call arguments as they may be kept (the audit trail, history, the execution ledger, a call
 * waiting for approval): values of arguments named like a credential blanked (seed 000 §12.9), at
 * any depth, in objects inside arrays too, and every text scrubbed. The arguments a tool runs with
 * are never these: a redacted call cannot be run again as it was.
 */
public final class ArgumentRedactor {

    private static final Pattern SENSITIVE = Pattern.compile("(?i).*(key|token|secret|password|authorization|cookie).*");

    private final SecretScrubber scrubber;

    public ArgumentRedactor(SecretScrubber scrubber) {
        this.scrubber = Objects.requireNonNull(scrubber);
    }

    /** @param maxText longest text value kept (longer ones are cut with "..."), for the audit trail */
    public JsonObject redact(JsonObject args, int maxText) {
        JsonObject out = new JsonObject();
        for (String name : args.fieldNames()) {
            out.put(name, SENSITIVE.matcher(name).matches() ? SecretScrubber.REDACTED : value(args.getValue(name), maxText));
        }
        return out;
    }

    /** Arguments as JSON text, redacted; text that is not a JSON object is scrubbed as text. */
    public String redact(String arguments) {
        if (arguments == null) {
            return null;
        }
        try {
            return redact(new JsonObject(arguments), Integer.MAX_VALUE).encode();
        } catch (RuntimeException e) {
            return scrubber.scrub(arguments);
        }
    }

    /** The calls with their arguments redacted. */
    public List<ToolCallRequest> redact(List<ToolCallRequest> calls) {
        return calls.stream().map(call -> new ToolCallRequest(call.id(), call.name(), redact(call.arguments()))).toList();
    }

    /** Whether keeping a call would lose something of its arguments (a secret, a sensitive value). */
    public boolean changes(ToolCallRequest call) {
        return call.arguments() != null && !normalized(call.arguments()).equals(redact(call.arguments()));
    }

    private Object value(Object value, int maxText) {
        if (value instanceof String text) {
            String scrubbed = scrubber.scrub(text);
            return scrubbed.length() <= maxText ? scrubbed : scrubbed.substring(0, maxText) + "...";
        }
        if (value instanceof JsonObject nested) {
            return redact(nested, maxText);
        }
        if (value instanceof JsonArray array) {
            JsonArray out = new JsonArray();
            array.forEach(item -> out.add(value(item, maxText)));
            return out;
        }
        return value;
    }

    /** The same arguments as compact JSON, so a change of spacing alone is not taken for a redaction. */
    private static String normalized(String arguments) {
        try {
            return new JsonObject(arguments).encode();
        } catch (RuntimeException e) {
            return arguments;
        }
    }
}
