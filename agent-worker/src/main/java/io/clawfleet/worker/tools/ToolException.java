package io.clawfleet.worker.tools;

/**
 * A tool call that did not succeed, with the outcome recorded in the audit trail and a message
 * for the model that says what was wrong.
 */
public final class ToolException extends RuntimeException {

    /** How a call ended, as the audit trail records it (seed 000 §12.9). */
    public enum Outcome { ERROR, DENIED, INVALID_ARGS }

    private final Outcome outcome;

    public ToolException(Outcome outcome, String message) {
        super(message, null, false, false);
        this.outcome = outcome;
    }

    public static ToolException error(String message) {
        return new ToolException(Outcome.ERROR, message);
    }

    public static ToolException denied(String message) {
        return new ToolException(Outcome.DENIED, message);
    }

    public static ToolException invalid(String message) {
        return new ToolException(Outcome.INVALID_ARGS, message);
    }

    public Outcome outcome() {
        return outcome;
    }
}
