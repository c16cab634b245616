package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The official OpenAI SDK (npm {@code openai}) against the OpenAI-compatible endpoint (issue 14): a completion has
 * {@code usage} and an id of its own, a stream with {@code stream_options.include_usage} ends with a usage chunk,
 * client-defined {@code tools} are a 400 the SDK raises as an error, an unknown model a 404.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OpenAiSdkTest {

    private static final Path PEERS = Path.of("src", "test", "node");
    private static final String KEY = "openai-sdk-key-0123456789abc";

    private Vertx vertx;
    private NodeRuntime node;

    @BeforeAll
    void start() {
        assumeTrue(Files.isDirectory(PEERS.resolve("node_modules/openai")),
                "the openai npm package is not installed (./clawfleet test installs it with npm)");
        vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        ClawfleetConfig config = TestNodes.config("gateway,worker", Map.of("apiKey", KEY,
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock"));
        node = TestNodes.start(config, TestDatabases.freshEmpty(), Roles.of(config));
    }

    @AfterAll
    void stop() {
        if (node != null) {
            result(node.stop(), Duration.ofSeconds(60));
        }
        if (vertx != null) {
            result(vertx.close());
        }
    }

    @Test
    void theOfficialSdkGetsUsageUniqueIdsAStreamUsageChunkAndClearRefusals() throws Exception {
        ProcessBuilder builder = new ProcessBuilder("node", "openai-client.mjs").directory(PEERS.toFile());
        builder.environment().put("CLAWFLEET_URL", "http://127.0.0.1:" + node.httpPort());
        builder.environment().put("CLAWFLEET_API_KEY", KEY);
        builder.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process client = builder.start();
        String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(client.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(client.exitValue()).as(out).isZero();
        JsonObject seen = new JsonObject(List.of(out.split("\n")).getLast());

        JsonObject first = seen.getJsonObject("first");
        assertThat(first.getString("object")).isEqualTo("chat.completion");
        assertThat(first.getString("content")).contains("hello from the SDK");
        JsonObject usage = first.getJsonObject("usage");
        assertThat(usage.getInteger("prompt_tokens")).isPositive();
        assertThat(usage.getInteger("completion_tokens")).isPositive();
        assertThat(usage.getInteger("total_tokens")).isEqualTo(usage.getInteger("prompt_tokens") + usage.getInteger("completion_tokens"));
        assertThat(seen.getJsonObject("second").getString("id")).isNotEqualTo(first.getString("id"));

        JsonObject stream = seen.getJsonObject("stream");
        assertThat(stream.getString("text")).contains("hello from the SDK");
        assertThat(stream.getJsonArray("ids")).hasSize(1);
        JsonObject last = stream.getJsonObject("last");
        assertThat(last.getInteger("choices")).isZero();
        assertThat(last.getJsonObject("usage").getInteger("total_tokens")).isPositive();

        JsonObject tools = seen.getJsonObject("tools");
        assertThat(tools.getBoolean("refused")).isTrue();
        assertThat(tools.getInteger("status")).isEqualTo(400);
        assertThat(tools.getString("code")).isEqualTo("unsupported_parameter");
        assertThat(tools.getString("message")).contains("tools");
        JsonObject unknown = seen.getJsonObject("unknownModel");
        assertThat(unknown.getInteger("status")).isEqualTo(404);
        assertThat(unknown.getString("code")).isEqualTo("model_not_found");
    }
}
