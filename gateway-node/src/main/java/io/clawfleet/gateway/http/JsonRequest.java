package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * Strict reading of a JSON request body: the right content type (415), valid UTF-8 and valid JSON
 * (400 invalid_json), an object, known fields of the right types (400 invalid_request). Every error
 * names what is wrong; nothing is changed by a rejected request.
 */
public final class JsonRequest {

    private final JsonObject body;

    private JsonRequest(JsonObject body) {
        this.body = body;
    }

    /** Parses the body; {@code allowed} lists the fields the endpoint knows (null = any). */
    public static JsonRequest parse(RoutingContext ctx, Set<String> allowed) {
        String type = ctx.request().getHeader("content-type");
        if (type == null || !type.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
            throw new ApiException(415, "unsupported_media_type",
                    "send the body as JSON with 'Content-Type: application/json'" + (type == null ? "" : ", not '" + type + "'"));
        }
        Buffer raw = ctx.body().buffer();
        if (raw == null || raw.length() == 0) {
            throw ApiException.invalidJson("the request body is empty; expected a JSON object");
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(raw.getBytes())).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.invalidJson("the request body is not valid UTF-8");
        }
        JsonObject json;
        try {
            Object value = io.vertx.core.json.Json.decodeValue(text);
            if (!(value instanceof JsonObject object)) {
                throw ApiException.invalidJson("expected a JSON object, got " + kind(value));
            }
            json = object;
        } catch (DecodeException e) {
            throw ApiException.invalidJson("the request body is not valid JSON: " + firstLine(e.getMessage()));
        }
        if (allowed != null) {
            for (String field : json.fieldNames()) {
                if (!allowed.contains(field)) {
                    throw ApiException.badRequest("unknown field '" + field + "'; expected only " + String.join(", ", allowed));
                }
            }
        }
        return new JsonRequest(json);
    }

    public JsonObject json() {
        return body;
    }

    /** A required string of 1..maxLength characters. */
    public String requiredString(String field, int maxLength) {
        Object value = body.getValue(field);
        if (value == null) {
            throw ApiException.badRequest("missing required field '" + field + "' (a string)");
        }
        return checkString(field, value, maxLength, false);
    }

    /** An optional string; null when absent. */
    public String optionalString(String field, int maxLength) {
        Object value = body.getValue(field);
        return value == null ? null : checkString(field, value, maxLength, false);
    }

    public boolean optionalBoolean(String field, boolean defaultValue) {
        Object value = body.getValue(field);
        if (value == null) {
            return defaultValue;
        }
        if (!(value instanceof Boolean bool)) {
            throw ApiException.badRequest("field '" + field + "' must be true or false, got " + kind(value));
        }
        return bool;
    }

    static String checkString(String field, Object value, int maxLength, boolean allowBlank) {
        if (!(value instanceof String text)) {
            throw ApiException.badRequest("field '" + field + "' must be a string, got " + kind(value));
        }
        if (!allowBlank && text.isBlank()) {
            throw ApiException.badRequest("field '" + field + "' must not be empty");
        }
        if (text.length() > maxLength) {
            throw ApiException.badRequest("field '" + field + "' is longer than " + maxLength + " characters");
        }
        return text;
    }

    public static String kind(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof String) {
            return "a string";
        }
        if (value instanceof Number) {
            return "a number";
        }
        if (value instanceof Boolean) {
            return "a boolean";
        }
        if (value instanceof JsonObject) {
            return "an object";
        }
        return "an array";
    }

    private static String firstLine(String message) {
        int newline = message == null ? -1 : message.indexOf('\n');
        return newline < 0 ? String.valueOf(message) : message.substring(0, newline);
    }
}
