package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Sandbox nodes as separate JVMs, started as on a hardened host: no database URL, no model keys. They
 * are ready and serve calls like that. One killed (kill -9) in the middle of a run makes the tool call
 * go to another node, and the chat gets the command's output; when the last one dies mid-run, the
 * call fails cleanly with a message saying so. The worker and sandbox nodes carry a canary secret in
 * their environment, which no tool output shows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class SandboxFailoverIT {

    private static final String BOOTSTRAP = "bootstrap-it-0123456789";
    private static final String CANARY = "canary-it-3f9a7c1e55d2";

    private Vertx vertx;
    private ClusterHarness cluster;
    private ClusterHarness.Node gateway;
    private String admin;
    private SandboxClusterChat api;

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 3)
                .env("CLAWFLEET_AGENT_AUTONOMY", "full")
                .env("CLAWFLEET_ALLOW_SHELL", "true")
                .env("CLAWFLEET_ADMIN_BOOTSTRAP_KEY", BOOTSTRAP)
                .env("CLAWFLEET_TEST_CANARY", CANARY);
        gateway = cluster.start("core-1", "gateway,worker");
        api = new SandboxClusterChat(cluster, gateway);
        cluster.start("sandbox-1", "sandbox");
        cluster.start("sandbox-2", "sandbox");
        cluster.awaitReady(Duration.ofSeconds(120));
        Await.until("both sandbox nodes in the cluster view", Duration.ofSeconds(60), () -> api.sandboxMembers() == 2);
        admin = "admin-" + UUID.randomUUID();
        api.ask(admin, "hello");
        // The operator grants the role (clawfleet admin grant --chat api:<chat>); no chat can take it.
        assertThat(api.call("PUT", "/api/v1/chats/api/" + admin + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        result(vertx.close());
    }

    @Test
    @Order(1)
    void sandboxOnlyNodesRunWithoutDatabaseOrModelKeysAndServeCalls() throws Exception {
        for (String id : List.of("sandbox-1", "sandbox-2")) {
            ClusterHarness.Node node = cluster.node(id);
            // given a sandbox-only node whose process holds no database URL and no model key (read from the kernel)
            String environ = new String(Files.readAllBytes(Path.of("/proc", Long.toString(node.pid()), "environ")),
                    StandardCharsets.UTF_8);
            assertThat(environ).contains("CLAWFLEET_ROLES=sandbox").doesNotContain("CLAWFLEET_DB_URL")
                    .doesNotContain("CLAWFLEET_LLM_").doesNotContain(ClusterHarness.API_KEY).doesNotContain(BOOTSTRAP);
            // then it is ready, and it did not warn about secrets it should not have
            assertThat(cluster.ready(node)).isTrue();
            assertThat(Files.readString(node.log())).doesNotContain("which it never uses");
        }
        // and it serves calls (only sandbox-only nodes can run the shell in this cluster)
        assertThat(shellNow("echo served")).contains("served");
    }

    @Test
    @Order(2)
    void aSandboxNodeKilledMidRunLeavesTheCallToAnotherAndTheLastOneFailsCleanly() throws Exception {
        // given two sandbox nodes, and a command that takes a few seconds
        assertThat(shellNow("env")).contains("PATH=").doesNotContain(CANARY);
        String chat = admin;
        String slow = shellCommand("sh -c 'sleep 5; echo survived'");

        // when the node running it is killed
        String first = api.send(chat, slow);
        ClusterHarness.Node running = api.awaitRunningNode(List.of("sandbox-1", "sandbox-2"));
        cluster.kill(running.id());

        // then the call ran again on the other node and the chat got its output
        assertThat(api.reply(chat, first)).contains("survived");

        // when the last sandbox node is killed mid-run too
        Await.until("the killed node gone from the cluster view", Duration.ofSeconds(30), () -> api.sandboxMembers() == 1);
        String second = api.send(chat, slow);
        ClusterHarness.Node last = api.awaitRunningNode(List.of(running.id().equals("sandbox-1") ? "sandbox-2" : "sandbox-1"));
        cluster.kill(last.id());

        // then the call fails cleanly, saying why, long before its time limit
        assertThat(api.reply(chat, second)).contains("error").contains("sandbox node").doesNotContain("survived");
        // and without any sandbox node, a new call says so at once
        Await.until("no sandbox node in the cluster view", Duration.ofSeconds(30), () -> api.sandboxMembers() == 0);
        assertThat(shellNow("echo hi")).contains("no sandbox node is running");
    }

    private static String shellCommand(String command) {
        return "call:shell_exec " + new JsonObject().put("command", command).encode();
    }

    private String shellNow(String command) throws Exception {
        return api.ask(admin, shellCommand(command));
    }
}
