package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.core.json.jackson.JacksonCodec;
import io.vertx.ext.web.RoutingContext;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * Strict reading of a JSON request body: the right content type (415), valid UTF-8 and valid JSON
 * (400 invalid_json), an object, known fields of the right types (400 invalid_request). Every error
 * names what is wrong; nothing is changed by a rejected request.
 */
public final class JsonRequest {

    /** Bodies from this size are read to the last element of the array named (the pass costs 0.3 µs on 100 bytes). */
    static final int TRIM_FROM_BYTES = 1_024;
    /** Chars decoded at a time when a body is only checked for UTF-8 (8 KiB of scratch). */
    private static final int UTF8_SLICE = 4_096;

    private final JsonObject body;
    private final int dropped;

    private JsonRequest(JsonObject body, int dropped) {
        this.body = body;
        this.dropped = dropped;
    }

    /** Parses the body; {@code allowed} lists the fields the endpoint knows (null = any). */
    public static JsonRequest parse(RoutingContext ctx, Set<String> allowed) {
        return parse(ctx, allowed, null);
    }

    /**
     * Parses the body as {@link #parse} does, but keeps only the last element of its top-level array {@code array}:
     * the elements before it are read as JSON, so a body that is not valid JSON anywhere is refused as before, but
     * they are not built. An OpenAI client sends its whole conversation every time and the server reads only its last
     * message (it keeps its own history); building the rest was most of a long chat's cost at the gateway.
     * {@link #dropped()} says how many elements were left out.
     */
    public static JsonRequest parseKeepingLast(RoutingContext ctx, String array) {
        return parse(ctx, null, array);
    }

    private static JsonRequest parse(RoutingContext ctx, Set<String> allowed, String keepLastOf) {
        String type = ctx.request().getHeader("content-type");
        if (type == null || !type.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
            throw new ApiException(415, "unsupported_media_type",
                    "send the body as JSON with 'Content-Type: application/json'" + (type == null ? "" : ", not '" + type + "'"));
        }
        Buffer raw = ctx.body().buffer();
        if (raw == null || raw.length() == 0) {
            throw ApiException.invalidJson("the request body is empty; expected a JSON object");
        }
        byte[] bytes = raw.getBytes();
        if (!isUtf8(bytes)) {
            throw ApiException.invalidJson("the request body is not valid UTF-8");
        }
        // valid UTF-8, as checked above; a short body has little to leave out and costs more in two passes
        Trimmed trimmed = keepLastOf == null || raw.length() < TRIM_FROM_BYTES ? null : Trimmed.of(raw, keepLastOf);
        JsonObject json;
        try {
            Object value;
            try {
                value = trimmed == null ? decode(bytes) : io.vertx.core.json.Json.decodeValue(trimmed.body());
            } catch (DecodeException e) {
                value = decode(bytes); // the error as the whole body gives it
            }
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
        return new JsonRequest(json, trimmed == null ? 0 : trimmed.dropped());
    }

    /** The body as text, then decoded: the text, not the bytes, so that an error reads as it always has. */
    private static Object decode(byte[] validUtf8) {
        return io.vertx.core.json.Json.decodeValue(new String(validUtf8, StandardCharsets.UTF_8));
    }

    /**
     * Whether the bytes are well-formed UTF-8, by the JDK's strict decoder (no overlong forms, no surrogates, nothing past
     * U+10FFFF), decoded a slice at a time into a small scratch buffer: a long body is checked without a copy of it as
     * text, which the cut body ({@link #parseKeepingLast}) never needs.
     */
    static boolean isUtf8(byte[] bytes) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(Math.min(bytes.length, UTF8_SLICE) + 1);
        while (true) {
            out.clear();
            CoderResult result = decoder.decode(in, out, true);
            if (result.isError()) {
                return false;
            }
            if (result.isUnderflow()) {
                out.clear();
                return !decoder.flush(out).isError();
            }
        }
    }

    public JsonObject json() {
        return body;
    }

    /** The elements before the last one that {@link #parseKeepingLast} left out of its array (0 for {@link #parse}). */
    public int dropped() {
        return dropped;
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

    /**
     * The body with its top-level {@code array} cut down to its last element, and how many elements were cut. The
     * elements before it are tokenized (by the parser {@link io.vertx.core.json.Json} uses, so the same syntax is
     * accepted) and skipped, not built; the bytes, not a decoded string, since that parser reads them a third faster.
     * Null when the body is not JSON this pass can read; the whole body is then decoded as it is, which gives the error.
     */
    record Trimmed(Buffer body, int dropped) {

        static Trimmed of(Buffer raw, String array) {
            Buffer out = null;
            int copied = 0;
            int dropped = 0;
            try (JsonParser parser = JacksonCodec.createParser(raw)) {
                if (parser.nextToken() != JsonToken.START_OBJECT) {
                    return null;
                }
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    boolean named = array.equals(parser.currentName());
                    if (parser.nextToken() != JsonToken.START_ARRAY || !named) {
                        dropped = named ? 0 : dropped; // a repeated field: the decoded object has the last one
                        parser.skipChildren();
                        continue;
                    }
                    int open = offset(parser);
                    int last = -1;
                    int elements = 0;
                    while (parser.nextToken() != JsonToken.END_ARRAY) {
                        last = offset(parser);
                        elements++;
                        parser.skipChildren();
                    }
                    int close = offset(parser);
                    dropped = Math.max(0, elements - 1);
                    if (elements > 1) {
                        out = out == null ? Buffer.buffer(close - last + 256) : out;
                        out.appendBuffer(raw, copied, open - copied).appendByte((byte) '[').appendBuffer(raw, last, close - last);
                        copied = close; // the array's own ']' follows
                    }
                }
            } catch (IOException | RuntimeException e) {
                return null;
            }
            return out == null ? new Trimmed(raw, 0) : new Trimmed(out.appendBuffer(raw, copied, raw.length() - copied), dropped);
        }

        private static int offset(JsonParser parser) {
            return Math.toIntExact(parser.currentTokenLocation().getByteOffset());
        }
    }

    private static String firstLine(String message) {
        int newline = message == null ? -1 : message.indexOf('\n');
        return newline < 0 ? String.valueOf(message) : message.substring(0, newline);
    }
}
