package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.message.SandboxFailures;

/**
 * This node could not do its job for a call: it was full (or the call waited too long for a slot), it cannot run that kind of tool, or it broke
 * (its disk, its sandbox program). Sent back as a failure with {@link #code()} (see {@link SandboxFailures}),
 * never as a result, so the worker can ask another node and count it against this one.
 */
public final class SandboxFailure extends RuntimeException {

    private final int code;

    private SandboxFailure(int code, String message, Throwable cause) {
        super(message, cause, false, false);
        this.code = code;
    }

    static SandboxFailure busy(String message) {
        return new SandboxFailure(SandboxFailures.BUSY, message, null);
    }

    static SandboxFailure expired(String message) {
        return new SandboxFailure(SandboxFailures.EXPIRED, message, null);
    }

    static SandboxFailure unsupported(String message) {
        return new SandboxFailure(SandboxFailures.UNSUPPORTED, message, null);
    }

    /** @param started whether the run may have started (and had its effects) before the node broke */
    static SandboxFailure broken(boolean started, String message, Throwable cause) {
        return new SandboxFailure(started ? SandboxFailures.BROKEN : SandboxFailures.BROKEN_BEFORE_START, message, cause);
    }

    /** One of {@link SandboxFailures}' codes. */
    public int code() {
        return code;
    }
}
