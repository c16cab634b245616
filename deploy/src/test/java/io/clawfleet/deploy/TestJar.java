package io.clawfleet.deploy;

import java.nio.file.Path;

/** Where the packaged jar and the node logs of cluster tests are. */
final class TestJar {

    private TestJar() {
    }

    static Path path() {
        return Path.of(System.getProperty("clawfleet.jar", "target/clawfleet.jar"));
    }

    static Path logs() {
        return Path.of("target", "cluster-logs");
    }
}
