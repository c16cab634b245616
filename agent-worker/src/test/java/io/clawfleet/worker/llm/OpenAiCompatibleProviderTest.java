package io.clawfleet.worker.llm;

import io.clawfleet.testkit.MisbehavingServer;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

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
    void theBodySentIsTheRequestJsonByteForByteWhetherItsConstantPartIsEncodedOrKept() {
        OpenAiCompatibleProvider provider = provider(mock, 5_000, 0);
        String botText = "You are \"Clawfleet\" \u00e9\u4e2d\ud83d\ude00 </script> \\ \n\t\u0001 line";
        List<ChatMessage> messages = List.of(ChatMessage.system(botText), ChatMessage.system("chat: 42"),
                ChatMessage.user("hi \"there\""),
                new ChatMessage("assistant", null, List.of(new ToolCallRequest("c1", "fs_list", "{\"path\":\".\"}")), null, null),
                new ChatMessage("tool", "a\nb", null, "c1", "fs_list"), ChatMessage.assistant(null));
        List<ToolDefinition> tools = List.of(new ToolDefinition("fs_list", "list \u00e9", new JsonObject().put("type", "object")
                        .put("properties", new JsonObject().put("path", new JsonObject().put("type", "string")))),
                new ToolDefinition("fs_read", "read", new JsonObject().put("type", "object")));
        for (boolean stream : new boolean[] {false, true}) {
            for (LlmRequest request : List.of(new LlmRequest(null, messages, tools), new LlmRequest("other", messages, List.of()),
                    new LlmRequest(null, List.of(ChatMessage.user("only")), tools), new LlmRequest(null, List.of(), List.of()))) {
                Buffer expected = provider.requestJson(request, stream).toBuffer();
                assertThat(provider.requestBody(request, stream).toString()).isEqualTo(expected.toString());
                assertThat(provider.requestBody(request, stream).toString()).as("kept").isEqualTo(expected.toString());
            }
        }
    }

    @Test
    void aToolChangedAfterItsRequestWasEncodedIsSentAsItIsNow() {
        OpenAiCompatibleProvider provider = provider(mock, 5_000, 0);
        JsonObject parameters = new JsonObject().put("type", "object");
        List<ToolDefinition> tools = List.of(new ToolDefinition("fs_list", "list", parameters));
        LlmRequest request = new LlmRequest(null, List.of(ChatMessage.system("bot"), ChatMessage.user("x")), tools);
        assertThat(provider.requestBody(request, false).toString()).contains("{\"type\":\"object\"}");
        parameters.put("required", new io.vertx.core.json.JsonArray().add("path"));
        assertThat(provider.requestBody(request, false).toString())
                .isEqualTo(provider.requestJson(request, false).toBuffer().toString())
                .contains("\"required\":[\"path\"]");
        LlmRequest otherBot = new LlmRequest(null, List.of(ChatMessage.system("another bot"), ChatMessage.user("x")), tools);
        assertThat(provider.requestBody(otherBot, false).toString()).contains("another bot").doesNotContain("\"bot\"");
    }

    @Test
    void twoTenantsBotsSharingTheWorkersCacheEachSendOnlyTheirOwnTextAndTools() {
        // the operator's endpoint and a tenant's own: both providers use the worker's one cache
        OpenAiCompatibleProvider operators = provider(mock, 5_000, 0);
        OpenAiCompatibleProvider tenants = new OpenAiCompatibleProvider(vertx, new LlmEndpoint("tenant-b", "http://127.0.0.1:"
                + mock.port() + "/v1", "sk-b", "mock", 5_000, 0, 10, 0), null);
        String textA = "tenant-a bot: secret plan " + java.util.UUID.randomUUID();
        String textB = "tenant-b bot: other plan " + java.util.UUID.randomUUID();
        List<ToolDefinition> toolsA = List.of(new ToolDefinition("a_only", "A's tool", new JsonObject().put("type", "object")));
        List<ToolDefinition> toolsB = List.of(new ToolDefinition("b_only", "B's tool", new JsonObject().put("type", "object")));
        for (int round = 0; round < 3; round++) {
            for (OpenAiCompatibleProvider provider : List.of(operators, tenants)) {
                String a = provider.requestBody(new LlmRequest(null, List.of(ChatMessage.system(textA), ChatMessage.user("x")), toolsA), false).toString();
                String b = provider.requestBody(new LlmRequest(null, List.of(ChatMessage.system(textB), ChatMessage.user("x")), toolsB), false).toString();
                assertThat(a).contains(textA, "a_only").doesNotContain(textB, "b_only");
                assertThat(b).contains(textB, "b_only").doesNotContain(textA, "a_only");
            }
        }
        // the same text in both tenants is the same bytes, which is all either can get from the other's entry
        String shared = "You are a helpful assistant. " + java.util.UUID.randomUUID();
        LlmRequest same = new LlmRequest(null, List.of(ChatMessage.system(shared), ChatMessage.user("x")), toolsA);
        assertThat(tenants.requestBody(same, false).toString()).isEqualTo(operators.requestBody(same, false).toString())
                .isEqualTo(operators.requestJson(same, false).toBuffer().toString());
    }

    @Test
    void keepsEncodedPartsWithinItsBoundsOfPartsAndBytes() {
        EncodedParts parts = new EncodedParts(3, 1_000);
        for (int i = 0; i < 10; i++) {
            String key = "bot " + i;
            assertThat(new String(parts.text("f", key, key::getBytes))).isEqualTo(key);
        }
        assertThat(parts.size()).isEqualTo(3);
        int[] encodings = {0};
        parts.text("f", "bot 9", () -> { encodings[0]++; return new byte[0]; });
        parts.text("f", "bot 0", () -> { encodings[0]++; return new byte[0]; });
        assertThat(encodings[0]).as("bot 9 kept, bot 0 evicted").isEqualTo(1);
        // the same part in another format is another entry
        assertThat(new String(parts.text("g", "bot 9", () -> "other".getBytes()))).isEqualTo("other");
        // bytes: ten parts of 100 fit in 1,000, an eleventh pushes the eldest out; one over an eighth is not kept
        EncodedParts bounded = new EncodedParts(100, 1_000);
        for (int i = 0; i < 11; i++) {
            bounded.text("f", "part " + i, () -> new byte[100]);
        }
        assertThat(bounded.size()).isEqualTo(10);
        assertThat(bounded.bytes()).isEqualTo(1_000);
        assertThat(bounded.text("f", "huge", () -> new byte[126])).hasSize(126);
        assertThat(bounded.size()).isEqualTo(10);
        assertThat(bounded.bytes()).isEqualTo(1_000);
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

    @Test
    void streamsDeltasInOrderAndJoinsThemToTheAnswer() {
        // given a streaming call / when the model answers word by word / then deltas arrive in order and join to the content
        List<String> deltas = new CopyOnWriteArrayList<>();
        LlmResponse response = result(provider(mock, 5_000, 0).complete(new LlmRequest(null,
                List.of(ChatMessage.user("one two three four")), List.of()), deltas::add));
        assertThat(deltas).hasSizeGreaterThan(3);
        assertThat(String.join("", deltas)).isEqualTo("echo: one two three four").isEqualTo(response.content());
        assertThat(response.finishReason()).isEqualTo("stop");
        JsonObject sent = new JsonObject(mock.lastRequestBody());
        assertThat(sent.getBoolean("stream")).isTrue();
        assertThat(sent.getJsonObject("stream_options").getBoolean("include_usage")).isTrue();
        assertThat(response.inputTokens()).isPositive();
        assertThat(response.outputTokens()).isPositive();
    }

    @Test
    void assemblesToolCallsFromStreamedPieces() {
        // given two scripted calls whose arguments arrive in small pieces / when streamed / then each call is whole
        List<String> deltas = new CopyOnWriteArrayList<>();
        LlmResponse response = result(provider(mock, 5_000, 0).complete(new LlmRequest(null,
                List.of(ChatMessage.user("call:fs_list {\"path\":\"notes/today\"} call:fs_read {\"path\":\"notes/today/a.md\"}")),
                List.of(new ToolDefinition("fs_list", "list", new JsonObject().put("type", "object")),
                        new ToolDefinition("fs_read", "read", new JsonObject().put("type", "object")))), deltas::add));
        assertThat(deltas).isEmpty();
        assertThat(response.finishReason()).isEqualTo("tool_calls");
        assertThat(response.content()).isNull();
        assertThat(response.toolCalls()).hasSize(2);
        assertThat(response.toolCalls().get(0).name()).isEqualTo("fs_list");
        assertThat(new JsonObject(response.toolCalls().get(0).arguments())).isEqualTo(new JsonObject().put("path", "notes/today"));
        assertThat(response.toolCalls().get(1).name()).isEqualTo("fs_read");
        assertThat(new JsonObject(response.toolCalls().get(1).arguments())).isEqualTo(new JsonObject().put("path", "notes/today/a.md"));
        assertThat(response.toolCalls()).extracting(ToolCallRequest::id).doesNotContainNull().doesNotHaveDuplicates();
    }

    @Test
    void retriesAStreamThatFailsBeforeItsFirstDelta() {
        long before = mock.requestCount();
        List<String> deltas = new CopyOnWriteArrayList<>();
        Throwable error = failure(provider(mock, 5_000, 2).complete(new LlmRequest(null,
                List.of(ChatMessage.user("fail:503")), List.of()), deltas::add));
        assertThat(((LlmException) error).status()).isEqualTo(503);
        assertThat(mock.requestCount() - before).isEqualTo(3);
        assertThat(deltas).isEmpty();
    }

    @Test
    void doesNotRetryAStreamThatBrokeAfterItsFirstDelta() {
        // given a server that sends one delta and drops the connection / when streamed with retries / then one request, one delta, a failure
        MisbehavingServer broken = MisbehavingServer.start(vertx, MisbehavingServer.breakingAfter(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"));
        List<String> deltas = new CopyOnWriteArrayList<>();
        Throwable error = failure(new OpenAiCompatibleProvider(vertx, broken.url() + "/v1", "sk-test", "mock", 5_000, 3, 10)
                .complete(new LlmRequest(null, List.of(ChatMessage.user("hi")), List.of()), deltas::add));
        assertThat(error).isInstanceOf(LlmException.class);
        assertThat(deltas).containsExactly("Hel");
        assertThat(broken.requests()).isEqualTo(1);
    }

    @Test
    void keepsTheKeyOutOfErrorsEvenWhenTheEndpointEchoesIt() {
        MisbehavingServer echoing = MisbehavingServer.start(vertx, MisbehavingServer.echoingHeaders(401));
        Throwable error = failure(new OpenAiCompatibleProvider(vertx, echoing.url() + "/v1", "sk-very-secret-key", "mock", 5_000, 0, 10)
                .complete(new LlmRequest(null, List.of(ChatMessage.user("hi")), List.of())));
        assertThat(((LlmException) error).status()).isEqualTo(401);
        assertThat(error.getMessage()).contains("authorization=Bearer [redacted]").doesNotContain("sk-very-secret-key");
    }
}
