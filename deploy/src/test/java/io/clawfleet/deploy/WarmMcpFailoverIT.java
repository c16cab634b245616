package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.McpPeers;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Warm stdio MCP sessions across sandbox nodes in separate JVMs (issue 16): a server with state in its process
 * ({@code mcp-counter.js}) serves a bot's calls from one warm process; when the node holding it is killed (kill -9)
 * in the middle of a call, a read-only, idempotent call is answered once from a session re-created on another node,
 * and a call that changes state is not run again but fails saying so; the next call finds the new session.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class WarmMcpFailoverIT {

    private static final Pattern COUNT = Pattern.compile("count (\\d+) pid (\\d+)");
    private static final List<String> SANDBOXES = List.of("sandbox-1", "sandbox-2", "sandbox-3");

    private Vertx vertx;
    private ClusterHarness cluster;
    private ClusterHarness.Node gateway;
    private String admin;
    private SandboxClusterChat api;

    @BeforeAll
    void start() throws Exception {
        String node = McpPeers.node();
        McpPeers.everything(); // skips without the test peers
        vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 4)
                .env("CLAWFLEET_AGENT_AUTONOMY", "full")
                .env("CLAWFLEET_SANDBOX_READ_ONLY_PATHS", McpPeers.folder().toString());
        gateway = cluster.start("core-1", "gateway,worker");
        api = new SandboxClusterChat(cluster, gateway);
        for (String id : SANDBOXES) {
            cluster.start(id, "sandbox");
        }
        cluster.awaitReady(Duration.ofSeconds(120));
        Await.until("the sandbox nodes in the cluster view", Duration.ofSeconds(60), () -> api.sandboxMembers() == 3);
        admin = "admin-" + UUID.randomUUID();
        api.ask(admin, "hello");
        assertThat(api.call("PUT", "/api/v1/chats/api/" + admin + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
        String mcpJson = new JsonObject().put("mcpServers", new JsonObject().put("counter", new JsonObject().put("command", node)
                .put("args", new JsonArray().add(McpPeers.folder().resolve("mcp-counter.js").toString())))).encode();
        HttpResponse<String> put = api.call("PUT", "/api/v1/workspace/files/.mcp.json", new JsonObject().put("content", mcpJson));
        assertThat(put.statusCode()).as(put.body()).isIn(200, 201);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        result(vertx.close());
    }

    @Test
    void aWarmSessionServesCallsAndIsRecreatedOnAnotherNodeWhenItsNodeDies() throws Exception {
        // given calls to a server with state: one warm process serves them all
        long[] first = count(api.ask(admin, "call:mcp__counter__count {}"));
        long[] second = count(api.ask(admin, "call:mcp__counter__count {}"));
        long[] third = count(api.ask(admin, "call:mcp__counter__count {}"));
        assertThat(new long[] {first[0], second[0], third[0]}).containsExactly(1, 2, 3);
        assertThat(second[1]).isEqualTo(first[1]);
        assertThat(third[1]).isEqualTo(first[1]);

        // when the node holding the session is killed in the middle of a read-only, idempotent call
        String peek = api.send(admin, "call:mcp__counter__peek_slowly {\"ms\": 4000}");
        ClusterHarness.Node holder = api.awaitRunningNode(SANDBOXES);
        cluster.kill(holder.id());

        // then the call is answered once, from a new session on another node (whose counter starts again)
        assertThat(count(api.reply(admin, peek))[0]).isZero();
        Await.until("the killed node gone from the cluster view", Duration.ofSeconds(30), () -> api.sandboxMembers() == 2);
        assertThat(count(api.ask(admin, "call:mcp__counter__count {}"))[0]).isEqualTo(1);
        assertThat(count(api.ask(admin, "call:mcp__counter__count {}"))[0]).isEqualTo(2);

        // when the node now holding it is killed in the middle of a call that changes state
        List<String> left = new ArrayList<>(SANDBOXES);
        left.remove(holder.id());
        String change = api.send(admin, "call:mcp__counter__count_slowly {\"ms\": 4000}");
        ClusterHarness.Node nextHolder = api.awaitRunningNode(left);
        cluster.kill(nextHolder.id());

        // then it is not run again (it may have counted), and the chat is told so
        assertThat(api.reply(admin, change)).contains("error").contains("not run again").doesNotContain("count 3");
        // and the next call finds a session on the last node
        Await.until("the second killed node gone from the cluster view", Duration.ofSeconds(30), () -> api.sandboxMembers() == 1);
        assertThat(count(api.ask(admin, "call:mcp__counter__count {}"))[0]).isEqualTo(1);
    }

    /** [count, pid] from the counter's answer. */
    private static long[] count(String reply) {
        Matcher m = COUNT.matcher(reply);
        assertThat(m.find()).as("a count in: " + reply).isTrue();
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))};
    }
}
