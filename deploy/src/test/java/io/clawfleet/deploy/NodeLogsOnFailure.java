package io.clawfleet.deploy;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.stream.Stream;

/**
 * When a cluster test fails, prints what its nodes logged: the warnings and errors and the last
 * lines of each node's log. CI keeps only the build's output, and without the nodes' side a failure
 * of separate JVMs on a slower machine cannot be explained afterwards.
 */
final class NodeLogsOnFailure implements BeforeAllCallback, TestWatcher {

    private static final int WARNINGS = 30;
    private static final int LAST_LINES = 15;
    /** Where the cluster tests, the chaos run and the benchmark let their nodes log. */
    private static final List<Path> LOG_DIRS = List.of(TestJar.logs(), Path.of("target", "chaos"), Path.of("target", "bench-it"));

    @Override
    public void beforeAll(ExtensionContext context) {
        store(context).put("since", FileTime.fromMillis(System.currentTimeMillis()));
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        FileTime since = store(context).get("since", FileTime.class);
        StringBuilder out = new StringBuilder("---- node logs after the failure of " + context.getDisplayName()
                + " (" + cause + ") ----\n");
        for (Path dir : LOG_DIRS) {
            if (Files.isDirectory(dir)) {
                append(out, dir, since);
            }
        }
        System.out.print(out);
        System.out.flush();
    }

    private static void append(StringBuilder out, Path dir, FileTime since) {
        try (Stream<Path> logs = Files.walk(dir, 3)) {
            for (Path log : logs.filter(p -> p.toString().endsWith(".log")).sorted().toList()) {
                if (since != null && Files.getLastModifiedTime(log).compareTo(since) < 0) {
                    continue;
                }
                List<String> lines = Files.readAllLines(log);
                List<String> warnings = lines.stream().filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")).toList();
                out.append("== ").append(log.getFileName()).append(": ").append(lines.size()).append(" lines, ")
                        .append(warnings.size()).append(" warnings/errors; the last of them:\n");
                warnings.subList(Math.max(0, warnings.size() - WARNINGS), warnings.size())
                        .forEach(l -> out.append("  ").append(abbreviate(l)).append('\n'));
                out.append("   last lines:\n");
                lines.subList(Math.max(0, lines.size() - LAST_LINES), lines.size())
                        .forEach(l -> out.append("  ").append(abbreviate(l)).append('\n'));
            }
        } catch (IOException e) {
            out.append("(cannot read the node logs in ").append(dir.toAbsolutePath()).append(": ").append(e).append(")\n");
        }
    }

    private static String abbreviate(String line) {
        return line.length() <= 400 ? line : line.substring(0, 400) + "…";
    }

    private static ExtensionContext.Store store(ExtensionContext context) {
        return context.getRoot().getStore(ExtensionContext.Namespace.create(NodeLogsOnFailure.class, context.getRequiredTestClass()));
    }
}
