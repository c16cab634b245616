package io.clawfleet.deploy;

import io.clawfleet.deploy.bench.UpStartup;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ./clawfleet up} as a user runs it, through the launcher: it starts its embedded PostgreSQL beside the node (the
 * node makes Vert.x and its roles meanwhile), answers, stops its database after the node, and starts again on the same
 * folder with the same key and data.
 */
class UpIT {

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void upAnswersStopsItsDatabaseAfterTheNodeAndStartsAgainOnTheSameFolder(@TempDir Path folder) throws Exception {
        Vertx vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        Path data = folder.resolve("data");
        try {
            // given up started on a new folder (initdb included)
            int port = FreePorts.take();
            Process first = up(data, port, model, folder.resolve("first.log"));
            String key;
            try {
                awaitReady(first, port, folder.resolve("first.log"));
                key = Files.readString(data.resolve("api-key")).strip();
                // then it answers
                assertThat(new ApiChat("http://127.0.0.1:" + port, key).ask("up-chat", "before the restart"))
                        .isEqualTo("echo: before the restart");
            } finally {
                stop(first);
            }
            // and its stop took PostgreSQL down with it, after the node
            assertThat(first.exitValue()).as(Files.readString(folder.resolve("first.log"))).isIn(0, 143);
            assertThat(data.resolve("postgres").resolve("postmaster.pid")).doesNotExist();
            assertThat(Files.readString(folder.resolve("first.log"))).doesNotContain("Connection reset");

            // when it starts again on the same folder
            Process second = up(data, port, model, folder.resolve("second.log"));
            try {
                awaitReady(second, port, folder.resolve("second.log"));
                // then the same key answers in the same chat, whose history survived
                ApiChat api = new ApiChat("http://127.0.0.1:" + port, key);
                assertThat(api.ask("up-chat", "after the restart")).isEqualTo("echo: after the restart");
                assertThat(api.call("GET", "/console/api/tenants/default/bots/main/chats/api/up-chat", null).body())
                        .contains("before the restart", "after the restart");
            } finally {
                stop(second);
            }
        } finally {
            vertx.close();
        }
    }

    private static Process up(Path data, int port, MockLlmServer model, Path log) throws IOException {
        ProcessBuilder builder = new ProcessBuilder("bash", TestJar.launcher().toString(), "up", "--no-chat", "--data-dir",
                data.toString(), "--http-port", Integer.toString(port))
                .redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("CLAWFLEET_"));
        builder.environment().put("CLAWFLEET_LLM_BASE_URL", "http://127.0.0.1:" + model.port() + "/v1");
        builder.environment().put("CLAWFLEET_LLM_MODEL", "mock");
        // No class-data archive: the first stop would spend seconds writing one.
        builder.environment().put("CLAWFLEET_CDS", "off");
        // The node ends with this JVM, even when this one is killed and runs no shutdown hook.
        builder.environment().put("JAVA_TOOL_OPTIONS", "-D" + Main.EXIT_WITH_PARENT + "=" + ProcessHandle.current().pid());
        return builder.start();
    }

    private static void awaitReady(Process up, int port, Path log) throws Exception {
        try {
            UpStartup.awaitReady(up, port, System.nanoTime() + TimeUnit.MINUTES.toNanos(2), log);
        } catch (IllegalStateException e) {
            throw new AssertionError(e.getMessage() + "; its log:\n" + Files.readString(log), e);
        }
    }

    private static void stop(Process up) throws InterruptedException {
        up.destroy();
        if (!up.waitFor(60, TimeUnit.SECONDS)) {
            up.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
