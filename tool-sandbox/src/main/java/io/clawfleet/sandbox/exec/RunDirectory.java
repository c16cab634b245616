package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.workspace.WorkspacePaths;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The private directory of one run: a copy of the workspace files the call carried (the only tree
 * the run may write), a home for temporary files, and the passwd and group files bubblewrap shows.
 * After the run, it tells which files were created, changed or removed, reading what the run left
 * without ever following a link it made, and is deleted.
 */
final class RunDirectory implements AutoCloseable {

    /** What a run left in its workspace copy. */
    record Changes(Map<String, String> changed, List<String> deleted, List<String> notes) {
    }

    /**
     * What a run's writable folders hold while it runs: bytes of regular files, and entries of any kind (folders and
     * links included), counted up to a cap; {@code tooDeep} when folders nest deeper than the walk goes.
     */
    record Usage(long bytes, long entries, boolean tooDeep) {
        boolean over(long maxBytes, long maxEntries) {
            return tooDeep || bytes > maxBytes || entries > maxEntries;
        }
    }

    /** Folders deeper than this stop the run: the walk holds one open directory per level. */
    static final int MAX_MEASURED_DEPTH = 128;
    private static final Set<OpenOption> READ_NO_FOLLOW = Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);

    private final Path root;
    /** Whether the writable parts were given to another uid (the node is root and can read anything). */
    private final boolean rootNode;

    private RunDirectory(Path root, boolean rootNode) {
        this.root = root;
        this.rootNode = rootNode;
    }

    /**
     * Creates the directory under {@code workRoot} with {@code files} (workspace path to content).
     *
     * @param uid owner to give the writable parts when the node is root, or -1 to leave them the node's
     * @throws IllegalArgumentException when a path is not a valid workspace path
     */
    static RunDirectory create(Path workRoot, Map<String, String> files, int uid, int gid) throws IOException {
        refuseFileFolderClashes(files.keySet());
        Files.createDirectories(workRoot);
        // Traversable (not listable) by the uid runs drop to; the run's own folder is unguessable.
        setMode(workRoot, "rwx--x--x");
        Path root = workRoot.resolve("run-" + UUID.randomUUID());
        Files.createDirectory(root);
        setMode(root, "rwx--x--x");
        RunDirectory dir = new RunDirectory(root, uid >= 0);
        try {
            Files.createDirectory(dir.workspace());
            Files.createDirectory(dir.home());
            for (Map.Entry<String, String> file : files.entrySet()) {
                dir.write(file.getKey(), file.getValue());
            }
            int visibleUid = uid >= 0 ? uid : currentUid();
            int visibleGid = gid >= 0 ? gid : visibleUid;
            Files.writeString(root.resolve("passwd"), "sandbox:x:" + visibleUid + ":" + visibleGid + ":sandbox:/tmp:/bin/sh\n");
            Files.writeString(root.resolve("group"), "sandbox:x:" + visibleGid + ":\n");
            Files.writeString(root.resolve("resolv.conf"), "nameserver " + EgressNamespace.DNS + "\n");
            if (uid >= 0) {
                dir.chownTree(uid, gid);
            }
        } catch (IOException | RuntimeException e) {
            dir.close();
            throw e;
        }
        return dir;
    }

    /**
     * A path that is a file and also the folder of another would fail the copy with an I/O error; it is
     * the call's fault, not the node's, so it must not count as a broken node.
     */
    private static void refuseFileFolderClashes(Set<String> paths) {
        for (String path : paths) {
            for (int slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
                if (paths.contains(path.substring(0, slash))) {
                    throw new IllegalArgumentException("'" + path.substring(0, slash) + "' is both a file and a folder among the files sent");
                }
            }
        }
    }

    Path root() {
        return root;
    }

    /** The copy of the workspace; bound at {@code /workspace} under bubblewrap. */
    Path workspace() {
        return root.resolve("workspace");
    }

    /** HOME and TMPDIR of a run without bubblewrap (with it, a private tmpfs is used). */
    Path home() {
        return root.resolve("home");
    }

    Path passwd() {
        return root.resolve("passwd");
    }

    Path group() {
        return root.resolve("group");
    }

    /** The resolv.conf of a run with egress: pasta's DNS forwarder ({@link EgressNamespace#DNS}). */
    Path resolvConf() {
        return root.resolve("resolv.conf");
    }

    /** The file or folder at a workspace path inside the copy; the path is checked, never trusted. */
    Path resolve(String workspacePath) {
        String normalized = WorkspacePaths.normalize(workspacePath);
        Path target = workspace().resolve(normalized).normalize();
        if (!target.startsWith(workspace())) {
            throw new IllegalArgumentException("'" + workspacePath + "' is outside the workspace");
        }
        return target;
    }

    private void write(String path, String content) throws IOException {
        if (!WorkspacePaths.normalize(path).equals(path)) {
            throw new IllegalArgumentException("'" + path + "' is not a canonical workspace path");
        }
        Path target = resolve(path);
        Files.createDirectories(target.getParent());
        Files.writeString(target, content, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
    }

    void makeExecutable(String workspacePath) throws IOException {
        setMode(resolve(workspacePath), "rwxr-xr-x");
    }

    /**
     * What the run created, changed and removed, compared with what it was given. Only regular,
     * singly-linked text files within the caps come back; links, binary files and files over a cap
     * are left out with a note.
     */
    Changes collect(Map<String, String> original, long maxTotalBytes, int maxFileBytes, int maxFiles) throws IOException {
        if (!rootNode) {
            restoreAccess();
        }
        Map<String, String> found = new TreeMap<>();
        List<String> notes = new ArrayList<>();
        long[] total = {0};
        try (DirectoryStream<Path> top = Files.newDirectoryStream(workspace())) {
            if (!(top instanceof SecureDirectoryStream<Path> secure)) {
                throw new IOException("this platform cannot read a directory without following links (no SecureDirectoryStream)");
            }
            walk(secure, "", 0, found, notes, original, new long[] {maxTotalBytes, maxFileBytes, maxFiles}, total);
        }
        Map<String, String> changed = new LinkedHashMap<>();
        found.forEach((path, content) -> {
            if (!content.equals(original.get(path))) {
                changed.put(path, content);
            }
        });
        List<String> deleted = new ArrayList<>();
        for (String path : new TreeMap<>(original).keySet()) {
            if (!found.containsKey(path) && !notes.stream().anyMatch(n -> n.startsWith(path + ":"))) {
                deleted.add(path);
            }
        }
        return new Changes(changed, deleted, notes);
    }

    /**
     * Measures the workspace and the home folder for the workspace quota while the run may still change them: links
     * are counted, never followed; what vanishes mid-walk is skipped; a folder the run closed to its owner (chmod 000)
     * is opened again, as {@link #collect} does; the walk stops once over a cap, so a run that made millions of files
     * costs one cap's worth of walking. Never throws: what cannot be read is not counted.
     */
    Usage usage(long maxBytes, long maxEntries) {
        long[] totals = {0, 0};
        boolean deep = false;
        for (Path top : List.of(workspace(), home())) {
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(top)) {
                deep = stream instanceof SecureDirectoryStream<Path> secure && measure(secure, 1, totals, maxBytes, maxEntries);
            } catch (IOException | java.nio.file.DirectoryIteratorException e) {
                // Gone (the run is over) or unreadable: nothing more to count there.
            }
            if (deep || totals[0] > maxBytes || totals[1] > maxEntries) {
                break;
            }
        }
        return new Usage(totals[0], totals[1], deep);
    }

    /** Adds up one folder; true when a folder under it is deeper than {@link #MAX_MEASURED_DEPTH}. */
    private boolean measure(SecureDirectoryStream<Path> dir, int depth, long[] totals, long maxBytes, long maxEntries) {
        try {
            for (Path entry : dir) {
                if (totals[0] > maxBytes || totals[1] > maxEntries) {
                    return false;
                }
                Path name = entry.getFileName();
                totals[1]++;
                BasicFileAttributes attrs;
                try {
                    attrs = dir.getFileAttributeView(name, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                            .readAttributes();
                } catch (IOException e) {
                    continue;
                }
                if (attrs.isRegularFile()) {
                    totals[0] += attrs.size();
                } else if (attrs.isDirectory()) {
                    if (depth >= MAX_MEASURED_DEPTH) {
                        return true;
                    }
                    try (SecureDirectoryStream<Path> child = openToMeasure(dir, name)) {
                        if (measure(child, depth + 1, totals, maxBytes, maxEntries)) {
                            return true;
                        }
                    } catch (IOException e) {
                        // Removed, or replaced by something else, since it was listed.
                    }
                }
            }
        } catch (java.nio.file.DirectoryIteratorException e) {
            // The folder went away while it was read.
        }
        return false;
    }

    private SecureDirectoryStream<Path> openToMeasure(SecureDirectoryStream<Path> dir, Path name) throws IOException {
        try {
            return dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.AccessDeniedException e) {
            if (rootNode) {
                throw e;
            }
            // The node owns the run's files (no root node): it takes its access back, through the open parent, never a link.
            dir.getFileAttributeView(name, java.nio.file.attribute.PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                    .setPermissions(PosixFilePermissions.fromString("rwx------"));
            return dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS);
        }
    }

    private void walk(SecureDirectoryStream<Path> dir, String prefix, int depth, Map<String, String> found, List<String> notes,
                      Map<String, String> original, long[] caps, long[] total) throws IOException {
        for (Path entry : dir) {
            Path name = entry.getFileName();
            String path = prefix + name;
            BasicFileAttributes attrs = dir.getFileAttributeView(name, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                    .readAttributes();
            if (attrs.isSymbolicLink()) {
                notes.add(path + ": a symbolic link, not kept");
            } else if (attrs.isDirectory()) {
                if (depth + 1 >= WorkspacePaths.MAX_DEPTH) {
                    notes.add(path + ": deeper than " + WorkspacePaths.MAX_DEPTH + " levels, not kept");
                    continue;
                }
                try (SecureDirectoryStream<Path> child = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                    walk(child, path + "/", depth + 1, found, notes, original, caps, total);
                }
            } else if (!attrs.isRegularFile()) {
                notes.add(path + ": not a regular file, not kept");
            } else {
                readFile(dir, name, path, attrs.size(), found, notes, original, caps, total);
            }
        }
    }

    private void readFile(SecureDirectoryStream<Path> dir, Path name, String path, long size, Map<String, String> found,
                          List<String> notes, Map<String, String> original, long[] caps, long[] total) throws IOException {
        String canonical;
        try {
            canonical = WorkspacePaths.normalize(path);
        } catch (IllegalArgumentException e) {
            notes.add(path + ": not a valid workspace path, not kept (" + e.getMessage() + ")");
            return;
        }
        if (size > caps[1]) {
            notes.add(path + ": larger than " + caps[1] + " bytes, not kept");
            return;
        }
        if (found.size() >= caps[2]) {
            notes.add(path + ": more than " + caps[2] + " files, not kept");
            return;
        }
        byte[] bytes = new byte[(int) size];
        try (SeekableByteChannel channel = dir.newByteChannel(name, READ_NO_FOLLOW)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining() && channel.read(buffer) > 0) {
                // reads up to the size seen; a file that grew is cut there, one that shrank is short
            }
            if (buffer.hasRemaining()) {
                bytes = java.util.Arrays.copyOf(bytes, buffer.position());
            }
        }
        if (hardLinked(path)) {
            notes.add(path + ": a hard link, not kept");
            return;
        }
        String text = text(bytes);
        if (text == null) {
            notes.add(path + ": not UTF-8 text, not kept (the workspace holds text files)");
            return;
        }
        if (!text.equals(original.get(canonical)) && total[0] + bytes.length > caps[0]) {
            notes.add(path + ": over the " + caps[0] + "-byte limit of files sent back, not kept");
            return;
        }
        if (!text.equals(original.get(canonical))) {
            total[0] += bytes.length;
        }
        found.put(canonical, text);
    }

    private boolean hardLinked(String path) {
        try {
            Object links = Files.getAttribute(workspace().resolve(path), "unix:nlink", LinkOption.NOFOLLOW_LINKS);
            return links instanceof Number n && n.intValue() > 1;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return false;
        }
    }

    /** Strict UTF-8 without NUL, or null. */
    static String text(byte[] bytes) {
        try {
            String text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
            return text.indexOf('\0') >= 0 ? null : text;
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /**
     * A run may have taken away its own access (chmod 000). The node, owner of the files when it is not
     * root, gives itself access back before reading; links are never followed.
     */
    private void restoreAccess() throws IOException {
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                setMode(dir, "rwx------");
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                if (attrs.isRegularFile()) {
                    setMode(file, "rw-------");
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private void chownTree(int uid, int gid) throws IOException {
        for (Path top : List.of(workspace(), home())) {
            try (var walk = Files.walk(top)) {
                for (Path path : walk.toList()) {
                    Files.setAttribute(path, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
                    Files.setAttribute(path, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
                }
            }
        }
        setMode(passwd(), "rw-r--r--");
        setMode(group(), "rw-r--r--");
        setMode(resolvConf(), "rw-r--r--");
    }

    private static void setMode(Path path, String mode) throws IOException {
        if (!Files.isSymbolicLink(path)) {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(mode));
        }
    }

    private static int currentUid() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue();
        } catch (IOException | UnsupportedOperationException e) {
            return 65_534;
        }
    }

    /** Deletes the directory; links are removed, never followed. */
    @Override
    public void close() {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try {
            if (!rootNode) {
                restoreAccess();
            }
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.delete(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.delete(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove the run directory " + root, e);
        }
    }
}
