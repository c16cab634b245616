package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.testing.Await;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * Per-run cgroups against a fake cgroup v2 tree of plain files (this machine need not delegate cgroup v2): how
 * delegation is detected, what the node sets up, the limits a run's cgroup gets, how a run enters it, and its end.
 * {@code ProcessSandboxTest} checks the kernel's enforcement where the host delegates.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RunCgroupTest {

    private static final long PID = 4242;

    @TempDir
    Path temp;
    private Path root;
    private Path self;
    private Path node;

    @BeforeEach
    void delegatedTree() throws IOException {
        // given a cgroup2 mount whose node cgroup /system.slice/clawfleet.service is the node's to write
        root = temp.resolve("cgroup");
        node = root.resolve("system.slice/clawfleet.service");
        Files.createDirectories(node);
        Files.writeString(root.resolve("cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n");
        Files.writeString(node.resolve("cgroup.controllers"), "cpu io memory pids\n");
        Files.writeString(node.resolve("cgroup.procs"), PID + "\n77\n");
        Files.writeString(node.resolve("cgroup.subtree_control"), "");
        self = temp.resolve("self-cgroup");
        Files.writeString(self, "0::/system.slice/clawfleet.service\n");
    }

    private static ClawfleetConfig.Sandbox config(String cgroups) {
        return Sandboxes.config(Map.of("sandbox.cgroups", cgroups, "sandbox.maxProcesses", "32",
                "sandbox.cgroupMemoryBytes", "268435456", "sandbox.cgroupCpus", "1.5"));
    }

    private RunCgroup detect(String setting) {
        return RunCgroup.detect(config(setting), root, self, PID);
    }

    @Test
    void aDelegatedCgroupIsSetUpWithTheNodeInALeafAndTheControllersEnabled() throws IOException {
        // when the node detects it
        RunCgroup cgroups = detect("auto");
        // then it is on, the node's processes went into the leaf, and the children get memory, pids and cpu
        assertThat(cgroups.enabled()).as(cgroups.reason()).isTrue();
        assertThat(Files.readAllLines(node.resolve(RunCgroup.LEAF + "/cgroup.procs"))).contains("77");
        assertThat(Files.readString(node.resolve("cgroup.subtree_control"))).isEqualTo("+memory +pids +cpu\n");
        assertThat(cgroups.describe()).containsEntry("cgroups", "on").doesNotContainKey("cgroupsReason");
        assertThat(cgroups.summary()).startsWith("cgroup limits: on");
    }

    @Test
    void aNodeAlreadyInItsLeafUsesTheParent() throws IOException {
        // given the node moved itself before (a second sandbox in the same JVM)
        Files.writeString(self, "0::/system.slice/clawfleet.service/" + RunCgroup.LEAF + "\n");
        // when it detects again / then runs' cgroups go beside the leaf, not under it
        RunCgroup cgroups = detect("auto");
        try (RunCgroup.Run run = cgroups.open("run-a")) {
            assertThat(run.dir()).isEqualTo(node.resolve("run-a"));
        }
    }

    @Test
    void aCgroupV1HostGetsNoCgroupLimitsAndSaysWhy() throws IOException {
        // given a hybrid host: a 0:: line, but /sys/fs/cgroup is not a cgroup2 mount
        Files.delete(root.resolve("cgroup.controllers"));
        RunCgroup hybrid = detect("auto");
        assertThat(hybrid.enabled()).isFalse();
        assertThat(hybrid.reason()).startsWith("no cgroup v2 delegation: ").contains("not a cgroup v2 mount");
        assertThat(hybrid.summary()).startsWith("cgroup limits: off (no cgroup v2 delegation: ");
        assertThat(hybrid.describe()).containsEntry("cgroups", "off").containsKey("cgroupsReason");
        // and a pure v1 host has no 0:: line at all
        Files.writeString(self, "12:pids:/\n1:name=systemd:/\n");
        assertThat(detect("auto").reason()).contains("no cgroup v2 entry");
    }

    @Test
    void missingControllersAreNamed() throws IOException {
        Files.writeString(node.resolve("cgroup.controllers"), "io memory\n");
        RunCgroup cgroups = detect("auto");
        assertThat(cgroups.enabled()).isFalse();
        assertThat(cgroups.reason()).contains("lacks the controllers pids, cpu");
    }

    @Test
    void aCgroupTheNodeCannotWriteIsNotDelegated() throws IOException {
        // root may write anything, as it may on a real delegated tree: only another user can be refused
        assumeFalse(HostSupport.isRoot(), "the node runs as root, which may write any file of the fake tree");
        Files.setPosixFilePermissions(node.resolve("cgroup.subtree_control"), PosixFilePermissions.fromString("r--r--r--"));
        Files.setPosixFilePermissions(node, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            assertThat(detect("auto").reason()).contains("is not writable by the node");
        } finally {
            Files.setPosixFilePermissions(node, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void requiredRefusesToStartWithTheReasonAndOffChecksNothing() throws IOException {
        Files.delete(root.resolve("cgroup.controllers"));
        assertThatThrownBy(() -> detect("required")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sandbox.cgroups is required").hasMessageContaining("not a cgroup v2 mount");
        RunCgroup off = detect("off");
        assertThat(off.enabled()).isFalse();
        assertThat(off.reason()).isEqualTo("sandbox.cgroups is off");
    }

    @Test
    void aRunsCgroupGetsItsLimits() throws IOException {
        // when a run's cgroup is made
        try (RunCgroup.Run run = detect("auto").open("run-1")) {
            // then memory, swap, processes (the run's and the sandbox's helpers) and CPU are limited
            assertThat(Files.readString(run.dir().resolve("memory.max"))).isEqualTo("268435456\n");
            assertThat(Files.readString(run.dir().resolve("memory.swap.max"))).isEqualTo("0\n");
            assertThat(Files.readString(run.dir().resolve("pids.max"))).isEqualTo("36\n");
            assertThat(Files.readString(run.dir().resolve("cpu.max"))).isEqualTo("150000 100000\n");
        }
    }

    @Test
    void theRunEntersItsCgroupBeforeAnythingElseRunsAsTheNode() throws Exception {
        RunCgroup cgroups = detect("auto");
        try (RunCgroup.Run run = cgroups.open("run-2"); RunDirectory dir = RunDirectory.create(temp.resolve("runs"), Map.of(),
                -1, -1)) {
            // given a root node at the process level, whose runs drop to another uid
            HostSupport rootHost = new HostSupport(Isolation.PROCESS, "test", null, "/usr/bin/prlimit", "/usr/bin/setsid",
                    "/usr/bin/setpriv", "/usr/bin/kill", true, false, false);
            ProcessSandbox sandbox = new ProcessSandbox(rootHost, config("auto"), temp.resolve("runs"), cgroups);
            // when its command is made / then the cgroup comes first, before setpriv drops root
            List<String> command = sandbox.command(new ProcessSandbox.Spec(List.of("true"), Map.of(), "", Map.of(), null,
                    false, 1_000, null), dir, run);
            assertThat(command.subList(0, 4)).isEqualTo(run.prefix());
            assertThat(command.get(4)).isEqualTo("/usr/bin/setpriv");
            // and the prefix really writes the shell's own pid there and becomes the command
            List<String> probe = new ArrayList<>(run.prefix());
            probe.addAll(List.of("sh", "-c", "echo $$"));
            Process process = new ProcessBuilder(probe).redirectErrorStream(true).start();
            String pid = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            assertThat(process.waitFor()).isZero();
            assertThat(pid).isEqualTo(Long.toString(process.pid()));
            assertThat(Files.readString(run.dir().resolve("cgroup.procs")).strip()).isEqualTo(pid);
        }
    }

    @Test
    void aFinishedRunsCgroupIsKilledAndRemovedAndAnOomKillIsReported() throws IOException {
        RunCgroup.Run run = detect("auto").open("run-3");
        Files.writeString(run.dir().resolve("cgroup.kill"), "");
        Files.writeString(run.dir().resolve("memory.events"), "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n");
        Path kill = run.dir().resolve("cgroup.kill");
        // when the run is over / then what is left is killed, the OOM kill is seen, and the cgroup is gone
        assertThat(run.finish()).isTrue();
        assertThat(run.dir()).doesNotExist();
        assertThat(kill).doesNotExist();
        assertThat(run.finish()).as("idempotent").isTrue();
        RunCgroup.Run quiet = detect("auto").open("run-4");
        Files.writeString(quiet.dir().resolve("memory.events"), "oom 0\noom_kill 0\n");
        assertThat(quiet.finish()).isFalse();
    }

    @Test
    void aRunKilledByItsCgroupsMemoryLimitSaysSoAndLeavesNoCgroup() throws Exception {
        // given a sandbox whose runs get cgroups in the fake tree
        Path work = temp.resolve("runs");
        Files.createDirectories(work);
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        ClawfleetConfig.Sandbox config = config("auto");
        ProcessSandbox sandbox = new ProcessSandbox(Sandboxes.host(Isolation.PROCESS, config), config, work,
                RunCgroup.detect(config, root, self, PID));
        // when the kernel (here: the test) counts an OOM kill in the run's cgroup while it runs
        Thread kernel = Thread.ofVirtual().start(() -> {
            Await.until("the run's cgroup", Duration.ofSeconds(10), () -> runCgroup() != null);
            try {
                Files.writeString(runCgroup().resolve("memory.events"), "oom 1\noom_kill 1\n");
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        ProcessSandbox.Result result = sandbox.run(new ProcessSandbox.Spec(List.of("sh", "-c", "sleep 2; echo done"),
                Map.of(), "", Map.of(), null, false, 10_000, null));
        kernel.join();
        // then the result and stderr say so, and the run's cgroup is gone
        assertThat(result.stdout()).isEqualTo("done\n");
        assertThat(result.notes()).contains("the run was killed by the memory limit of its cgroup (sandbox.cgroupMemoryBytes, "
                + "268435456 bytes)");
        assertThat(result.stderr()).contains("[sandbox: the run was killed by the memory limit of its cgroup");
        assertThat(runCgroup()).isNull();
    }

    private Path runCgroup() {
        try (var children = Files.list(node)) {
            return children.filter(p -> p.getFileName().toString().startsWith("run-")).findFirst().orElse(null);
        } catch (IOException e) {
            return null;
        }
    }
}
