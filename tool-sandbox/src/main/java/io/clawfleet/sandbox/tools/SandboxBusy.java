package io.clawfleet.sandbox.tools;

/** A sandbox node is full (every slot running, the queue full): the call was not started, so another node may take it. */
public final class SandboxBusy extends RuntimeException {

    SandboxBusy(String message) {
        super(message, null, false, false);
    }
}
