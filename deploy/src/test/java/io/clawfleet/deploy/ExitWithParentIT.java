package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.JvmFlags;
import io.clawfleet.shared.node.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A process started by a harness that is then killed with SIGKILL (a CI job cancelled, a developer's
 * Ctrl-\) must not run on: left-over nodes load the machine and hold ports while the next run starts.
 */
class ExitWithParentIT {

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aNodeEndsWhenTheProcessThatStartedItIsKilled() throws Exception {
        // given a long-running command started on behalf of a parent process
        Process parent = new ProcessBuilder("sleep", "300").start();
        Path log = Files.createTempFile("exit-with-parent-", ".log");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx64m", "-D" + Main.EXIT_WITH_PARENT + "=" + parent.pid()));
        command.addAll(JvmFlags.forNodes());
        command.addAll(List.of("-jar", TestJar.path().toString(), "mock-llm", "--port", Integer.toString(FreePorts.take())));
        Process node = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            waitForLine(log, "mock model listening", node);
            assertThat(node.isAlive()).as("the node runs while its parent does").isTrue();
            // when the parent is killed without a chance to clean up
            parent.destroyForcibly().waitFor();
            // then the node stops by itself, saying why
            assertThat(node.waitFor(30, TimeUnit.SECONDS)).as("the node exited after its parent was killed").isTrue();
            assertThat(Files.readString(log)).contains("that started this node ended; stopping");
        } finally {
            node.destroyForcibly();
            parent.destroyForcibly();
            Files.deleteIfExists(log);
        }
    }

    private static void waitForLine(Path log, String text, Process node) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).toLowerCase().contains(text)) {
            assertThat(node.isAlive()).as("the node is running; its output: %s", Files.readString(log)).isTrue();
            assertThat(System.nanoTime()).as("the node started in time").isLessThan(deadline);
            Thread.sleep(100);
        }
    }
}
