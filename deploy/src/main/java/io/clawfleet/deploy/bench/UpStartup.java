package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.Main;
import io.clawfleet.deploy.chaos.JvmFlags;
import io.clawfleet.shared.node.FreePorts;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Times {@code clawfleet up --no-chat} from process launch to a 200 from /readyz, embedded
 * PostgreSQL included, then stops it with SIGTERM (so it stops its PostgreSQL too).
 */
public final class UpStartup {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private UpStartup() {
    }

    /**
     * Waits until {@code up} (or any node) answers 200 on {@code /readyz} at this port, polling every 20 ms.
     *
     * @throws IllegalStateException when the process exits first or the deadline ({@link System#nanoTime()}) passes;
     *                               the message names the log
     */
    public static void awaitReady(Process process, int port, long deadlineNanos, Path log)
            throws IOException, InterruptedException {
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                .timeout(Duration.ofSeconds(2)).build();
        while (System.nanoTime() < deadlineNanos) {
            if (!process.isAlive()) {
                throw new IllegalStateException("up exited with " + process.exitValue() + "; see " + log.toAbsolutePath());
            }
            try {
                if (HTTP.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // Not listening yet.
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("up was not ready in time; see " + log.toAbsolutePath());
    }

    /** Milliseconds from launch to ready; the data folder is created on first use and reused after. */
    static long launchToReadyMillis(Path jar, List<String> jvmOptions, Path dataDir, String llmBaseUrl, Path log)
            throws IOException, InterruptedException {
        int port = FreePorts.take();
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(JvmFlags.forNodes());
        // The node ends with this JVM, even when this one is killed and runs no shutdown hook.
        command.add("-D" + Main.EXIT_WITH_PARENT + "=" + ProcessHandle.current().pid());
        command.addAll(List.of("-jar", jar.toString(), "up", "--data-dir", dataDir.toString(), "--no-chat",
                "--http-port", Integer.toString(port)));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().keySet().removeIf(k -> k.startsWith("CLAWFLEET_"));
        builder.environment().put("CLAWFLEET_LLM_BASE_URL", llmBaseUrl);
        builder.environment().put("CLAWFLEET_LLM_MODEL", "mock");
        long start = System.nanoTime();
        Process process = builder.start();
        try {
            awaitReady(process, port, start + TimeUnit.MINUTES.toNanos(2), log);
            return (System.nanoTime() - start) / 1_000_000;
        } finally {
            process.destroy();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
