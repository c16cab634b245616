package io.clawfleet.sandbox.exec;

import java.util.Locale;

/** What OS isolation a sandbox node gives the processes it runs. */
public enum Isolation {
    /** bubblewrap: new namespaces (no network unless granted), read-only system, private /tmp, plus rlimits. */
    BUBBLEWRAP,
    /** No working bubblewrap: rlimits, timeouts, environment filtering and a private working copy only. */
    PROCESS,
    /** Processes cannot be run safely here (not Linux, util-linux missing): shell and code skills are refused. */
    NONE;

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }
}
