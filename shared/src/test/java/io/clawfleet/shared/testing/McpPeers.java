package io.clawfleet.shared.testing;

import org.junit.jupiter.api.Assumptions;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The real MCP peer the tests talk to: the npm reference server {@code @modelcontextprotocol/server-everything}
 * (stdio), installed by {@code ./clawfleet test} into {@code deploy/src/test/node}. Tests that need it are
 * skipped, saying why, where it or {@code node} is missing.
 */
public final class McpPeers {

    private McpPeers() {
    }

    /** The folder of the test peers' node_modules, absolute (a sandbox must be given it to read: sandbox.readOnlyPaths). */
    public static Path folder() {
        Path here = Path.of("").toAbsolutePath();
        // Module tests run in their module's folder, so the repository is its parent.
        Path repository = Files.isDirectory(here.resolve("deploy")) ? here : here.getParent();
        return repository.resolve("deploy/src/test/node").normalize();
    }

    /** The server's entry script; run it as {@code node <script> stdio}. Skips the test when it cannot run. */
    public static Path everything() {
        Path script = folder().resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        Assumptions.assumeTrue(Files.isRegularFile(script),
                "@modelcontextprotocol/server-everything is not installed (./clawfleet test installs it with npm into " + folder() + ")");
        Assumptions.assumeTrue(node() != null, "node is not on the PATH (the MCP reference server is a Node.js program)");
        return script;
    }

    /** The absolute path of {@code node} on this JVM's PATH, or null. */
    public static String node() {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir, "node");
            if (!dir.isEmpty() && Files.isExecutable(candidate)) {
                return candidate.toAbsolutePath().toString();
            }
        }
        return null;
    }
}
