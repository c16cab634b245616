package io.clawfleet.testkit;

import org.junit.jupiter.api.Assumptions;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The real MCP peer the tests talk to: the npm reference server {@code @modelcontextprotocol/server-everything}
 * (stdio), installed by {@code ./clawfleet test} into {@code deploy/src/test/node}. Tests that need it are
 * skipped, saying why, where it or {@code node} is missing.
 */
public final class McpPeers {

    private McpPeers() {
    }

    private static Path readable;

    /**
     * The folder of the test peers' node_modules, absolute (a sandbox must be given it to read:
     * sandbox.readOnlyPaths). Sandbox runs of a root node drop to another user, who must be able to reach
     * it: when the checkout lies under a folder only its owner may enter (a {@code mktemp -d}, a CI
     * workspace), this is a copy under /var/tmp that everybody may read, made once per JVM.
     */
    public static synchronized Path folder() {
        if (readable == null) {
            readable = readableByAll(source());
        }
        return readable;
    }

    private static Path source() {
        Path here = Path.of("").toAbsolutePath();
        // Module tests run in their module's folder, so the repository is its parent.
        Path repository = Files.isDirectory(here.resolve("deploy")) ? here : here.getParent();
        return repository.resolve("deploy/src/test/node").normalize();
    }

    private static Path readableByAll(Path source) {
        if (!Files.isDirectory(source) || reachableByAll(source)) {
            return source;
        }
        try {
            // Not under /tmp: every sandbox run gets a private /tmp, which would hide it.
            Path varTmp = Path.of("/var/tmp");
            Path copy = Files.isDirectory(varTmp) ? Files.createTempDirectory(varTmp, "clawfleet-test-peers-")
                    : Files.createTempDirectory("clawfleet-test-peers-");
            // Node.js 22 (125 MB) runs the conformance suite from the checkout, never in a sandbox: not copied.
            Path node22 = source.resolve("node_modules/node");
            try (Stream<Path> tree = Files.walk(source)) {
                for (Path from : tree.filter(path -> !path.startsWith(node22)).toList()) {
                    Path to = copy.resolve(source.relativize(from).toString());
                    if (Files.isSymbolicLink(from)) {
                        Files.copy(from, to, LinkOption.NOFOLLOW_LINKS);
                    } else if (Files.isDirectory(from)) {
                        Files.createDirectories(to);
                        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwxr-xr-x"));
                    } else {
                        Files.copy(from, to, StandardCopyOption.COPY_ATTRIBUTES);
                        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString(
                                Files.isExecutable(from) ? "rwxr-xr-x" : "rw-r--r--"));
                    }
                }
            }
            Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteQuietly(copy)));
            return copy;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy the test peers out of " + source + " for the sandbox's user", e);
        }
    }

    /** Whether others may enter every folder up to {@code path} and read it. */
    private static boolean reachableByAll(Path path) {
        try {
            if (!Files.getPosixFilePermissions(path).contains(PosixFilePermission.OTHERS_READ)) {
                return false;
            }
            for (Path folder = path; folder != null; folder = folder.getParent()) {
                if (!Files.getPosixFilePermissions(folder).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                    return false;
                }
            }
            return true;
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    private static void deleteQuietly(Path root) {
        try (Stream<Path> tree = Files.walk(root)) {
            tree.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // A temporary folder left behind.
        }
    }

    /** The server's entry script; run it as {@code node <script> stdio}. Skips the test when it cannot run. */
    public static Path everything() {
        Path script = folder().resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        Assumptions.assumeTrue(Files.isRegularFile(script),
                "@modelcontextprotocol/server-everything is not installed (./clawfleet test installs it with npm into " + folder() + ")");
        Assumptions.assumeTrue(node() != null, "node is not on the PATH (the MCP reference server is a Node.js program)");
        return script;
    }

    /**
     * The official MCP conformance suite's command line ({@code @modelcontextprotocol/conformance}), run by the Node.js 22
     * the npm package {@code node} installs beside it (the suite needs 22+; the machine's may be older). Skips the test
     * when either is missing.
     */
    public static java.util.List<String> conformance() {
        Path folder = source();
        Path script = folder.resolve("node_modules/@modelcontextprotocol/conformance/dist/index.js");
        Path node22 = folder.resolve("node_modules/node/bin/node");
        Assumptions.assumeTrue(Files.isRegularFile(script),
                "@modelcontextprotocol/conformance is not installed (./clawfleet test installs it with npm into " + folder + ")");
        Assumptions.assumeTrue(Files.isExecutable(node22),
                "Node.js 22 (the npm package 'node') is not installed in " + folder + "; the conformance suite needs it");
        return java.util.List.of(node22.toString(), script.toString());
    }

    /**
     * Starts the reference server's Streamable HTTP transport ({@code node <script> streamableHttp}) on {@code port} of
     * loopback, its endpoint {@code http://127.0.0.1:<port>/mcp}; returns once it says it listens. The caller destroys
     * it. Skips the test when it cannot run.
     */
    public static Process everythingHttp(int port) throws Exception {
        String script = everything().toString();
        ProcessBuilder builder = new ProcessBuilder(node(), script, "streamableHttp").redirectOutput(ProcessBuilder.Redirect.DISCARD);
        builder.environment().put("PORT", String.valueOf(port));
        Process process = builder.start();
        java.util.concurrent.CompletableFuture<Void> listening = new java.util.concurrent.CompletableFuture<>();
        StringBuilder said = new StringBuilder();
        Thread reader = new Thread(() -> {
            try (java.io.BufferedReader lines = process.errorReader()) {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    said.append(line).append('\n');
                    if (line.contains("listening")) {
                        listening.complete(null);
                    }
                }
            } catch (IOException e) {
                // the process ended
            }
            listening.completeExceptionally(new IllegalStateException("the reference server exited: " + said));
        }, "server-everything-stderr");
        reader.setDaemon(true);
        reader.start();
        try {
            listening.get(20, java.util.concurrent.TimeUnit.SECONDS);
        } catch (Exception e) {
            process.destroyForcibly();
            throw e;
        }
        return process;
    }

    /** A free TCP port on loopback, for a peer to listen on. */
    public static int freePort() throws IOException {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
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
