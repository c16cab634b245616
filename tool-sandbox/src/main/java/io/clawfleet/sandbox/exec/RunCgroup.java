package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.config.ClawfleetConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Per-run cgroup v2 limits where the host delegates a cgroup v2 subtree to the node: memory of the whole run (every
 * process, and the tmpfs pages it wrote, which RLIMIT_DATA never sees), its processes together, and its CPU share.
 * rlimits stay on regardless; they are per process. At start the node moves itself into a leaf ({@link #LEAF}),
 * because cgroup v2 lets only leaves hold processes, and enables the controllers for its children; each run then gets
 * a child of its own, which it enters before anything else runs ({@link Run#prefix()}) and which is killed and removed
 * after it. Without delegation (cgroup v1, a read-only /sys/fs/cgroup, missing controllers) it is off and says why.
 */
public final class RunCgroup {

    /** The leaf the node moves itself into; a node started again in it (or a second sandbox in one JVM) uses its parent. */
    static final String LEAF = "clawfleet-node";
    private static final List<String> CONTROLLERS = List.of("memory", "pids", "cpu");
    private static final long CPU_PERIOD_US = 100_000;
    /** bwrap (outer and the namespace's init) and pasta with its child run in the run's cgroup beside the run. */
    private static final int HELPER_PROCESSES = 4;
    private static final int REMOVE_ATTEMPTS = 40;
    private static final long REMOVE_PAUSE_MS = 25;
    private static final Logger LOG = LoggerFactory.getLogger(RunCgroup.class);

    /** The node's delegated cgroup (parent of its leaf and of the runs' cgroups), or null when off. */
    private final Path base;
    private final String reason;
    private final long memoryBytes;
    private final int pids;
    private final String cpuMax;

    private RunCgroup(Path base, String reason, long memoryBytes, int pids, String cpuMax) {
        this.base = base;
        this.reason = reason;
        this.memoryBytes = memoryBytes;
        this.pids = pids;
        this.cpuMax = cpuMax;
    }

    /** No cgroup limits, for {@code reason}. */
    static RunCgroup off(String reason) {
        return new RunCgroup(null, Objects.requireNonNull(reason), 0, 0, null);
    }

    /** As {@link #detect(ClawfleetConfig.Sandbox, Path, Path, long)} on this host, for this JVM. */
    static RunCgroup detect(ClawfleetConfig.Sandbox config) {
        return detect(config, Path.of("/sys/fs/cgroup"), Path.of("/proc/self/cgroup"), ProcessHandle.current().pid());
    }

    /**
     * Finds whether the node may give runs cgroups of their own and, when it may, sets its delegated cgroup up (moves
     * the node's processes into {@link #LEAF}, enables memory, pids and cpu for the children). Blocking, a few file
     * operations.
     *
     * @param root       where cgroup2 is mounted ({@code /sys/fs/cgroup})
     * @param selfCgroup the node's {@code /proc/self/cgroup}
     * @param pid        the node's process id, moved into the leaf
     * @throws IllegalStateException when {@code sandbox.cgroups} is {@code required} and they are not available
     */
    static RunCgroup detect(ClawfleetConfig.Sandbox config, Path root, Path selfCgroup, long pid) {
        if ("off".equals(config.cgroups())) {
            return off("sandbox.cgroups is off");
        }
        String problem;
        Path base = null;
        try {
            base = delegated(root, selfCgroup);
            problem = base == null ? null : setUp(base, pid);
        } catch (Problem p) {
            problem = p.getMessage();
        }
        if (problem != null) {
            if ("required".equals(config.cgroups())) {
                throw new IllegalStateException("sandbox.cgroups is required, but this host gives the node no cgroup v2 "
                        + "delegation: " + problem + " (docs/SANDBOX.md, \"Cgroup limits\")");
            }
            return off("no cgroup v2 delegation: " + problem);
        }
        long quota = Math.max(1_000, Math.round(config.cgroupCpus() * CPU_PERIOD_US));
        return new RunCgroup(base, null, config.cgroupMemoryBytes(), config.maxProcesses() + HELPER_PROCESSES,
                quota + " " + CPU_PERIOD_US);
    }

    /** Why detection stopped. */
    private static final class Problem extends Exception {
        Problem(String message) {
            super(message, null, false, false);
        }
    }

    /** The node's cgroup directory when it is a writable cgroup v2 directory with the controllers runs need. */
    private static Path delegated(Path root, Path selfCgroup) throws Problem {
        String path = null;
        try {
            for (String line : Files.readAllLines(selfCgroup)) {
                if (line.startsWith("0::")) {
                    path = line.substring(3).strip();
                }
            }
        } catch (IOException e) {
            throw new Problem("cannot read " + selfCgroup + ": " + e.getMessage());
        }
        if (path == null) {
            throw new Problem(selfCgroup + " has no cgroup v2 entry (0::); the host uses cgroup v1");
        }
        if (!Files.isRegularFile(root.resolve("cgroup.controllers"))) {
            throw new Problem(root + " is not a cgroup v2 mount (no cgroup.controllers: cgroup v1 or a hybrid hierarchy)");
        }
        Path dir = root.resolve(path.replaceFirst("^/+", "")).normalize();
        if (!dir.startsWith(root)) {
            throw new Problem("the node's cgroup " + path + " is outside " + root);
        }
        if (dir.getFileName() != null && dir.getFileName().toString().equals(LEAF) && !dir.equals(root)) {
            dir = dir.getParent();
        }
        for (String file : List.of("cgroup.procs", "cgroup.subtree_control")) {
            if (!Files.isWritable(dir) || !Files.isWritable(dir.resolve(file))) {
                throw new Problem("the node's cgroup " + dir + " is not writable by the node (its " + file + ")");
            }
        }
        List<String> available;
        try {
            available = List.of(Files.readString(dir.resolve("cgroup.controllers")).strip().split("\\s+"));
        } catch (IOException e) {
            throw new Problem("cannot read " + dir.resolve("cgroup.controllers") + ": " + e.getMessage());
        }
        List<String> missing = CONTROLLERS.stream().filter(c -> !available.contains(c)).toList();
        if (!missing.isEmpty()) {
            throw new Problem("the node's cgroup " + dir + " lacks the controllers " + String.join(", ", missing)
                    + " (cgroup.controllers: " + String.join(" ", available) + ")");
        }
        return dir;
    }

    /**
     * Moves every process of {@code base} (the node, and a shell that started it in a container) into the leaf, then
     * enables the controllers for children: a cgroup with processes of its own cannot have them enabled. Null when done.
     */
    private static String setUp(Path base, long pid) {
        Path leaf = base.resolve(LEAF);
        try {
            if (!Files.isDirectory(leaf)) {
                Files.createDirectory(leaf);
            }
            List<String> members = new ArrayList<>(List.of(Long.toString(pid)));
            members.addAll(Files.readAllLines(base.resolve("cgroup.procs")).stream().map(String::strip)
                    .filter(s -> !s.isEmpty() && !s.equals(Long.toString(pid))).toList());
            for (String member : members) {
                try {
                    Files.writeString(leaf.resolve("cgroup.procs"), member + "\n");
                } catch (IOException e) {
                    // It exited meanwhile, or is a kernel thread: the controllers below say whether it mattered.
                    LOG.debug("cannot move a process into the node's cgroup leaf [pid: {}]: {}", member, e.toString());
                }
            }
            Files.writeString(base.resolve("cgroup.subtree_control"), "+memory +pids +cpu\n");
            return null;
        } catch (IOException e) {
            return "cannot set up " + base + " for runs (move the node into " + LEAF + ", enable +memory +pids +cpu): "
                    + e.getMessage();
        }
    }

    /** Whether runs get cgroup limits. */
    public boolean enabled() {
        return base != null;
    }

    /** Why runs get no cgroup limits, or null when they do. */
    public String reason() {
        return reason;
    }

    /** One line for the node's log at start. */
    public String summary() {
        return enabled()
                ? "cgroup limits: on [cgroup: " + base + ", memory: " + memoryBytes + " bytes, pids: " + pids + ", cpu.max: "
                + cpuMax + "]"
                : "cgroup limits: off (" + reason + "); runs are limited by their rlimits only";
    }

    /** The facts for /readyz. */
    public Map<String, Object> describe() {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("cgroups", enabled() ? "on" : "off");
        if (!enabled()) {
            facts.put("cgroupsReason", reason);
        }
        return facts;
    }

    /** Makes the cgroup of run {@code name} (a child of the node's cgroup) with its limits written. */
    Run open(String name) throws IOException {
        if (!enabled()) {
            throw new IllegalStateException("cgroup limits are off: " + reason);
        }
        Path dir = base.resolve(name);
        if (!dir.getParent().equals(base) || name.equals(LEAF)) {
            throw new IllegalArgumentException("not a run's cgroup name: " + name);
        }
        Files.createDirectory(dir);
        Run run = new Run(dir);
        try {
            Files.writeString(dir.resolve("memory.max"), memoryBytes + "\n");
            Files.writeString(dir.resolve("pids.max"), pids + "\n");
            Files.writeString(dir.resolve("cpu.max"), cpuMax + "\n");
            try {
                // Without it, memory past memory.max would go to swap instead of ending the run.
                Files.writeString(dir.resolve("memory.swap.max"), "0\n");
            } catch (IOException e) {
                LOG.debug("no memory.swap.max in {} (no swap accounting): {}", dir, e.toString());
            }
        } catch (IOException | RuntimeException e) {
            run.finish();
            throw e;
        }
        return run;
    }

    /** The cgroup of one run; {@link #finish()} (or close) kills what is left in it and removes it. */
    static final class Run implements AutoCloseable {

        private final Path dir;
        private boolean finished;
        private boolean oomKilled;

        private Run(Path dir) {
            this.dir = dir;
        }

        Path dir() {
            return dir;
        }

        /**
         * What the run's command starts with: a shell that writes its own pid into the cgroup and becomes the rest of
         * the command. It must come before the node drops root (the cgroup is the node's) and before bwrap, setsid or
         * pasta, so everything the run starts is inside; a failed write fails the run instead of running it unlimited.
         */
        List<String> prefix() {
            return List.of("/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", dir.toString());
        }

        /**
         * Kills every process still in the cgroup (a daemon the run left behind included), removes the cgroup, and
         * tells whether the kernel's OOM killer ended a process of the run for its memory limit. Idempotent.
         */
        synchronized boolean finish() {
            if (finished) {
                return oomKilled;
            }
            finished = true;
            Path kill = dir.resolve("cgroup.kill");
            if (Files.exists(kill)) {
                try {
                    Files.writeString(kill, "1\n");
                } catch (IOException e) {
                    LOG.warn("cannot kill what is left of a run [cgroup: {}]: {}", dir, e.toString());
                }
            }
            oomKilled = oomKills(dir) > 0;
            remove();
            return oomKilled;
        }

        @Override
        public void close() {
            finish();
        }

        /** rmdir; busy while killed processes are still exiting, so it is tried again for about a second. */
        private void remove() {
            for (int attempt = 1; ; attempt++) {
                try {
                    Files.deleteIfExists(dir);
                    return;
                } catch (DirectoryNotEmptyException e) {
                    if (!removePlainFiles()) {
                        LOG.warn("cannot remove a run's cgroup [cgroup: {}]: {}", dir, e.toString());
                        return;
                    }
                } catch (FileSystemException e) {
                    if (attempt >= REMOVE_ATTEMPTS) {
                        LOG.warn("cannot remove a run's cgroup [cgroup: {}]: {}", dir, e.toString());
                        return;
                    }
                    try {
                        Thread.sleep(REMOVE_PAUSE_MS);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        LOG.warn("interrupted while removing a run's cgroup [cgroup: {}]", dir);
                        return;
                    }
                } catch (IOException e) {
                    LOG.warn("cannot remove a run's cgroup [cgroup: {}]: {}", dir, e.toString());
                    return;
                }
            }
        }

        /**
         * In a cgroup2 file system rmdir takes a cgroup's interface files with it, so "not empty" means a child cgroup
         * (which a run cannot make: it never sees the file system). Elsewhere (a test's tree of plain files) they go first.
         */
        private boolean removePlainFiles() {
            try {
                if ("cgroup2".equals(Files.getFileStore(dir).type())) {
                    return false;
                }
                try (var files = Files.list(dir)) {
                    for (Path file : files.toList()) {
                        Files.delete(file);
                    }
                }
                return true;
            } catch (IOException e) {
                return false;
            }
        }
    }

    /** {@code oom_kill} of the cgroup's memory.events: processes the OOM killer ended for the cgroup's limit. */
    static long oomKills(Path dir) {
        try {
            for (String line : Files.readAllLines(dir.resolve("memory.events"))) {
                String[] fields = line.strip().split("\\s+");
                if (fields.length == 2 && fields[0].equals("oom_kill")) {
                    return Long.parseLong(fields[1]);
                }
            }
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException | NumberFormatException e) {
            LOG.warn("cannot read a run's memory events [cgroup: {}]: {}", dir, e.toString());
        }
        return 0;
    }
}
