package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.tracing.Tracing;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node in this JVM talking to the mock model, on a fresh database, for the tests that need a whole node but not
 * separate JVMs (AllInOneTest, SandboxAllInOneTest, SecurityAttacksTest, AlertRulesTest, TracingTest, ConsoleApiTest):
 * its Vert.x, the model, the node, its address and the default tenant's side of the API. Closing it stops the node,
 * then the model.
 */
final class MockedNode implements AutoCloseable {

    final Vertx vertx = Vertx.vertx();
    final MockLlmServer model = new MockLlmServer(vertx, 0);
    final DbUrl db;
    final NodeRuntime node;
    /** {@code http://127.0.0.1:<port>} */
    final String base;
    /** The default tenant, with the key the node was given. */
    final ApiChat api;

    /**
     * @param roles    the node's roles, e.g. {@code gateway,worker}
     * @param key      the default tenant's API key
     * @param settings more configuration; the model's address and name are set already
     */
    static MockedNode start(String roles, String key, Map<String, String> settings) {
        return start(roles, key, settings, TestDatabases.freshEmpty(), null);
    }

    /** As above, on {@code db}, tracing through {@code tracing} (null: as the OTEL_* variables say). */
    static MockedNode start(String roles, String key, Map<String, String> settings, DbUrl db, Tracing tracing) {
        return new MockedNode(roles, key, settings, db, tracing);
    }

    private MockedNode(String roles, String key, Map<String, String> settings, DbUrl db, Tracing tracing) {
        this.db = db;
        result(model.start("127.0.0.1", 0));
        Map<String, String> all = new HashMap<>(Map.of("apiKey", key, "llm.baseUrl", modelUrl(), "llm.model", "mock"));
        all.putAll(settings);
        ClawfleetConfig config = TestNodes.config(roles, all);
        node = TestNodes.start(config, db, Roles.of(config), tracing);
        base = "http://127.0.0.1:" + node.httpPort();
        api = new ApiChat(base, key);
    }

    /** The mock model's OpenAI-compatible base URL. */
    String modelUrl() {
        return "http://127.0.0.1:" + model.port() + "/v1";
    }

    /**
     * A new chat made admin by its tenant, as {@code clawfleet admin grant} does (the shell is an admin's tool): it says
     * hello first, so that it exists.
     */
    String adminChat() throws Exception {
        String chat = "admin-" + UUID.randomUUID();
        api.ask(chat, "hello");
        assertThat(api.call("PUT", "/api/v1/chats/api/" + chat + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
        return chat;
    }

    @Override
    public void close() {
        try {
            result(node.stop(), Duration.ofSeconds(60));
        } finally {
            result(vertx.close());
        }
    }
}
