package io.clawfleet.worker.llm;

import io.clawfleet.shared.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.List;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OpenAiCompatibleProviderTest {

    private Vertx vertx;
    private MockLlmServer mock;
    private MockLlmServer slow;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        mock = new MockLlmServer(vertx, 0);
        result(mock.start("127.0.0.1", 0));
        slow = new MockLlmServer(vertx, 2_000);
        result(slow.start("127.0.0.1", 0));
    }

    @AfterAll
    void stop() {
        result(vertx.close());
    }

    private OpenAiCompatibleProvider provider(MockLlmServer server, long timeoutMs, int retries) {
        return new OpenAiCompatibleProvider(vertx, "http://127.0.0.1:" + server.port() + "/v1", "sk-test", "mock",
                timeoutMs, retries, 10);
    }

    @Test
    void answersAChat() {
        LlmResponse response = result(provider(mock, 5_000, 0).complete(new LlmRequest(null,
                List.of(ChatMessage.system("be brief"), ChatMessage.user("hello")), List.of())));
        assertThat(response.content()).isEqualTo("echo: hello");
        assertThat(response.finishReason()).isEqualTo("stop");
        assertThat(response.inputTokens()).isPositive();
    }

    @Test
    void sendsTheConfiguredModelAndTheKeyOnlyInTheHeader() {
        result(provider(mock, 5_000, 0).complete(new LlmRequest(null, List.of(ChatMessage.user("x")), List.of())));
        JsonObject sent = new JsonObject(mock.lastRequestBody());
        assertThat(sent.getString("model")).isEqualTo("mock");
        assertThat(mock.lastRequestBody()).doesNotContain("sk-test");
    }

    @Test
    void parsesToolCalls() {
        LlmResponse response = result(provider(mock, 5_000, 0).complete(new LlmRequest(null,
                List.of(ChatMessage.user("call:fs_list {\"path\":\".\"}")),
                List.of(new ToolDefinition("fs_list", "list", new JsonObject().put("type", "object"))))));
        assertThat(response.toolCalls()).singleElement().satisfies(call -> {
            assertThat(call.name()).isEqualTo("fs_list");
            assertThat(new JsonObject(call.arguments()).getString("path")).isEqualTo(".");
        });
    }

    @Test
    void retriesServerErrorsThenGivesUpWithTheStatus() {
        long before = mock.requestCount();
        Throwable error = failure(provider(mock, 5_000, 2).complete(new LlmRequest(null,
                List.of(ChatMessage.user("fail:503")), List.of())));
        assertThat(error).isInstanceOf(LlmException.class);
        assertThat(((LlmException) error).status()).isEqualTo(503);
        assertThat(mock.requestCount() - before).isEqualTo(3);
    }

    @Test
    void doesNotRetryAClientError() {
        long before = mock.requestCount();
        Throwable error = failure(provider(mock, 5_000, 3).complete(new LlmRequest(null,
                List.of(ChatMessage.user("fail:400")), List.of())));
        assertThat(((LlmException) error).retryable()).isFalse();
        assertThat(mock.requestCount() - before).isEqualTo(1);
    }

    @Test
    void aSlowModelTimesOut() {
        Throwable error = failure(provider(slow, 300, 0).complete(new LlmRequest(null, List.of(ChatMessage.user("x")), List.of())));
        assertThat(error).hasMessageContaining("timed out after 300 ms");
    }
}
