package io.clawfleet.worker.tools;

import java.util.Locale;

/** How freely a tenant's bot may act (seed 001 {@code bc_approval}). */
public enum Autonomy {
    /** Tools that change anything are refused. */
    READ_ONLY,
    /** Tools that change anything ask the chat first: /yes, /no or /always. */
    SUPERVISED,
    /** Tools run without asking (the policy still applies). */
    FULL;

    public static Autonomy parse(String value) {
        try {
            return valueOf(value.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("autonomy must be read_only, supervised or full, got '" + value + "'");
        }
    }

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }
}
