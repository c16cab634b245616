package io.clawfleet.sandbox;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

/** What OS isolation this host offers a tool run: bubblewrap namespaces, or process limits only. */
public enum Isolation {
    /** bubblewrap is installed: new namespaces, read-only system, no network unless granted. */
    BUBBLEWRAP,
    /** No bubblewrap: rlimits, timeouts and environment filtering only. */
    PROCESS;

    public static Isolation detect() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                Path candidate = Path.of(dir, "bwrap");
                if (Files.isExecutable(candidate)) {
                    return BUBBLEWRAP;
                }
            }
        }
        return PROCESS;
    }

    public String id() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
