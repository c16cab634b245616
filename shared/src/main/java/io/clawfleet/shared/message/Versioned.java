package io.clawfleet.shared.message;

import java.util.Objects;

/**
 * A payload that travels between nodes. Its {@code type} names the record and its version
 * ({@code inbound-message-v1}); a reader refuses a type it does not know instead of guessing.
 */
public interface Versioned {

    String type();

    /** Fills in the type of a freshly built record and rejects a decoded one of another type. */
    static String checkType(String expected, String actual) {
        if (actual == null) {
            return expected;
        }
        if (!expected.equals(actual)) {
            throw new IllegalArgumentException("expected payload type " + expected + " but got " + actual);
        }
        return actual;
    }

    static <T> T require(T value, String field) {
        return Objects.requireNonNull(value, () -> "missing required field " + field);
    }
}
