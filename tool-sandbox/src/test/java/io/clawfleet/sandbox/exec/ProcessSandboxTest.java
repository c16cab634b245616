package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.testing.Await;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The isolation of one run, with and without bubblewrap: what a run may do, and every attack of the
 * suite that the process level must stop (escapes, bombs, loops, floods, the node's environment).
 * Tests at {@code BUBBLEWRAP} skip on hosts without it; {@code ./clawfleet test} installs it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ProcessSandboxTest {

    @TempDir
    Path temp;
    private Path work;

    @BeforeEach
    void workRoot() throws IOException {
        // Runs of a root node drop to another uid, which must be able to reach its run directory.
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        work = temp.resolve("runs");
    }

    private ProcessSandbox sandbox(Isolation isolation) {
        return sandbox(isolation, Map.of());
    }

    private ProcessSandbox sandbox(Isolation isolation, Map<String, String> config) {
        return Sandboxes.sandbox(isolation, work, config);
    }

    private static ProcessSandbox.Spec spec(List<String> argv) {
        return spec(argv, Map.of(), 10_000);
    }

    private static ProcessSandbox.Spec spec(List<String> argv, Map<String, String> files, long timeoutMs) {
        return new ProcessSandbox.Spec(argv, files, "", Map.of(), null, false, timeoutMs, null);
    }

    private static ProcessSandbox.Spec sh(String script) {
        return spec(List.of("sh", "-c", script));
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aProgramRunsWithItsFilesAndTheirChangesComeBack(Isolation isolation) throws Exception {
        // given two workspace files / when a run reads one, changes it, adds a file and removes the other
        ProcessSandbox.Result result = sandbox(isolation).run(spec(List.of("sh", "-c",
                "cat notes/a.txt; echo more >> notes/a.txt; mkdir -p out && echo new > out/b.txt; rm gone.txt; echo err >&2"),
                Map.of("notes/a.txt", "hello\n", "gone.txt", "x"), 10_000));
        // then its output, the changed and new files and the removal come back
        assertThat(result.exitCode()).isZero();
        assertThat(result.stdout()).isEqualTo("hello\n");
        assertThat(result.stderr()).isEqualTo("err\n");
        assertThat(result.changed()).containsExactly(Map.entry("notes/a.txt", "hello\nmore\n"), Map.entry("out/b.txt", "new\n"));
        assertThat(result.deleted()).containsExactly("gone.txt");
        assertThat(work).isEmptyDirectory();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void stdinReachesTheProgramAndItsExitCodeIsKept(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation).run(new ProcessSandbox.Spec(List.of("sh", "-c", "cat; exit 3"),
                Map.of(), "", Map.of("GREETING", "hi"), "{\"a\":1}".getBytes(StandardCharsets.UTF_8), false, 10_000, null));
        assertThat(result.stdout()).isEqualTo("{\"a\":1}");
        assertThat(result.exitCode()).isEqualTo(3);
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void theOutputOfShortRunsIsNeverLostOnABusyHost(Isolation isolation) throws Exception {
        // given many runs at once that exit at once (the host busier than its cores)
        ProcessSandbox sandbox = sandbox(isolation);
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(8)) {
            List<java.util.concurrent.Future<ProcessSandbox.Result>> runs = new java.util.ArrayList<>();
            for (int i = 0; i < 40; i++) {
                String word = "run-" + i;
                runs.add(pool.submit(() -> sandbox.run(spec(List.of("echo", word)))));
            }
            // then every one of them brings its output back
            for (int i = 0; i < runs.size(); i++) {
                assertThat(runs.get(i).get().stdout()).isEqualTo("run-" + i + "\n");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aRunSeesOnlyTheEnvironmentItIsGiven(Isolation isolation) throws Exception {
        // given the node's environment holds a secret / when a run prints its own environment, also from /proc
        String canary = Sandboxes.canary();
        ProcessSandbox.Result result = sandbox(isolation).run(new ProcessSandbox.Spec(List.of("sh", "-c",
                "env; tr '\\0' '\\n' < /proc/self/environ"), Map.of(), "", Map.of("GIVEN", "yes"), null, false, 10_000, null));
        // then it holds PATH, the run's own variables and what it was given, and nothing of the node: at every level
        assertThat(result.stdout()).contains("PATH=/usr/local/bin:/usr/bin:/bin", "GIVEN=yes").doesNotContain(canary)
                .doesNotContain("JAVA_HOME").doesNotContain("MAVEN");
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aRunCannotReadTheNodesEnvironmentThroughProc(Isolation isolation) throws Exception {
        ProcessSandbox sandbox = sandbox(isolation);
        if (isolation == Isolation.PROCESS) {
            // A process of the same uid may read /proc/<pid>/environ of the node; only a root node, whose runs
            // drop to sandbox.runAsUid, keeps it from them at this level (docs/SANDBOX.md, "Degraded level").
            assumeTrue(HostSupport.isRoot(), "at the process level only a root node hides its environment from runs; "
                    + "this node is not root, so its runs CAN read /proc/<node pid>/environ (a documented limitation)");
        }
        // given the node's environment holds a secret / when a run reads its parent's and the node's environment
        String canary = Sandboxes.canary();
        long node = ProcessHandle.current().pid();
        ProcessSandbox.Result result = sandbox.run(sh("tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/" + node + "/environ"));
        // then it gets nothing of the node's
        assertThat(result.stdout()).doesNotContain(canary).doesNotContain("JAVA_HOME");
    }

    @Test
    void underBubblewrapNoProcessOfTheHostIsVisible() throws Exception {
        // given the node's environment holds a secret / when a run reads every environ and cmdline in /proc
        String canary = Sandboxes.canary();
        ProcessSandbox.Result result = sandbox(Isolation.BUBBLEWRAP).run(sh(
                "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done; ls /proc | grep -c '^[0-9]'"));
        // then no secret is there, and only the run's own few processes exist
        assertThat(result.stdout()).doesNotContain(canary).doesNotContain("java");
        assertThat(Integer.parseInt(result.stdout().strip().lines().reduce((a, b) -> b).orElseThrow())).isLessThan(10);
    }

    @Test
    void underBubblewrapTheSystemIsReadOnlyAndHostFoldersAreAbsent() throws Exception {
        ProcessSandbox.Result result = sandbox(Isolation.BUBBLEWRAP).run(sh(
                "touch /usr/x 2>/dev/null && echo wrote-usr; ls /root /home /var /run /etc/shadow 2>/dev/null && echo saw-host;"
                        + " ls /etc; echo > /tmp/t && echo tmp-ok; cat /etc/passwd; id -u"));
        assertThat(result.stdout()).doesNotContain("wrote-usr").doesNotContain("saw-host").contains("tmp-ok")
                .contains("sandbox:x:").doesNotContain("root:x:0");
        assertThat(result.stdout()).doesNotContain("shadow");
    }

    /** Each attempt prints its name, the call's return value and errno. */
    private static final String ESCAPE_ATTEMPTS = String.join("\n",
            "import ctypes, subprocess",
            "libc = ctypes.CDLL(None, use_errno=True)",
            "def attempt(name, call):",
            "    ctypes.set_errno(0)",
            "    print(name, call(), ctypes.get_errno())",
            "print(subprocess.run([\"sh\", \"-c\", \"echo child-ran\"], capture_output=True, text=True).stdout.strip())",
            "attempt(\"ptrace\", lambda: libc.ptrace(0, 0, 0, 0))",
            "attempt(\"unshare\", lambda: libc.unshare(0x10000000))",
            "attempt(\"keyctl\", lambda: libc.syscall(250, 0, -3, 0, 0))",
            "attempt(\"bpf\", lambda: libc.syscall(321, 0, 0, 0))",
            "attempt(\"perf_event_open\", lambda: libc.syscall(298, 0, 0, -1, -1, 0))",
            "attempt(\"mount\", lambda: libc.mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None))",
            "attempt(\"init_module\", lambda: libc.syscall(175, 0, 0, 0))");

    @Test
    void underBubblewrapSeccompRefusesPtraceNamespacesTheKeyringBpfPerfMountsAndModulesWhileOrdinaryWorkRuns() throws Exception {
        assumeTrue(SeccompFilter.supported(), "no seccomp filter for this architecture: " + System.getProperty("os.arch"));
        assumeTrue(new java.io.File("/usr/bin/python3").canExecute(), "python3 is not installed");
        // given a run that tries what an escape starts with, then starts a child as ordinary work does
        ProcessSandbox.Result result = sandbox(Isolation.BUBBLEWRAP).run(spec(List.of("python3", "-c", ESCAPE_ATTEMPTS)));
        // then every one of those calls is refused with EPERM (1), and the child still runs (clone3 falls back to clone)
        assertThat(result.stdout()).as(result.stderr()).contains("ptrace -1 1", "unshare -1 1", "keyctl -1 1", "bpf -1 1",
                "perf_event_open -1 1", "mount -1 1", "init_module -1 1", "child-ran");
    }

    @Test
    void withoutTheFilterTheSameAttemptsGetFurtherSoTheTestAboveCanTellTheDifference() throws Exception {
        assumeTrue(new java.io.File("/usr/bin/python3").canExecute(), "python3 is not installed");
        // given the harmless one of those attempts run on the host, outside any sandbox (never the others: mount and
        // unshare are real there), and nothing exec'd after it (a traced process stops at exec)
        String ptraceOnly = String.join("\n", ESCAPE_ATTEMPTS.lines().limit(5).toList())
                + "\nattempt(\"ptrace\", lambda: libc.ptrace(0, 0, 0, 0))";
        Process host = new ProcessBuilder("python3", "-c", ptraceOnly).redirectErrorStream(true).start();
        String output = new String(host.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(host.waitFor(30, TimeUnit.SECONDS)).isTrue();
        // then ptrace(PTRACE_TRACEME) succeeds there: the filter is what refuses it in the test above
        assertThat(output).contains("ptrace 0 0");
    }

    @Test
    void underBubblewrapAReadOnlyPathUnderTmpIsVisibleInThePrivateTmp() throws Exception {
        // given a folder under the host's /tmp that others may read (MCP servers installed there, say)
        Path shared = Files.createTempDirectory(Path.of("/tmp"), "clawfleet-ro-");
        try {
            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.writeString(shared.resolve("tool.txt"), "from the host\n");
            Files.setPosixFilePermissions(shared.resolve("tool.txt"), PosixFilePermissions.fromString("rw-r--r--"));
            ProcessSandbox sandbox = sandbox(Isolation.BUBBLEWRAP, Map.of("sandbox.readOnlyPaths", shared.toString()));
            // when a run reads it and tries to write there and into its own /tmp
            ProcessSandbox.Result result = sandbox.run(sh("cat " + shared + "/tool.txt; touch " + shared
                    + "/x 2>/dev/null && echo wrote-host; echo > /tmp/own && echo tmp-ok; ls /tmp"));
            // then it reads it, cannot change it, and the rest of /tmp is still its own
            assertThat(result.stdout()).contains("from the host").contains("tmp-ok").doesNotContain("wrote-host");
            assertThat(shared.resolve("x")).doesNotExist();
        } finally {
            try (Stream<Path> tree = Files.walk(shared)) {
                tree.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @Test
    void underBubblewrapARunHasNoNetworkUnlessGrantedAndNeverTheHostsLoopback() throws Exception {
        // given a server on the host's loopback
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            String connect = "bash -c 'echo hi > /dev/tcp/127.0.0.1/" + server.getLocalPort() + "' && echo connected || echo refused";
            ProcessSandbox sandbox = sandbox(Isolation.BUBBLEWRAP);
            assumeTrue(Files.isExecutable(Path.of("/bin/bash")) || Files.isExecutable(Path.of("/usr/bin/bash")), "bash is needed");
            // when a run without egress connects to it / then it cannot: its loopback is its own
            ProcessSandbox.Result closed = sandbox.run(sh(connect));
            assertThat(closed.stdout()).contains("refused");
            // when a run granted egress does / then it cannot either: its network is its own too (issue 22;
            // EgressIsolationTest has the rest)
            ProcessSandbox.Result egress = sandbox.run(new ProcessSandbox.Spec(List.of("sh", "-c", connect), Map.of(), "", Map.of(),
                    null, true, 10_000, null));
            assertThat(egress.stdout()).contains("refused");
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aSymlinkToAFileOutsideIsNotFollowedWhenFilesComeBack(Isolation isolation) throws Exception {
        // given a secret file on the host, readable by the node
        Path secret = temp.resolve("secret.txt");
        Files.writeString(secret, "top secret");
        // when a run links to it (and to /etc/passwd) from its workspace, and replaces a file sent to it by a link
        ProcessSandbox.Result result = sandbox(isolation).run(spec(List.of("sh", "-c",
                "ln -s " + secret + " leak.txt; ln -s /etc/passwd passwd.txt; rm a.txt; ln -s " + secret + " a.txt;"
                        + " mkdir d; ln -s " + temp + " d/up"), Map.of("a.txt", "mine"), 10_000));
        // then no link is followed: nothing of the secret comes back, and the links are named as not kept
        assertThat(result.changed()).isEmpty();
        assertThat(result.notes()).anyMatch(n -> n.startsWith("leak.txt: a symbolic link"))
                .anyMatch(n -> n.startsWith("a.txt: a symbolic link"))
                .anyMatch(n -> n.startsWith("d/up: a symbolic link"));
        assertThat(String.join("", result.changed().values())).doesNotContain("top secret");
        assertThat(secret).hasContent("top secret");
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aRunThatRemovesItsOwnAccessIsStillCleanedUp(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation).run(sh("mkdir -p locked/deeper && echo x > locked/deeper/f && chmod 000 locked/deeper/f locked/deeper locked"));
        assertThat(result.exitCode()).isZero();
        assertThat(result.changed()).containsKey("locked/deeper/f");
        assertThat(work).isEmptyDirectory();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aHardLinkToAFileOutsideDoesNotBringItBack(Isolation isolation) throws Exception {
        // given a secret file on the host that the run's uid could link to (readable and writable by all)
        Path secret = temp.resolve("shared-secret.txt");
        Files.writeString(secret, "top secret");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-rw-rw-"));
        // when a run hard-links it (and a file of its own) into its workspace
        ProcessSandbox.Result result = sandbox(isolation).run(spec(List.of("sh", "-c",
                "ln " + secret + " leak.txt; echo mine > own.txt; ln own.txt twin.txt; ls"), Map.of(), 10_000));
        // then nothing linked comes back: not the secret, and not the run's own linked pair either
        assertThat(String.join("", result.changed().values())).doesNotContain("top secret");
        assertThat(result.changed()).doesNotContainKeys("leak.txt", "own.txt", "twin.txt");
        assertThat(result.notes()).anyMatch(n -> n.startsWith("twin.txt: a hard link"));
        if (isolation == Isolation.PROCESS) {
            // the host's folders are visible at this level, so the link was made; it is the check that stops it
            assertThat(result.stdout()).contains("leak.txt");
            assertThat(result.notes()).anyMatch(n -> n.startsWith("leak.txt: a hard link"));
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void filesWithPathsOutsideTheWorkspaceAreRefused(Isolation isolation) {
        ProcessSandbox sandbox = sandbox(isolation);
        assertThatThrownBy(() -> sandbox.run(spec(List.of("true"), Map.of("../escape.txt", "x"), 10_000)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("..");
        assertThatThrownBy(() -> sandbox.run(spec(List.of("true"), Map.of("/etc/cron.d/x", "x"), 10_000)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("absolute");
        assertThatThrownBy(() -> sandbox.run(new ProcessSandbox.Spec(List.of("true"), Map.of(), "../..", Map.of(), null, false,
                10_000, null))).isInstanceOf(IllegalArgumentException.class);
        assertThat(temp.getParent().resolve("escape.txt")).doesNotExist();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void anInfiniteLoopIsKilledAtTheWallClockLimit(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation).run(spec(List.of("sh", "-c", "while :; do :; done"), Map.of(), 1_500));
        assertThat(result.timedOut()).isTrue();
        assertThat(result.exitCode()).isNotZero();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aLoopIsStoppedByItsCpuTimeLimitFirst(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.cpuSeconds", "1"))
                .run(spec(List.of("sh", "-c", "while :; do :; done"), Map.of(), 30_000));
        assertThat(result.timedOut()).isFalse();
        assertThat(result.exitCode()).isGreaterThan(128);
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aBackgroundChildDoesNotOutliveItsRun(Isolation isolation) throws Exception {
        // given a run that leaves a child behind, writing a marker later
        String marker = "marker-" + System.nanoTime();
        Path flag = temp.resolve(marker);
        ProcessSandbox.Result result = sandbox(isolation).run(sh("(sleep 2; touch " + flag + "; sleep 30) >/dev/null 2>&1 & echo started"));
        assertThat(result.stdout()).isEqualTo("started\n");
        // then no process of the run is left (the kernel may take a moment to reap the killed group), so
        // nothing is left that could write the marker two seconds after the start
        Await.until("the run's background child to be gone", Duration.ofSeconds(10),
                () -> ProcessHandle.allProcesses().noneMatch(p -> p.info().commandLine().orElse("").contains(marker)));
        assertThat(flag).doesNotExist();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aForkBombHitsTheProcessLimitAndDiesWithItsRun(Isolation isolation) throws Exception {
        // when a run forks without end
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.maxProcesses", "32"))
                .run(spec(List.of("sh", "-c", "b() { b | b & }; b; sleep 3"), Map.of(), 5_000));
        // then it could not fork past its limit (the shell says so), and the node is fine: another run works
        assertThat(result.stderr()).containsAnyOf("fork", "Resource temporarily unavailable", "Cannot");
        ProcessSandbox.Result after = sandbox(isolation).run(sh("echo alive"));
        assertThat(after.stdout()).as("exit %d, stderr %s, first run: exit %d, timed out %s, stderr %s", after.exitCode(),
                after.stderr(), result.exitCode(), result.timedOut(), result.stderr()).isEqualTo("alive\n");
        assertThat(ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains("b() { b | b & }")))
                .isEmpty();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aMemoryBombFailsAtItsDataLimit(Isolation isolation) throws Exception {
        assumeTrue(Stream.of("/usr/bin/python3", "/bin/python3").anyMatch(p -> Files.isExecutable(Path.of(p))), "python3 is needed");
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.memoryBytes", "67108864"))
                .run(spec(List.of("python3", "-c", "x = bytearray(1024 * 1024 * 1024); print('allocated')"), Map.of(), 20_000));
        assertThat(result.stdout()).doesNotContain("allocated");
        assertThat(result.stderr()).contains("MemoryError");
        assertThat(result.exitCode()).isNotZero();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aDiskFillerIsStoppedAtTheWorkspaceQuotaAndTheNodeStaysHealthy(Isolation isolation) throws Exception {
        // given a 4 MiB workspace quota / when a run writes files, each under the file size limit, without end
        ProcessSandbox sandbox = sandbox(isolation, Map.of("sandbox.maxWorkspaceBytes", "4194304",
                "sandbox.maxFileBytes", "65536", "sandbox.maxTransferBytes", "1048576"));
        ProcessSandbox.Result result = sandbox.run(spec(List.of("sh", "-c",
                "i=0; while :; do head -c 60000 /dev/zero > f$i; i=$((i+1)); done"), Map.of(), 30_000));
        // then it is stopped for its workspace, not at its wall clock, and says why
        assertThat(result.timedOut()).as("stderr: %s", result.stderr()).isFalse();
        assertThat(result.exitCode()).isNotZero();
        assertThat(result.notes()).contains("the run wrote more than 4194304 bytes to its workspace and was stopped "
                + "(sandbox.maxWorkspaceBytes)");
        assertThat(result.stderr()).contains("[sandbox: the run wrote more than 4194304 bytes to its workspace");
        // and the node is fine: the run's directory is gone and another run works
        assertThat(work).isEmptyDirectory();
        assertThat(sandbox.run(sh("echo alive")).stdout()).isEqualTo("alive\n");
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void manyEmptyFilesHitTheWorkspaceFileCap(Isolation isolation) throws Exception {
        // when a run makes empty files without end (no bytes, only inodes)
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.maxWorkspaceFiles", "500"))
                .run(spec(List.of("sh", "-c", "i=0; while :; do : > e$i; i=$((i+1)); done"), Map.of(), 30_000));
        // then it is stopped at the cap of entries, and its directory is gone
        assertThat(result.timedOut()).isFalse();
        assertThat(result.notes()).contains("the run made more than 500 files and folders in its workspace and was stopped "
                + "(sandbox.maxWorkspaceFiles)");
        assertThat(work).isEmptyDirectory();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void processesOfARunTogetherAreHeldToTheMemoryLimitOfItsCgroup(Isolation isolation) throws Exception {
        assumeTrue(Stream.of("/usr/bin/python3", "/bin/python3").anyMatch(p -> Files.isExecutable(Path.of(p))),
                "python3 is needed");
        // given 64 MiB of data per process, 96 MiB for the whole run
        ProcessSandbox sandbox = sandbox(isolation, Map.of("sandbox.memoryBytes", "67108864",
                "sandbox.cgroupMemoryBytes", "100663296", "sandbox.cgroups", "auto"));
        assumeTrue(sandbox.cgroups().enabled(), () -> "this host gives the node no cgroup v2 delegation, so runs have "
                + "rlimits only (docs/SANDBOX.md, \"Cgroup limits\"): " + sandbox.cgroups().reason());
        // when four processes each take 48 MiB, within their own rlimit
        ProcessSandbox.Result result = sandbox.run(spec(List.of("sh", "-c", "for i in 1 2 3 4; do python3 -c "
                + "'import time; x = b\"1\" * (48 << 20); time.sleep(3)' & done; wait; echo finished"), Map.of(), 20_000));
        // then the kernel ends some for the run's limit, and the result says so
        assertThat(result.notes()).as("stderr: %s", result.stderr()).anyMatch(n -> n.contains("memory limit of its cgroup"));
        assertThat(work).isEmptyDirectory();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void anOutputFloodIsCutAndTheRunStopped(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.maxOutputBytes", "4096"))
                .run(spec(List.of("yes", "flood"), Map.of(), 20_000));
        assertThat(result.outputLimited()).isTrue();
        assertThat(result.timedOut()).isFalse();
        assertThat(result.stdout()).hasSize(4096).startsWith("flood\nflood\n");
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aFileOverTheSizeLimitCannotBeWritten(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.maxFileBytes", "65536"))
                .run(sh("head -c 1000000 /dev/zero > big.bin; echo $?; ls -l big.bin"));
        assertThat(result.stdout()).startsWith("153").doesNotContain("1000000");
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void binaryAndOversizedFilesDoNotComeBack(Isolation isolation) throws Exception {
        ProcessSandbox.Result result = sandbox(isolation, Map.of("sandbox.maxTransferBytes", "2048"))
                .run(sh("printf '\\000\\001' > bin.dat; head -c 4000 /dev/zero | tr '\\0' 'a' > big.txt; echo ok > small.txt"));
        assertThat(result.changed()).containsOnlyKeys("small.txt");
        assertThat(result.notes()).anyMatch(n -> n.startsWith("bin.dat: not UTF-8 text")).anyMatch(n -> n.startsWith("big.txt: larger"));
    }
}
