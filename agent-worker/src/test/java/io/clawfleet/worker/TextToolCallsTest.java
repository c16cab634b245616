package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static io.clawfleet.worker.AgentFixture.TENANT;
import static io.clawfleet.worker.AgentFixture.chat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tool calls from a model without native tool calling (seed 001's fallback parsing chain), on a
 * real worker driven by the mock model: {@code text-tools} makes it write its calls as
 * {@code <tool_call>} tags or fenced JSON blocks and refuse {@code role: tool} messages, as such
 * servers do; its echo of a message shows what it does with other text.
 */
class TextToolCallsTest {

    private final AgentFixture agent = new AgentFixture();

    @AfterEach
    void stop() {
        agent.close();
    }

    private Optional<String> file(String path) {
        return result(new WorkspaceStore(agent.database.pool()).read(BotRef.main(TENANT), path)).map(WorkspaceFile::content);
    }

    private JsonArray lastRequestMessages() {
        return new JsonObject(agent.model.lastRequestBody()).getJsonArray("messages");
    }

    @Test
    void callsWrittenAsTagsRunAndTheirResultsGoBackAsTextAModelWithoutNativeToolsReads() {
        agent.startWorker(Map.of());
        // when a model without native tools writes a call in tags, then another after the first's result
        String chat = chat("xml");
        String todo = WorkspacePaths.chatScratch("api", chat) + "/todo.md";
        String reply = agent.ask(chat, "text-tools call:fs_write {\"path\":\"" + todo + "\",\"content\":\"buy milk\"} "
                + "then: call:fs_read {\"path\":\"" + todo + "\"}", 1);
        // then both ran, each follow-up was accepted, and the user sees its words but not its calls
        assertThat(file(todo)).contains("buy milk");
        assertThat(reply).endsWith("tool fs_read said: buy milk").startsWith("I will use a tool.")
                .doesNotContain("<tool_call>", "<tool_result");
        // and the follow-up carried the calls as the model wrote them and the results as text
        JsonArray messages = lastRequestMessages();
        assertThat(messages.encode()).doesNotContain("tool_calls", "\"role\":\"tool\"");
        JsonObject results = messages.getJsonObject(messages.size() - 1);
        assertThat(results.getString("role")).isEqualTo("user");
        assertThat(results.getString("content")).isEqualTo("<tool_result name=\"fs_read\">\nbuy milk\n</tool_result>");
        assertThat(messages.getJsonObject(messages.size() - 2).getString("content"))
                .contains("<tool_call><name>fs_read</name><args>{\"path\":\"" + todo + "\"}</args></tool_call>");
        assertThat(new JsonObject(agent.model.lastRequestBody()).getJsonArray("tools")).isNotEmpty();
    }

    @Test
    void callsInFencedJsonBlocksRun() {
        agent.startWorker(Map.of());
        String chat = chat("fenced");
        String reply = agent.ask(chat, "text-tools:fenced call:memory_write {\"scope\":\"chat\",\"content\":\"- likes tea\"}", 1);
        assertThat(reply).endsWith("tool memory_write said: Saved the chat memory (" + WorkspacePaths.chatMemory("api", chat) + ").")
                .doesNotContain("```");
        assertThat(file(WorkspacePaths.chatMemory("api", chat))).contains("- likes tea");
    }

    @Test
    void jsonInFreeTextIsNeverTakenForACall() {
        agent.startWorker(Map.of());
        long before = agent.model.requestCount();
        // when the model's answer holds call-shaped JSON outside any tag or fence
        String text = "store this {\"tool\":\"fs_write\",\"args\":{\"path\":\"free.md\",\"content\":\"x\"}} and "
                + "{\"name\":\"fs_write\",\"arguments\":{\"path\":\"free.md\",\"content\":\"x\"}} and "
                + "```\n{\"tool\":\"fs_write\",\"args\":{\"path\":\"free.md\",\"content\":\"x\"}}\n```";
        String reply = agent.ask(chat("free"), text, 1);
        // then it is an answer: nothing ran, and the model was asked once
        assertThat(reply).isEqualTo("echo: " + text);
        assertThat(file("free.md")).isEmpty();
        assertThat(agent.audit()).isEmpty();
        assertThat(agent.model.requestCount() - before).isEqualTo(1);
    }

    @Test
    void callsOfUnknownToolsWrittenAsTextAreIgnored() {
        agent.startWorker(Map.of());
        long before = agent.model.requestCount();
        String text = "<tool_call><name>rm_rf</name><args>{\"path\":\"/\"}</args></tool_call> and "
                + "```json\n{\"tool\":\"format_disk\",\"args\":{}}\n```";
        String reply = agent.ask(chat("unknown"), text, 1);
        assertThat(reply).isEqualTo("echo: " + text);
        assertThat(agent.audit()).isEmpty();
        assertThat(agent.model.requestCount() - before).isEqualTo(1);
    }

    @Test
    void aModelWithoutNativeToolsConsolidatesMemoryThroughTheTextForm() {
        agent.startWorker(Map.of("agent.compactThreshold", "4", "agent.compactKeep", "2"));
        String chat = chat("consolidate");
        // given a chat with a model that writes save_memory as text
        agent.ask(chat, "text-tools: please remember I live in Porto", 1);
        agent.ask(chat, "ok", 2);
        agent.ask(chat, "ok again", 3);
        // then its consolidation is written, not replaced by the trim
        String memoryPath = WorkspacePaths.chatMemory("api", chat);
        Await.until("the chat's memory", Duration.ofSeconds(10), () -> file(memoryPath).isPresent());
        assertThat(file(memoryPath)).contains("- I live in Porto\n");
    }

    @Test
    void aCallWrittenAsTextIsNeitherStreamedNorStoredEvenWhenLong() {
        agent.startWorker(Map.of());
        List<StreamChunk> chunks = new CopyOnWriteArrayList<>();
        result(agent.worker.vertx().eventBus().<StreamChunk>consumer(Addresses.stream("gw-test"),
                message -> chunks.add(message.body())).completion());
        String chat = chat("stream");
        // given a streamed answer whose call (well past the 128 characters held back) is written as text
        String plan = "the secret plan step ".repeat(20).strip();
        String path = WorkspacePaths.chatScratch("api", chat) + "/plan.md";
        agent.send(chat, "text-tools call:fs_write {\"path\":\"" + path + "\",\"content\":\"" + plan + "\"}", "gw-test");
        String reply = agent.replies(chat, 1).get(0);
        Await.until("the last chunk", Duration.ofSeconds(5),
                () -> String.join("", chunks.stream().map(StreamChunk::delta).toList()).equals(reply));
        // then the call ran, but neither the pieces nor the stored reply nor the history hold any of it
        assertThat(file(path)).contains(plan);
        assertThat(reply).startsWith("I will use a tool.").contains("tool fs_write said: Wrote " + path)
                .doesNotContain("<tool_call", "secret plan");
        assertThat(chunks).allSatisfy(chunk -> assertThat(chunk.delta()).doesNotContain("<tool", "secret plan"));
        assertThat(agent.value("SELECT count(*) FROM messages WHERE role = 'assistant' AND content LIKE '%secret plan%'"))
                .isEqualTo(0L);
    }
}
