package io.clawfleet.worker;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.workspace.WorkspacePaths;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;

import static io.clawfleet.shared.testing.Await.result;
import static io.clawfleet.worker.AgentFixture.TENANT;
import static io.clawfleet.worker.AgentFixture.chat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tenant's {@code storageBytes} limit seen from the agent (issue 14): a tool write that would grow the workspace
 * past it is a tool error naming the limit, which the model reads, and nothing is stored; compaction over a full
 * workspace still folds the chat but writes no history nor memory.
 */
class StorageLimitToolsTest {

    private final AgentFixture agent = new AgentFixture();

    @AfterEach
    void stop() {
        agent.close();
    }

    private Optional<String> file(String path) {
        return result(new WorkspaceStore(agent.database.pool()).read(BotRef.main(TENANT), path)).map(WorkspaceFile::content);
    }

    private long used() {
        return (Long) agent.value("SELECT coalesce(sum(octet_length(content)), 0)::bigint FROM workspace_files WHERE tenant_id = $1",
                TENANT);
    }

    /** Gives the tenant {@code room} bytes beyond what its files hold now. */
    private long limitTo(long room) {
        long limit = used() + room;
        agent.value("UPDATE tenants SET limits = jsonb_build_object('storageBytes', $2::bigint) WHERE id = $1 RETURNING id",
                TENANT, limit);
        return limit;
    }

    @Test
    void aToolWriteOverTheLimitIsAToolErrorNamingItAndStoresNothing() {
        agent.startWorker(Map.of());
        String chat = chat("full");
        String scratch = WorkspacePaths.chatScratch("api", chat);
        // given a workspace (its defaults seeded by a first turn) with room for 100 bytes more
        agent.ask(chat, "hello", 1);
        long limit = limitTo(100);
        // when the model writes 60 bytes, then 60 more
        assertThat(agent.ask(chat, "call:fs_write {\"path\":\"" + scratch + "/a.md\",\"content\":\"start" + "a".repeat(55) + "\"}", 2))
                .contains("Wrote");
        String refused = agent.ask(chat, "call:fs_write {\"path\":\"" + scratch + "/b.md\",\"content\":\"" + "b".repeat(60) + "\"}", 3);
        // then the second is refused with a text the model reads, naming the limit, and nothing is stored
        assertThat(refused).contains("error", "'storageBytes'", "at most " + limit + " bytes", "would take 60 bytes");
        assertThat(file(scratch + "/b.md")).isEmpty();
        // the memory and edit tools are held to it alike; a write that shrinks a file passes
        assertThat(agent.ask(chat, "call:memory_write {\"scope\":\"chat\",\"content\":\"" + "m".repeat(60) + "\"}", 4))
                .contains("error", "'storageBytes'");
        assertThat(file(WorkspacePaths.chatMemory("api", chat))).isEmpty();
        assertThat(agent.ask(chat, "call:fs_edit {\"path\":\"" + scratch + "/a.md\",\"old_text\":\"start\",\"new_text\":\""
                + "e".repeat(60) + "\"}", 5)).contains("error", "'storageBytes'");
        assertThat(file(scratch + "/a.md")).contains("start" + "a".repeat(55));
        assertThat(agent.ask(chat, "call:fs_write {\"path\":\"" + scratch + "/a.md\",\"content\":\"short\"}", 6)).contains("Wrote");
        assertThat(used()).isLessThanOrEqualTo(limit);
    }

    @Test
    void aCompactionOverAFullWorkspaceFoldsTheChatButWritesNoHistoryNorMemory() {
        agent.startWorker(Map.of("agent.compactThreshold", "4", "agent.compactKeep", "2"));
        String chat = chat("compact");
        agent.ask(chat, "hello", 1);
        limitTo(0);
        agent.ask(chat, "please remember my name is Zed", 2);
        agent.ask(chat, "third", 3);
        // when the chat is compacted / then its summary is written, the files are not
        assertThat(agent.awaitSummary(chat)).startsWith("Earlier the user said"); // the model consolidated, no trim
        String memoryPath = WorkspacePaths.chatMemory("api", chat);
        assertThat(file(memoryPath)).isEmpty();
        assertThat(file("memory/history/" + memoryPath.substring("memory/".length()))).isEmpty();
    }
}
