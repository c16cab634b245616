package io.clawfleet.worker.tools;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;

/**
 * Checks a model's arguments against a tool's JSON schema (the subset tools use: an object of
 * typed properties, required ones, enums, string length). Every problem is reported to the model
 * by name, so it can correct the call. What the subset does not read (a property without one type,
 * {@code anyOf}, a boolean schema, as MCP servers' schemas may have) is not checked here: the tool
 * checks it.
 */
public final class ToolArguments {

    private ToolArguments() {
    }

    /** Parses and validates; throws {@link ToolException} (invalid_args) naming the problem. */
    public static JsonObject check(String rawArguments, JsonObject schema) {
        JsonObject args;
        try {
            Object value = io.vertx.core.json.Json.decodeValue(rawArguments == null || rawArguments.isBlank() ? "{}" : rawArguments);
            if (!(value instanceof JsonObject object)) {
                throw ToolException.invalid("arguments must be a JSON object");
            }
            args = object;
        } catch (DecodeException e) {
            throw ToolException.invalid("arguments are not valid JSON: " + firstLine(e.getMessage()));
        }
        JsonObject properties = schema.getJsonObject("properties", new JsonObject());
        List<String> problems = new ArrayList<>();
        for (String name : args.fieldNames()) {
            if (!properties.containsKey(name)) {
                problems.add("unknown argument '" + name + "'" + (properties.isEmpty() ? " (this tool takes none)"
                        : " (expected: " + String.join(", ", properties.fieldNames()) + ")"));
            }
        }
        JsonArray required = schema.getJsonArray("required", new JsonArray());
        for (int i = 0; i < required.size(); i++) {
            String name = required.getString(i);
            if (args.getValue(name) == null) {
                problems.add("missing required argument '" + name + "'");
            }
        }
        for (String name : properties.fieldNames()) {
            Object value = args.getValue(name);
            if (value != null) {
                String problem = checkValue(name, value, properties.getValue(name));
                if (problem != null) {
                    problems.add(problem);
                }
            }
        }
        if (!problems.isEmpty()) {
            throw ToolException.invalid(String.join("; ", problems));
        }
        return args;
    }

    private static String checkValue(String name, Object value, Object schema) {
        if (!(schema instanceof JsonObject spec) || !(spec.getValue("type") instanceof String type)) {
            return null;
        }
        boolean ok = switch (type) {
            case "string" -> value instanceof String;
            case "integer" -> value instanceof Integer || value instanceof Long
                    || (value instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()));
            case "number" -> value instanceof Number;
            case "boolean" -> value instanceof Boolean;
            case "array" -> value instanceof JsonArray;
            case "object" -> value instanceof JsonObject;
            default -> true;
        };
        if (!ok) {
            return "argument '" + name + "' must be " + (type.equals("integer") || type.equals("array") || type.equals("object")
                    ? "an " : "a ") + type;
        }
        JsonArray allowed = spec.getJsonArray("enum");
        if (allowed != null && !allowed.contains(value)) {
            return "argument '" + name + "' must be one of " + allowed.encode() + ", not " + io.vertx.core.json.Json.encode(value);
        }
        Integer maxLength = spec.getInteger("maxLength");
        if (maxLength != null && value instanceof String text && text.length() > maxLength) {
            return "argument '" + name + "' is longer than " + maxLength + " characters";
        }
        return null;
    }

    private static String firstLine(String message) {
        int newline = message == null ? -1 : message.indexOf('\n');
        return newline < 0 ? String.valueOf(message) : message.substring(0, newline);
    }
}
