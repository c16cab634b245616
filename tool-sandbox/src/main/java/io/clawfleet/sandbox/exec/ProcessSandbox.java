package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.config.ClawfleetConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs one untrusted program in a child process, never in the JVM: under bubblewrap when the host
 * has it (new namespaces, no network unless granted, read-only system, private /tmp, the run's copy
 * of its files as the only writable tree), always with rlimits (CPU time, data memory, processes,
 * file size, open files), a wall-clock limit that kills every process of the run, output caps, a quota on what it
 * writes to its run directory, a cgroup of its own where the host delegates cgroup v2 ({@link RunCgroup}), and an
 * environment that holds only what it is given. A program that serves many exchanges (a warm MCP server)
 * is started the same way and kept running ({@link #open}). Blocking: call it from a thread that may block.
 */
public final class ProcessSandbox {

    /** What to run. */
    public record Spec(List<String> argv, Map<String, String> files, String workdir, Map<String, String> env, byte[] stdin,
                       boolean network, long timeoutMs, String executable) {

        /**
         * @param argv       the program and its arguments; a bare program name is looked up on the run's PATH
         * @param files      workspace files to copy in, path to content
         * @param workdir    the working directory, a workspace path; "" for the workspace root
         * @param env        the run's whole environment besides PATH, HOME, TMPDIR, LANG and USER
         * @param executable a workspace path to mark executable first (a script with a #! line), or null
         */
        public Spec {
            argv = List.copyOf(argv);
            files = Map.copyOf(files);
            env = Map.copyOf(env);
            stdin = stdin == null ? new byte[0] : stdin.clone();
            Objects.requireNonNull(workdir, "workdir");
        }
    }

    /**
     * What happened.
     *
     * @param exitCode      the program's exit code (128 + signal when killed)
     * @param timedOut      it ran past its wall-clock limit and was killed
     * @param outputLimited it wrote more than the output cap and was stopped
     */
    public record Result(int exitCode, boolean timedOut, boolean outputLimited, String stdout, String stderr,
                         Map<String, String> changed, List<String> deleted, List<String> notes, long millis) {
    }

    /**
     * A conversation with a running program over its stdin and stdout, in place of fixed input and captured
     * output (an MCP server speaks JSON-RPC this way). It runs on a thread of its own; when it returns, or at
     * the run's wall-clock limit, the program and everything it started are killed. What the exchange found
     * is the dialogue's to keep; the stdout it reads counts against the output cap like any run's.
     */
    @FunctionalInterface
    public interface Dialogue {
        /** Blocking. A read fails with an {@link IOException} once the program writes past the output cap. */
        void talk(OutputStream stdin, InputStream stdout);
    }

    private static final Logger LOG = LoggerFactory.getLogger(ProcessSandbox.class);
    /** How long a program that closed its output may take to exit by itself, so its own exit code is seen. */
    private static final long EXIT_GRACE_MS = 500;
    private static final String INSIDE = "/workspace";
    private static final String PATH = "/usr/local/bin:/usr/bin:/bin";
    private static final long READER_GRACE_MS = 2_000;
    private static final Set<String> RESERVED_ENV = Set.of("PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL");
    /** How often a running run's directory is measured against the workspace quota. */
    private static final long QUOTA_CHECK_MS = 150;

    private final HostSupport host;
    private final ClawfleetConfig.Sandbox config;
    private final Path workRoot;
    private final RunCgroup cgroups;
    private final Set<Process> running = ConcurrentHashMap.newKeySet();
    /** Runs in a network namespace of their own: pasta leads their process group (EgressNamespace). */
    private final Set<Process> grouped = ConcurrentHashMap.newKeySet();

    /** The seccomp program's file in the node's temporary folder, written on first use. */
    private volatile Path seccomp;

    /**
     * @throws IllegalStateException when {@code sandbox.cgroups} is {@code required} and this host does not delegate
     *                               cgroup v2 to the node
     */
    public ProcessSandbox(HostSupport host, ClawfleetConfig.Sandbox config, Path workRoot) {
        this(host, config, workRoot, host.isolation() == Isolation.NONE && !"required".equals(config.cgroups())
                ? RunCgroup.off("this node runs no programs") : RunCgroup.detect(config));
    }

    ProcessSandbox(HostSupport host, ClawfleetConfig.Sandbox config, Path workRoot, RunCgroup cgroups) {
        this.host = Objects.requireNonNull(host);
        this.config = Objects.requireNonNull(config);
        this.workRoot = Objects.requireNonNull(workRoot);
        this.cgroups = Objects.requireNonNull(cgroups);
        if (host.isolation() != Isolation.NONE) {
            LOG.info("sandbox {}", cgroups.summary());
        }
    }

    /** Whether runs get cgroup limits here, and why not; {@link RunCgroup#describe()} is for /readyz. */
    public RunCgroup cgroups() {
        return cgroups;
    }

    /**
     * The seccomp filter's file ({@link SeccompFilter}), written once per node into the temporary folder, readable by
     * the run's user (it holds nothing secret); null on an architecture without a filter.
     */
    Path seccompFile() throws IOException {
        if (!SeccompFilter.supported()) {
            return null;
        }
        Path file = seccomp;
        if (file == null) {
            synchronized (this) {
                file = seccomp;
                if (file == null) {
                    byte[] program = SeccompFilter.program();
                    // Not under the work root (runs' folders only); in a folder every run's user can traverse.
                    file = java.nio.file.Files.createTempFile("clawfleet-seccomp-", ".bpf");
                    java.nio.file.Files.write(file, program);
                    java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
                    file.toFile().deleteOnExit();
                    seccomp = file;
                }
            }
        }
        return file;
    }

    public Isolation isolation() {
        return host.isolation();
    }

    /**
     * Runs the program to its end, its limit or its output cap.
     *
     * @throws IllegalStateException when this host cannot run processes ({@link Isolation#NONE})
     * @throws IllegalArgumentException when a file path or environment name is not acceptable
     * @throws SetupFailure when the node could not set the run up, so the program never started
     * @throws IOException when the node failed after the program started (reading what it left)
     */
    public Result run(Spec spec) throws IOException, InterruptedException {
        return run(spec, null);
    }

    /**
     * As {@link #run(Spec)}, with {@code dialogue} (when not null) talking to the program instead of
     * {@link Spec#stdin()} and the captured stdout; the result's stdout is then empty.
     */
    public Result run(Spec spec, Dialogue dialogue) throws IOException, InterruptedException {
        long started = System.nanoTime();
        try (RunDirectory dir = directory(spec); RunCgroup.Run cgroup = cgroup(dir)) {
            Process process = start(spec, dir, workdir(spec, dir), cgroup);
            QuotaWatch quota = new QuotaWatch(dir, process);
            Execution execution;
            try {
                execution = execute(process, spec, dialogue);
            } finally {
                quota.close();
            }
            // Read once the watch is over: what it found as the run ended by itself counts too.
            String overQuota = quota.exceeded();
            boolean oom = cgroup != null && cgroup.finish();
            checkSandboxStarted(execution.exitCode, execution.stderr.text(), spec);
            RunDirectory.Changes changes = dir.collect(spec.files(), config.maxTransferBytes(),
                    (int) Math.min(io.clawfleet.shared.store.WorkspaceStore.MAX_FILE_BYTES, config.maxTransferBytes()),
                    io.clawfleet.shared.store.WorkspaceStore.MAX_FILES);
            List<String> notes = new ArrayList<>();
            String stderr = withEgressNote(execution.stderr.text(), spec);
            if (overQuota != null) {
                notes.add(overQuota);
                stderr = withSandboxLine(stderr, overQuota);
            }
            if (oom) {
                String note = "the run was killed by the memory limit of its cgroup (sandbox.cgroupMemoryBytes, "
                        + config.cgroupMemoryBytes() + " bytes)";
                notes.add(note);
                stderr = withSandboxLine(stderr, note);
            }
            notes.addAll(changes.notes());
            return new Result(execution.exitCode, execution.timedOut, execution.limited(), execution.stdout.text(), stderr,
                    changes.changed(), changes.deleted(), notes, (System.nanoTime() - started) / 1_000_000);
        }
    }

    /** The run's cgroup, named as its directory, or null where the host gives runs none. */
    private RunCgroup.Run cgroup(RunDirectory dir) throws SetupFailure {
        if (!cgroups.enabled()) {
            return null;
        }
        try {
            return cgroups.open(dir.root().getFileName().toString());
        } catch (IOException e) {
            throw new SetupFailure("cannot make the run's cgroup: " + e, e);
        }
    }

    /**
     * Measures a run's directory every {@link #QUOTA_CHECK_MS} while its program is alive and kills the run, as its wall
     * clock would, once it holds more than {@code sandbox.maxWorkspaceBytes} or {@code sandbox.maxWorkspaceFiles}:
     * RLIMIT_FSIZE caps each file, not how many a run writes, and the node's disk is shared by every run.
     */
    private final class QuotaWatch implements AutoCloseable {

        private final Thread thread;
        private volatile String exceeded;

        QuotaWatch(RunDirectory dir, Process process) {
            thread = Thread.ofVirtual().name("sandbox-quota").start(() -> watch(dir, process));
        }

        private void watch(RunDirectory dir, Process process) {
            try {
                while (!process.waitFor(QUOTA_CHECK_MS, TimeUnit.MILLISECONDS)) {
                    RunDirectory.Usage usage = dir.usage(config.maxWorkspaceBytes(), config.maxWorkspaceFiles());
                    if (usage.over(config.maxWorkspaceBytes(), config.maxWorkspaceFiles())) {
                        exceeded = describe(usage);
                        LOG.warn("a run went over its workspace quota and was stopped [pid: {}, bytes: {}, entries: {}]",
                                process.pid(), usage.bytes(), usage.entries());
                        kill(process);
                        return;
                    }
                }
            } catch (InterruptedException e) {
                // The run is over.
            }
        }

        private String describe(RunDirectory.Usage usage) {
            if (usage.tooDeep()) {
                return "the run nested folders deeper than " + RunDirectory.MAX_MEASURED_DEPTH
                        + " levels in its workspace and was stopped";
            }
            return usage.bytes() > config.maxWorkspaceBytes()
                    ? "the run wrote more than " + config.maxWorkspaceBytes() + " bytes to its workspace and was stopped "
                    + "(sandbox.maxWorkspaceBytes)"
                    : "the run made more than " + config.maxWorkspaceFiles() + " files and folders in its workspace and was "
                    + "stopped (sandbox.maxWorkspaceFiles)";
        }

        /** Why the run was stopped, or null when it kept within the quota. */
        String exceeded() {
            return exceeded;
        }

        @Override
        public void close() throws InterruptedException {
            thread.interrupt();
            thread.join(READER_GRACE_MS);
        }
    }

    /** {@code stderr} with a line of the node's own after it. */
    private static String withSandboxLine(String stderr, String note) {
        return stderr + (stderr.isEmpty() || stderr.endsWith("\n") ? "" : "\n") + "[sandbox: " + note + "]\n";
    }

    /**
     * Starts a program that outlives one exchange (a warm MCP server) in the same isolation as every run: its run
     * directory, bubblewrap, the uid drop, the rlimits, egress only as {@link Spec#network()} and the node allow. The
     * caller talks to it over the returned {@link LongRun} and closes it; {@link #stopAll} kills it too. Its wall
     * clock is {@code lifeMs}, not {@link Spec#timeoutMs()} or {@code sandbox.maxTimeoutMs}: each exchange is the
     * caller's to bound. Its stdout counts against the output cap per message, its stderr keeps only a tail.
     *
     * @throws IllegalStateException when this host cannot run processes ({@link Isolation#NONE})
     * @throws IllegalArgumentException when a file path or environment name is not acceptable
     * @throws SetupFailure when the node could not set the run up, so the program never started
     */
    public LongRun open(Spec spec, long lifeMs) throws SetupFailure {
        RunDirectory dir = directory(spec);
        RunCgroup.Run cgroup = null;
        try {
            cgroup = cgroup(dir);
            Process process = start(spec, dir, workdir(spec, dir), cgroup);
            running.add(process);
            LongRun run = new LongRun(this, process, dir, spec, config.maxOutputBytes(), lifeMs);
            // Both end with the program: the quota watch on its own, the cgroup (and what is left in it) once it exits.
            new QuotaWatch(dir, process);
            if (cgroup != null) {
                RunCgroup.Run own = cgroup;
                process.onExit().thenRunAsync(() -> {
                    if (own.finish()) {
                        LOG.warn("a long run was killed by the memory limit of its cgroup [pid: {}]", process.pid());
                    }
                }, Thread::startVirtualThread);
            }
            return run;
        } catch (SetupFailure | RuntimeException e) {
            if (cgroup != null) {
                cgroup.finish();
            }
            dir.close();
            throw e;
        }
    }

    private RunDirectory directory(Spec spec) throws SetupFailure {
        if (host.isolation() == Isolation.NONE) {
            throw new IllegalStateException("this sandbox node cannot run programs: " + host.reason());
        }
        int uid = host.root() ? config.runAsUid() : -1;
        int gid = host.root() ? config.runAsGid() : -1;
        try {
            return RunDirectory.create(workRoot, spec.files(), uid, gid);
        } catch (IOException e) {
            throw new SetupFailure("cannot prepare a run directory under " + workRoot + ": " + e, e);
        }
    }

    private static Path workdir(Spec spec, RunDirectory dir) {
        Path workdir = spec.workdir().isEmpty() ? dir.workspace() : dir.resolve(spec.workdir());
        if (!java.nio.file.Files.isDirectory(workdir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("the working directory '" + spec.workdir() + "' is not among the files sent");
        }
        return workdir;
    }

    private Process start(Spec spec, RunDirectory dir, Path workdir, RunCgroup.Run cgroup) throws SetupFailure {
        try {
            if (spec.executable() != null) {
                dir.makeExecutable(spec.executable());
            }
            ProcessBuilder builder = new ProcessBuilder(command(spec, dir, cgroup)).directory(
                    (host.isolation() == Isolation.BUBBLEWRAP ? dir.root() : workdir).toFile());
            builder.environment().clear();
            builder.environment().putAll(environment(spec, dir));
            Process process = builder.start();
            if (spec.network() && egressIsolated()) {
                grouped.add(process);
            }
            return process;
        } catch (IOException e) {
            throw new SetupFailure("cannot start a sandboxed process: " + e.getMessage(), e);
        }
    }

    /**
     * A sandbox program that stopped working after the node started (user namespaces turned off, a
     * package upgrade) fails every run with its own message and exit code, which would otherwise look
     * like the command's. A run can print the same words, so only a failing probe of the sandbox, which
     * no run controls, makes it a failure of the node; the probe costs a few milliseconds, and only
     * runs that failed this way pay it.
     */
    void checkSandboxStarted(int exitCode, String stderr, Spec spec) throws SetupFailure {
        boolean egress = spec.network() && egressIsolated();
        // The rules script says so after ip's own words; pasta's complaints come first ("Failed to ...", "Couldn't ...").
        boolean egressBroken = egress && (stderr.contains(EgressNamespace.SETUP_FAILED) || stderr.startsWith("Failed to ")
                || stderr.startsWith("Couldn't "));
        if (exitCode == 0 || !(stderr.startsWith("bwrap: ") || stderr.startsWith("setpriv: ") || egressBroken)) {
            return;
        }
        String problem = host.recheck(config.runAsUid(), config.runAsGid());
        if (problem == null && egress) {
            problem = host.recheckEgress(config.runAsUid(), config.runAsGid());
        }
        if (problem != null) {
            LOG.error("the sandbox no longer works on this node: {}", problem);
            throw new SetupFailure("the sandbox no longer works on this node: " + problem, null);
        }
    }

    /** Kills every run in progress, long runs included (the node is stopping). */
    public void stopAll() {
        for (Process process : running) {
            kill(process);
        }
    }

    /** A long run that ended: it is no longer killed with the others. */
    void forget(Process process) {
        running.remove(process);
        grouped.remove(process);
    }

    private record Execution(int exitCode, boolean timedOut, OutputCapture stdout, OutputCapture stderr) {
        boolean limited() {
            return stdout.overflowed() || stderr.overflowed();
        }
    }

    private Execution execute(Process process, Spec spec, Dialogue dialogue) throws InterruptedException {
        running.add(process);
        try {
            return await(process, spec, dialogue);
        } finally {
            forget(process);
        }
    }

    private Execution await(Process process, Spec spec, Dialogue dialogue) throws InterruptedException {
        Runnable stop = () -> kill(process);
        OutputCapture stdout = new OutputCapture(config.maxOutputBytes(), stop);
        OutputCapture stderr = new OutputCapture(config.maxOutputBytes(), stop);
        Thread err = Thread.ofVirtual().name("sandbox-stderr").start(() -> stderr.drain(process.getErrorStream()));
        long timeoutMs = Math.min(spec.timeoutMs(), config.maxTimeoutMs());
        Thread out;
        Thread in = null;
        boolean finished;
        if (dialogue == null) {
            out = Thread.ofVirtual().name("sandbox-stdout").start(() -> stdout.drain(process.getInputStream()));
            in = Thread.ofVirtual().name("sandbox-stdin").start(() -> feed(process.getOutputStream(), spec.stdin()));
            finished = process.waitFor(timeoutMs, TimeUnit.MILLISECONDS);
        } else {
            out = Thread.ofVirtual().name("sandbox-dialogue").start(() -> converse(dialogue, process, stdout));
            finished = out.join(java.time.Duration.ofMillis(timeoutMs));
            if (finished && stdout.ended()) {
                // It closed its output (it exited or is exiting): let its own exit code be seen before the kill.
                process.waitFor(EXIT_GRACE_MS, TimeUnit.MILLISECONDS);
            }
        }
        // Whatever the program left behind (background children) goes with it.
        kill(process);
        process.waitFor(READER_GRACE_MS, TimeUnit.MILLISECONDS);
        out.join(READER_GRACE_MS);
        err.join(READER_GRACE_MS);
        if (in != null) {
            in.interrupt();
        }
        if (out.isAlive() || err.isAlive()) {
            LOG.warn("a run's output stayed open after it was killed (a process escaped its group?) [pid: {}]", process.pid());
            // Closing our ends of the pipes frees the readers; whatever the escaped process writes is lost.
            closeQuietly(process.getInputStream());
            closeQuietly(process.getErrorStream());
        }
        int exit = process.isAlive() ? 137 : process.exitValue();
        return new Execution(exit, !finished, stdout, stderr);
    }

    private static void converse(Dialogue dialogue, Process process, OutputCapture stdout) {
        try (OutputStream stdin = process.getOutputStream()) {
            dialogue.talk(stdin, stdout.limit(process.getInputStream()));
        } catch (IOException e) {
            // Closing stdin of a program that has exited: nothing to do.
        } catch (RuntimeException e) {
            LOG.warn("a dialogue with a run failed [pid: {}]", process.pid(), e);
        }
    }

    private static void closeQuietly(InputStream stream) {
        try {
            stream.close();
        } catch (IOException e) {
            // Closed already.
        }
    }

    private static void feed(OutputStream stdin, byte[] bytes) {
        try (stdin) {
            stdin.write(bytes);
        } catch (IOException e) {
            // The program exited without reading its input: nothing to do.
        }
    }

    /**
     * Under bubblewrap, killing the outer bwrap kills the sandbox's init, and with it every process
     * of the run's PID namespace. Without it, the run leads its own session, so its process group is
     * killed, and any descendant that left the group too.
     */
    void kill(Process process) {
        if (host.isolation() == Isolation.PROCESS) {
            List<ProcessHandle> descendants = process.descendants().toList();
            // The group outlives its leader while members remain; only then does its number still name it.
            if (process.isAlive() || ProcessCount.groupHasMembers(process.pid())) {
                signalGroup(process.pid());
            }
            descendants.forEach(ProcessHandle::destroyForcibly);
        } else if (grouped.contains(process) && (process.isAlive() || ProcessCount.groupHasMembers(process.pid()))) {
            // A pasta that failed leaves its namespace child behind; bwrap and the run die with pasta anyway.
            signalGroup(process.pid());
        }
        // Not Process.destroyForcibly(): it also closes our ends of the pipes, and output the readers
        // have not taken yet (a run that just exited, on a busy host) would be lost.
        process.toHandle().destroyForcibly();
    }

    private void signalGroup(long pgid) {
        try {
            Process kill = new ProcessBuilder(host.kill(), "-KILL", "--", "-" + pgid).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            kill.waitFor(2, TimeUnit.SECONDS);
        } catch (IOException e) {
            LOG.warn("cannot signal the process group of a run [pgid: {}]: {}", pgid, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The run's command: into its cgroup first (as the node), then dropping root, then egress, bwrap and rlimits. */
    List<String> command(Spec spec, RunDirectory dir, RunCgroup.Run cgroup) {
        List<String> command = new ArrayList<>(cgroup == null ? List.of() : cgroup.prefix());
        command.addAll(host.dropRoot(config.runAsUid(), config.runAsGid()));
        List<String> inner = new ArrayList<>();
        boolean egress = spec.network() && egressIsolated();
        if (host.isolation() == Isolation.BUBBLEWRAP) {
            inner.addAll(bubblewrap(spec, dir, egress));
        } else {
            inner.add(host.setsid());
        }
        inner.add(host.prlimit());
        inner.addAll(limits());
        inner.add("--");
        inner.addAll(spec.argv());
        command.addAll(egress ? EgressNamespace.wrap(host.egress(), inner) : inner);
        return command;
    }

    /**
     * Under bubblewrap, a run granted egress gets it only in a network namespace of its own; where this host
     * cannot make one, the run gets no network at all, never the host's (the result says so).
     */
    private boolean egressIsolated() {
        return host.isolation() == Isolation.BUBBLEWRAP && host.isolatesEgress();
    }

    /** What a run granted egress is told (after its stderr) when this node had to run it without network. */
    String withEgressNote(String stderr, Spec spec) {
        if (!spec.network() || host.isolation() != Isolation.BUBBLEWRAP || host.isolatesEgress()) {
            return stderr;
        }
        return stderr + (stderr.isEmpty() || stderr.endsWith("\n") ? "" : "\n")
                + "[sandbox: this run had no network although the policy grants it egress: this node cannot give runs "
                + "a network namespace of their own (" + host.egressReason() + "), and never gives them the host's]";
    }

    private List<String> bubblewrap(Spec spec, RunDirectory dir, boolean egress) {
        Path filter;
        try {
            filter = seccompFile();
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the seccomp filter under " + workRoot + ": " + e, e);
        }
        List<String> args = new ArrayList<>();
        if (filter != null) {
            // bwrap reads the filter from a file descriptor: the shell opens it as fd 9 and becomes bwrap.
            args.addAll(List.of("/bin/sh", "-c", "exec \"$@\" 9<\"$0\"", filter.toString()));
        }
        args.addAll(List.of(host.bwrap(), "--unshare-all"));
        if (filter != null) {
            args.addAll(List.of("--seccomp", "9"));
        }
        if (host.disableUserns()) {
            args.addAll(List.of("--unshare-user", "--disable-userns"));
        }
        if (egress) {
            // The network namespace pasta made (EgressNamespace), not the host's.
            args.add("--share-net");
        }
        args.addAll(List.of("--die-with-parent", "--new-session", "--hostname", "sandbox", "--cap-drop", "ALL"));
        args.addAll(SystemMounts.args());
        args.addAll(SystemMounts.etc(egress));
        if (egress) {
            args.addAll(List.of("--ro-bind", dir.resolvConf().toString(), "/etc/resolv.conf"));
        }
        args.addAll(List.of("--ro-bind", dir.passwd().toString(), "/etc/passwd", "--ro-bind", dir.group().toString(), "/etc/group"));
        args.addAll(List.of("--proc", "/proc", "--dev", "/dev"));
        if (host.tmpfsSize()) {
            args.addAll(List.of("--size", Long.toString(tmpBytes())));
        }
        args.addAll(List.of("--tmpfs", "/tmp"));
        // After the private /tmp: bwrap mounts in order, so a folder under /tmp bound before it would be hidden.
        for (String path : config.readOnlyPaths()) {
            args.addAll(List.of("--ro-bind-try", path, path));
        }
        args.addAll(List.of("--bind", dir.workspace().toString(), INSIDE,
                "--chdir", spec.workdir().isEmpty() ? INSIDE : INSIDE + "/" + spec.workdir(), "--"));
        return args;
    }

    /** The private /tmp holds a few files of the largest size a run may write. */
    long tmpBytes() {
        return Math.max(64L * 1_048_576, config.maxFileBytes() * 4);
    }

    private List<String> limits() {
        int processes = config.maxProcesses();
        if (host.isolation() == Isolation.PROCESS) {
            // Without a user namespace of its own, RLIMIT_NPROC counts every task of the run's uid.
            processes += ProcessCount.tasksOf(host.root() ? config.runAsUid() : ProcessCount.currentUid());
        }
        return List.of("--cpu=" + config.cpuSeconds(), "--data=" + config.memoryBytes(), "--nproc=" + processes,
                "--fsize=" + config.maxFileBytes(), "--nofile=" + config.maxOpenFiles(), "--core=0");
    }

    private Map<String, String> environment(Spec spec, RunDirectory dir) {
        Map<String, String> env = new LinkedHashMap<>();
        for (Map.Entry<String, String> entry : spec.env().entrySet()) {
            if (RESERVED_ENV.contains(entry.getKey()) || entry.getKey().startsWith("LD_")) {
                throw new IllegalArgumentException("the environment variable " + entry.getKey() + " cannot be set for a run");
            }
            env.put(entry.getKey(), entry.getValue());
        }
        String home = host.isolation() == Isolation.BUBBLEWRAP ? "/tmp" : dir.home().toString();
        env.put("PATH", PATH);
        env.put("HOME", home);
        env.put("TMPDIR", home);
        env.put("USER", "sandbox");
        env.putIfAbsent("LANG", "C.UTF-8");
        return env;
    }
}
