package io.clawfleet.sandbox;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** What a sandbox node tells its operator at start: how weak its isolation is, and secrets it should not hold. */
class SandboxRoleTest {

    private static HostSupport host(Isolation isolation, boolean root) {
        return new HostSupport(isolation, isolation == Isolation.BUBBLEWRAP ? null : "bubblewrap (bwrap) is not installed",
                null, "/usr/bin/prlimit", "/usr/bin/setsid", "/usr/bin/setpriv", "/usr/bin/kill", root, false, false);
    }

    private static ClawfleetConfig config(Map<String, String> keys) {
        return ConfigLoader.load(null, Map.of(), keys);
    }

    @Test
    void aNodeThatCannotIsolateEgressSaysRunsGrantedItGetNoNetworkAndReadyzShowsIt() {
        // given a bubblewrap node without pasta, and one with it
        HostSupport without = new HostSupport(Isolation.BUBBLEWRAP, null, "/usr/bin/bwrap", "/usr/bin/prlimit", "/usr/bin/setsid",
                "/usr/bin/setpriv", "/usr/bin/kill", true, true, true, null, "pasta (package passt) or ip (package iproute2) is not installed");
        HostSupport with = new HostSupport(Isolation.BUBBLEWRAP, null, "/usr/bin/bwrap", "/usr/bin/prlimit", "/usr/bin/setsid",
                "/usr/bin/setpriv", "/usr/bin/kill", true, true, true,
                java.util.List.of("/usr/bin/setsid", "/usr/bin/pasta", "/usr/sbin/ip", "/usr/bin/sh"), null);
        // when they start / then the first says why and that such runs get no network, the second what they get
        assertThat(SandboxRole.egressWarning(without)).contains("sandbox egress unavailable: pasta (package passt)")
                .contains("run without network").contains("install passt and iproute2");
        assertThat(SandboxRole.egressWarning(with)).contains("network namespace of their own");
        assertThat(SandboxRole.egressWarning(host(Isolation.PROCESS, true))).isNull();
        assertThat(without.describe()).containsEntry("egress", "none").containsKey("egressReason");
        assertThat(with.describe()).containsEntry("egress", "own-namespace").doesNotContainKey("egressReason");
    }

    @Test
    void withoutBubblewrapTheNodeWarnsLoudlyAndNamesWhatRunsCanReach() {
        // given a node that is not root and has no bubblewrap / when it starts
        String warning = SandboxRole.isolationWarning(host(Isolation.PROCESS, false));
        // then it says so loudly, why, and that runs can read its environment
        assertThat(warning).contains("SANDBOX WITHOUT BUBBLEWRAP: bubblewrap (bwrap) is not installed")
                .contains("****").contains("/proc/<pid>/environ").contains("setsid").contains("sandbox.isolation=bubblewrap");
        // and a root node, whose runs drop to another uid, does not claim that last risk
        assertThat(SandboxRole.isolationWarning(host(Isolation.PROCESS, true))).contains("SANDBOX WITHOUT BUBBLEWRAP")
                .doesNotContain("/proc/<pid>/environ");
        assertThat(SandboxRole.isolationWarning(host(Isolation.BUBBLEWRAP, false))).doesNotContain("WITHOUT");
    }

    @Test
    void aSandboxOnlyNodeThatHoldsADatabaseUrlOrAModelKeyIsTold() {
        ClawfleetConfig held = config(Map.of("roles", "sandbox", "db.url", "postgresql://u:p@db:5432/claw", "llm.apiKey", "sk-secret"));
        assertThat(SandboxRole.secretsHeld(held)).containsExactly("a database URL (CLAWFLEET_DB_URL)", "a model API key");
        assertThat(SandboxRole.secretsHeld(config(Map.of("roles", "sandbox")))).isEmpty();
        // a node that is also a worker needs them
        assertThat(SandboxRole.secretsHeld(config(Map.of("roles", "worker,sandbox", "db.url", "postgresql://u:p@db:5432/claw"))))
                .isEmpty();
    }

    @Test
    void runDirectoriesAKilledNodeLeftAreRemovedEvenWhereTheProgramLockedThem(@TempDir Path root) throws IOException {
        // given a run directory whose program took the permissions off its own folders, and a file that is not a run
        Path locked = Files.createDirectories(root.resolve("run-1/work/deep"));
        Files.writeString(locked.resolve("out.txt"), "left");
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
        Files.setPosixFilePermissions(root.resolve("run-1/work"), PosixFilePermissions.fromString("r-x------"));
        Files.writeString(root.resolve("notes.txt"), "the operator's");
        // when the node starts
        SandboxRole.removeLeftovers(root);
        // then the run is gone and nothing else is touched
        assertThat(root.resolve("run-1")).doesNotExist();
        assertThat(root.resolve("notes.txt")).hasContent("the operator's");
    }

    /** Issue 22: without bubblewrap, auto used to fall back to process limits, and runs shared the host's network. */
    @Test
    void withoutBubblewrapAutoRefusesProgramsInsteadOfFallingBackToProcessLimits() {
        HostSupport found = HostSupport.withoutBubblewrap("bubblewrap (bwrap) is not installed");
        assertThat(found.isolation()).isEqualTo(Isolation.NONE);
        assertThat(found.reason()).contains("bubblewrap (bwrap) is not installed")
                .contains("shell_exec, code skills and MCP servers are refused").contains("sandbox.isolation=process");
    }
}
