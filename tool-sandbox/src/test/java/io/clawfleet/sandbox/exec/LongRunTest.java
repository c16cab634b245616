package io.clawfleet.sandbox.exec;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A long run (a warm MCP server's process) with and without bubblewrap: it serves many messages with the output
 * cap applied to each, keeps only the tail of its stderr, is killed at its life limit, and leaves nothing behind
 * once closed. Tests at {@code BUBBLEWRAP} skip on hosts without it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LongRunTest {

    /** Echoes each line it reads back, once per line. */
    private static final List<String> ECHO = List.of("sh", "-c", "while read -r line; do echo \"$line\"; done");

    @TempDir
    Path temp;
    private Path work;

    @BeforeEach
    void workRoot() throws IOException {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        work = temp.resolve("runs");
    }

    private LongRun open(Isolation isolation, List<String> argv, long lifeMs) throws SetupFailure {
        return Sandboxes.sandbox(isolation, work, Map.of("sandbox.maxOutputBytes", "1024"))
                .open(new ProcessSandbox.Spec(argv, Map.of(), "", Map.of(), null, false, 1_000, null), lifeMs);
    }

    private static void send(LongRun run, String line) throws IOException {
        OutputStream stdin = run.stdin();
        stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void theOutputCapCountsEachMessageNotTheWholeRun(Isolation isolation) throws Exception {
        try (LongRun run = open(isolation, ECHO, 30_000)) {
            BufferedReader reader = new BufferedReader(new InputStreamReader(run.stdout(), StandardCharsets.UTF_8));
            // given messages of 600 bytes, two of which pass the 1024-byte cap together / when each is a message of its own
            for (int i = 0; i < 5; i++) {
                run.newMessage();
                send(run, "a".repeat(599));
                // then each is read whole
                assertThat(reader.readLine()).hasSize(599);
            }
            assertThat(run.outputLimited()).isFalse();
            // when one message is past the cap / then reading it fails, and says so
            run.newMessage();
            send(run, "b".repeat(2_000));
            assertThatThrownBy(reader::readLine).isInstanceOf(IOException.class).hasMessageContaining("more than 1024 bytes");
            assertThat(run.outputLimited()).isTrue();
        }
        assertThat(work).isEmptyDirectory();
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void onlyTheTailOfAChattyStderrIsKept(Isolation isolation) throws Exception {
        // given a program that writes far more than the tail on stderr, then says it is done
        String script = "i=0; while [ $i -lt 3000 ]; do echo \"stderr line $i\" >&2; i=$((i+1)); done; echo done; sleep 30";
        try (LongRun run = open(isolation, List.of("sh", "-c", script), 30_000)) {
            long mark = run.stderrMark();
            BufferedReader reader = new BufferedReader(new InputStreamReader(run.stdout(), StandardCharsets.UTF_8));
            assertThat(reader.readLine()).isEqualTo("done");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!run.stderr().endsWith("stderr line 2999\n") && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            // then what is kept is its last few kilobytes
            assertThat(run.stderrMark() - mark).isGreaterThan(40_000);
            assertThat(run.stderr().getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(LongRun.STDERR_TAIL);
            assertThat(run.stderr()).endsWith("stderr line 2999\n").doesNotContain("stderr line 0\n");
            // and what it wrote since a later mark is only that
            long later = run.stderrMark();
            assertThat(run.stderrSince(later)).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"BUBBLEWRAP", "PROCESS"})
    void aRunIsKilledAtItsLifeLimitAndClosingLeavesNothing(Isolation isolation) throws Exception {
        // given a program that would run for a minute, with a life of one second
        try (LongRun run = open(isolation, List.of("sleep", "60"), 1_000)) {
            long pid = run.pid();
            // then it is killed at its life limit, well before its own end
            assertThat(run.awaitExit(20_000)).isTrue();
            assertThat(run.exitCode()).isNotZero();
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
        }
        // and once closed its run directory is gone
        assertThat(work).isEmptyDirectory();
    }
}
