package io.clawfleet.sandbox.exec;

import java.io.IOException;

/**
 * The node could not set up a run (its run directory, its sandbox program): the untrusted program
 * never started, so the call may go to another node whatever it would have done.
 */
public final class SetupFailure extends IOException {

    SetupFailure(String message, Throwable cause) {
        super(message, cause);
    }
}
