package io.clawfleet.deploy;

import io.clawfleet.shared.workspace.WorkspacePaths;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The local side of {@code clawfleet workspace pull|push}: a folder whose files mirror a workspace.
 * Dot-folders (.git, .idea, ...) are not part of it; dot-files such as .mcp.json are.
 */
final class WorkspaceFolder {

    /** A local file, or why it cannot be pushed. */
    record LocalFile(Path file, String problem) {
    }

    private final Path root;

    WorkspaceFolder(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    Path root() {
        return root;
    }

    /** Whether the folder holds anything besides dot-folders. */
    boolean hasFiles() throws IOException {
        if (!Files.isDirectory(root)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(root)) {
            return entries.anyMatch(entry -> !(Files.isDirectory(entry) && isDot(entry)));
        }
    }

    /** Every file under the folder by workspace path, sorted; a file that cannot be one says why. */
    Map<String, LocalFile> files() throws IOException {
        Map<String, LocalFile> files = new TreeMap<>();
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                return !dir.equals(root) && isDot(dir) ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                if (file.getFileName().toString().equals(".DS_Store")) {
                    return FileVisitResult.CONTINUE;
                }
                String relative = relative(file);
                if (!attrs.isRegularFile()) {
                    files.put(relative, new LocalFile(file, "not a regular file"));
                    return FileVisitResult.CONTINUE;
                }
                try {
                    files.put(WorkspacePaths.normalize(relative), new LocalFile(file, null));
                } catch (IllegalArgumentException e) {
                    files.put(relative, new LocalFile(file, e.getMessage()));
                }
                return FileVisitResult.CONTINUE;
            }
        });
        return files;
    }

    /** The file's text; IOException when it is not UTF-8 (the workspace holds text only). */
    static String read(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new IOException("not UTF-8 text; the workspace holds text files only");
        }
    }

    /** Writes a workspace file under the folder, refusing any path that would land outside it. */
    Path write(String workspacePath, String content) throws IOException {
        Path target = root.resolve(WorkspacePaths.normalize(workspacePath)).normalize();
        if (!target.startsWith(root)) {
            throw new IOException("'" + workspacePath + "' would be written outside " + root);
        }
        Files.createDirectories(target.getParent());
        Files.writeString(target, content, StandardCharsets.UTF_8);
        return target;
    }

    /** Whether a workspace path lies in a dot-folder, which push neither uploads nor prunes. */
    static boolean inDotFolder(String workspacePath) {
        String[] segments = workspacePath.split("/");
        for (int i = 0; i < segments.length - 1; i++) {
            if (segments[i].startsWith(".")) {
                return true;
            }
        }
        return false;
    }

    private String relative(Path file) {
        StringBuilder out = new StringBuilder();
        for (Path part : root.relativize(file)) {
            if (!out.isEmpty()) {
                out.append('/');
            }
            out.append(part);
        }
        return out.toString();
    }

    private static boolean isDot(Path path) {
        return path.getFileName() != null && path.getFileName().toString().startsWith(".");
    }
}
