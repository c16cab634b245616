package io.clawfleet.worker.llm;

import io.clawfleet.testkit.MisbehavingServer;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The Anthropic Messages API provider against the mock model, which validates requests as the real API does. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AnthropicProviderTest {

    private static final String KEY = "sk-ant-test-0123456789";
    private static final List<ToolDefinition> TOOLS = List.of(
            new ToolDefinition("fs_list", "list a folder", new JsonObject().put("type", "object")),
            new ToolDefinition("fs_read", "read a file", new JsonObject().put("type", "object")));

    private Vertx vertx;
    private MockLlmServer mock;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        mock = new MockLlmServer(vertx, 0);
        result(mock.start("127.0.0.1", 0));
    }

    @AfterAll
    void stop() {
        result(vertx.close());
    }

    private AnthropicProvider provider(String baseUrl, int retries) {
        return new AnthropicProvider(vertx, new LlmEndpoint("claude", baseUrl, KEY, "claude-test", 5_000, retries, 10, 1_024));
    }

    private AnthropicProvider provider(int retries) {
        return provider("http://127.0.0.1:" + mock.port(), retries);
    }

    private JsonObject sent() {
        return new JsonObject(mock.lastRequestBody());
    }

    @Test
    void theBodySentIsTheRequestJsonByteForByteWhetherItsConstantPartIsEncodedOrKept() {
        AnthropicProvider provider = provider(0);
        String botText = "You are \"Clawfleet\" \u00e9\u4e2d\ud83d\ude00 </script> \\ \n\t\u0001 line";
        List<ChatMessage> turn = List.of(ChatMessage.system(botText), ChatMessage.system("chat: 42"), ChatMessage.system(" "),
                ChatMessage.assistant("earlier"), ChatMessage.user("hi \"there\""),
                new ChatMessage("assistant", null, List.of(new ToolCallRequest("c1", "fs_list", "{\"path\":\".\"}"),
                        new ToolCallRequest("c2", "fs_read", "not json")), null, null),
                new ChatMessage("tool", "a\nb", null, "c1", "fs_list"), new ChatMessage("tool", null, null, "c2", "fs_read"),
                ChatMessage.user("and?"));
        List<ToolDefinition> tools = List.of(new ToolDefinition("fs_list", "list \u00e9", new JsonObject().put("type", "object")),
                new ToolDefinition("fs_read", null, null));
        for (boolean stream : new boolean[] {false, true}) {
            for (LlmRequest request : List.of(new LlmRequest(null, turn, tools), new LlmRequest("other", turn, List.of()),
                    new LlmRequest(null, List.of(ChatMessage.system(botText), ChatMessage.user("lone system")), tools),
                    new LlmRequest(null, List.of(ChatMessage.user("only")), List.of()))) {
                String expected = provider.requestJson(request, stream).toBuffer().toString();
                assertThat(provider.requestBody(request, stream).toString()).isEqualTo(expected);
                assertThat(provider.requestBody(request, stream).toString()).as("kept").isEqualTo(expected);
            }
        }
    }

    @Test
    void answersWithTheSystemPromptAtTheTopAndCountsUsage() {
        LlmResponse response = result(provider(0).complete(new LlmRequest(null,
                List.of(ChatMessage.system("be brief"), ChatMessage.user("hello")), List.of())));
        assertThat(response.content()).isEqualTo("echo: hello");
        assertThat(response.finishReason()).isEqualTo("stop");
        assertThat(response.model()).isEqualTo("claude-test");
        assertThat(response.inputTokens()).isPositive();
        assertThat(response.outputTokens()).isPositive();
        JsonObject sent = sent();
        assertThat(sent.getJsonArray("system")).containsExactly(new JsonObject().put("type", "text").put("text", "be brief"));
        assertThat(sent.getInteger("max_tokens")).isEqualTo(1_024);
        assertThat(sent.getJsonArray("messages")).hasSize(1);
        assertThat(sent.getJsonArray("messages").getJsonObject(0).getString("role")).isEqualTo("user");
    }

    @Test
    void theBotsPartOfTheSystemPromptCarriesACacheBreakpointTheChatsPartNone() {
        // given a turn's context: the bot's system text, the chat's, and the message
        result(provider(0).complete(new LlmRequest(null, List.of(ChatMessage.system("You are Clawd."),
                ChatMessage.system("Chat: api:c-1 (normal)."), ChatMessage.user("hello")), TOOLS)));
        // then the first block ends the prefix Anthropic caches (tools, then that block); the chat's block is not cached
        JsonArray system = sent().getJsonArray("system");
        assertThat(system.getJsonObject(0)).isEqualTo(new JsonObject().put("type", "text").put("text", "You are Clawd.")
                .put("cache_control", new JsonObject().put("type", "ephemeral")));
        assertThat(system.getJsonObject(1)).isEqualTo(new JsonObject().put("type", "text").put("text", "Chat: api:c-1 (normal)."));
    }

    @Test
    void theSecondRequestOpeningWithTheSameBotTextIsServedFromTheCacheUpToTheBreakpoint() {
        // given a bot text long enough to be cached (Anthropic caches from 1,024 tokens on), and two chats of the bot
        String bot = "You are Clawd. " + "Keep replies short and kind. ".repeat(180);
        List<ChatMessage> first = List.of(ChatMessage.system(bot), ChatMessage.system("Chat: api:one (normal)."),
                ChatMessage.user("hello"));
        List<ChatMessage> second = List.of(ChatMessage.system(bot), ChatMessage.system("Chat: api:two (normal)."),
                ChatMessage.user("hello"));
        // when each sends a message, one after the other, streamed or not
        LlmResponse written = result(provider(0).complete(new LlmRequest(null, first, TOOLS)));
        LlmResponse read = result(provider(0).complete(new LlmRequest(null, second, TOOLS), text -> { }));
        // then the first wrote the prefix (tools and the bot's block) and the second read it, billed as cached input
        assertThat(written.cachedTokens()).isZero();
        assertThat(read.cachedTokens()).isGreaterThanOrEqualTo(1_024).isLessThan(read.inputTokens());
        assertThat(read.inputTokens()).isEqualTo(written.inputTokens());
    }

    @Test
    void acceptsABaseUrlThatAlreadyEndsInV1() {
        LlmResponse response = result(provider("http://127.0.0.1:" + mock.port() + "/v1", 0).complete(new LlmRequest(null,
                List.of(ChatMessage.user("hi")), List.of())));
        assertThat(response.content()).isEqualTo("echo: hi");
    }

    @Test
    void turnsSeveralToolUseBlocksIntoToolCalls() {
        LlmResponse response = result(provider(0).complete(new LlmRequest(null, List.of(
                ChatMessage.user("call:fs_list {\"path\":\".\"} call:fs_read {\"path\":\"a.md\"}")), TOOLS)));
        assertThat(response.finishReason()).isEqualTo("tool_calls");
        assertThat(response.content()).isNull();
        assertThat(response.toolCalls()).extracting(ToolCallRequest::name).containsExactly("fs_list", "fs_read");
        assertThat(new JsonObject(response.toolCalls().get(1).arguments())).isEqualTo(new JsonObject().put("path", "a.md"));
        JsonObject tool = sent().getJsonArray("tools").getJsonObject(0);
        assertThat(tool.getString("name")).isEqualTo("fs_list");
        assertThat(tool.getString("description")).isEqualTo("list a folder");
        assertThat(tool.getJsonObject("input_schema")).isEqualTo(new JsonObject().put("type", "object"));
    }

    @Test
    void sendsAToolRoundBackAsToolUseAndOneUserMessageOfResults() {
        // given the model asked for two tools / when both results go back / then the API accepts the translation and the model sees both
        AnthropicProvider provider = provider(0);
        ChatMessage ask = ChatMessage.user("call:fs_list {\"path\":\".\"} call:fs_read {\"path\":\"a.md\"}");
        LlmResponse calls = result(provider.complete(new LlmRequest(null, List.of(ChatMessage.system("tools ok"), ask), TOOLS)));
        ToolCallRequest list = calls.toolCalls().get(0);
        ToolCallRequest read = calls.toolCalls().get(1);
        List<ChatMessage> round = List.of(ChatMessage.system("tools ok"), ask,
                new ChatMessage("assistant", "Let me look.", calls.toolCalls(), null, null),
                new ChatMessage("tool", "a.md b.md", null, list.id(), "fs_list"),
                new ChatMessage("tool", "# A", null, read.id(), "fs_read"));

        LlmResponse answer = result(provider.complete(new LlmRequest(null, round, TOOLS)));

        assertThat(answer.content()).isEqualTo("tool fs_list said: a.md b.md\ntool fs_read said: # A");
        JsonArray messages = sent().getJsonArray("messages");
        assertThat(messages).hasSize(3);
        JsonArray assistant = messages.getJsonObject(1).getJsonArray("content");
        assertThat(assistant.getJsonObject(0)).isEqualTo(new JsonObject().put("type", "text").put("text", "Let me look."));
        assertThat(assistant.getJsonObject(1)).isEqualTo(new JsonObject().put("type", "tool_use").put("id", list.id())
                .put("name", "fs_list").put("input", new JsonObject().put("path", ".")));
        JsonObject results = messages.getJsonObject(2);
        assertThat(results.getString("role")).isEqualTo("user");
        assertThat(results.getJsonArray("content")).containsExactly(
                new JsonObject().put("type", "tool_result").put("tool_use_id", list.id()).put("content", "a.md b.md"),
                new JsonObject().put("type", "tool_result").put("tool_use_id", read.id()).put("content", "# A"));
    }

    @Test
    void startsWithAUserMessageWhenTheHistoryStartsWithTheAssistant() {
        LlmResponse response = result(provider(0).complete(new LlmRequest(null, List.of(
                ChatMessage.assistant("as I said"), ChatMessage.user("go on")), List.of())));
        assertThat(response.content()).isEqualTo("echo: go on");
        assertThat(sent().getJsonArray("messages").getJsonObject(0).getJsonArray("content").getJsonObject(0).getString("text"))
                .isEqualTo(AnthropicProvider.OMITTED);
    }

    @Test
    void streamsTextDeltasInOrderAndJoinsThemToTheAnswer() {
        List<String> deltas = new CopyOnWriteArrayList<>();
        LlmResponse response = result(provider(0).complete(new LlmRequest(null,
                List.of(ChatMessage.user("one two three four")), List.of()), deltas::add));
        assertThat(deltas).hasSizeGreaterThan(3);
        assertThat(String.join("", deltas)).isEqualTo("echo: one two three four").isEqualTo(response.content());
        assertThat(response.finishReason()).isEqualTo("stop");
        assertThat(response.inputTokens()).isPositive();
        assertThat(response.outputTokens()).isPositive();
        assertThat(sent().getBoolean("stream")).isTrue();
    }

    @Test
    void assemblesToolUseFromStreamedInputPieces() {
        List<String> deltas = new CopyOnWriteArrayList<>();
        LlmResponse response = result(provider(0).complete(new LlmRequest(null, List.of(
                ChatMessage.user("call:fs_list {\"path\":\"notes/today\"} call:fs_read {\"path\":\"notes/today/a.md\"}")), TOOLS),
                deltas::add));
        assertThat(deltas).isEmpty();
        assertThat(response.finishReason()).isEqualTo("tool_calls");
        assertThat(response.toolCalls()).extracting(ToolCallRequest::name).containsExactly("fs_list", "fs_read");
        assertThat(new JsonObject(response.toolCalls().get(0).arguments())).isEqualTo(new JsonObject().put("path", "notes/today"));
        assertThat(new JsonObject(response.toolCalls().get(1).arguments())).isEqualTo(new JsonObject().put("path", "notes/today/a.md"));
        assertThat(response.toolCalls()).extracting(ToolCallRequest::id).allMatch(id -> id.startsWith("toolu_"));
    }

    @ParameterizedTest
    @ValueSource(ints = {529, 503})
    void retriesOverloadAndServerErrorsThenGivesUpWithTheStatus(int status) {
        long before = mock.requestCount();
        Throwable error = failure(provider(2).complete(new LlmRequest(null, List.of(ChatMessage.user("fail:" + status)), List.of())));
        assertThat(((LlmException) error).status()).isEqualTo(status);
        assertThat(((LlmException) error).retryable()).isTrue();
        assertThat(mock.requestCount() - before).isEqualTo(3);
    }

    @Test
    void doesNotRetryABadRequest() {
        long before = mock.requestCount();
        Throwable error = failure(provider(3).complete(new LlmRequest(null, List.of(ChatMessage.user("fail:400")), List.of())));
        assertThat(((LlmException) error).retryable()).isFalse();
        assertThat(mock.requestCount() - before).isEqualTo(1);
    }

    @Test
    void keepsTheKeyInItsHeaderOnly() {
        result(provider(0).complete(new LlmRequest(null, List.of(ChatMessage.user("x")), List.of())));
        assertThat(mock.lastRequestBody()).doesNotContain(KEY);

        MisbehavingServer echoing = MisbehavingServer.start(vertx, MisbehavingServer.echoingHeaders(401));
        AnthropicProvider provider = provider(echoing.url(), 0);
        Throwable error = failure(provider.complete(new LlmRequest(null, List.of(ChatMessage.user("hi")), List.of())));
        assertThat(error.getMessage()).contains("x-api-key=[redacted]").doesNotContain(KEY);
        assertThat(provider.name()).doesNotContain(KEY);
    }
}
