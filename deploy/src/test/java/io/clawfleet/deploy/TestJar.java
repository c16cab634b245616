package io.clawfleet.deploy;

import java.nio.file.Path;

/** Where the packaged jar, the launcher and the node logs of cluster tests are. */
final class TestJar {

    private TestJar() {
    }

    static Path path() {
        return Path.of(System.getProperty("clawfleet.jar", "target/clawfleet.jar"));
    }

    /** The {@code clawfleet} launcher script at the checkout's root, as a user runs it. */
    static Path launcher() {
        return Path.of("..", "clawfleet").toAbsolutePath().normalize();
    }

    static Path logs() {
        return Path.of("target", "cluster-logs");
    }
}
