package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.vertx.core.json.JsonArray;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A chat's reads of its messages stay within the chat whatever the table holds, on the generic plans every node
 * connection uses ({@link Database#GENERIC_PLANS}). The shape that broke them (issue 19): few chats with many messages,
 * then a chat that is new or has been quiet. A generic plan that reads the newest messages of "a chat" backwards
 * through the primary key walks the whole table for such a chat: 9.5 ms per new chat's load in the bench, 106 ms beside
 * one chat of 200,000 messages. The test counts the buffers each read touches ({@link PlanBuffers}), which does not
 * depend on the machine.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ChatReadPlanTest {

    private static final int MESSAGES_PER_BUSY_CHAT = 20_000;
    /** A read of one chat's newest 20 messages needs a few index and heap pages; the table has several hundred. */
    private static final int MOST_BUFFERS = 40;

    private Connection sql;
    private long newChat;
    private long quietChat;

    @BeforeAll
    void fill() throws Exception {
        sql = PlanBuffers.databaseWithTenants("acme");
        try (Statement statement = sql.createStatement()) {
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES "
                    + "('acme', 'api', 'quiet', 1), ('acme', 'api', 'busy-1', 2), ('acme', 'api', 'busy-2', 3)");
            // The quiet chat spoke first and then not again: its rows are the oldest of the table.
            statement.execute("INSERT INTO messages (tenant_id, chat_id, role, content) SELECT 'acme', c.id, "
                    + "CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, 'early ' || g "
                    + "FROM chats c, generate_series(1, 6) g WHERE c.chat_key = 'quiet'");
            statement.execute("INSERT INTO messages (tenant_id, chat_id, role, content) SELECT 'acme', c.id, "
                    + "CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, 'busy ' || g "
                    + "FROM generate_series(1, " + MESSAGES_PER_BUSY_CHAT + ") g, chats c WHERE c.chat_key LIKE 'busy-%'");
            statement.execute("INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ('acme', 'api', 'new', 4)");
            statement.execute("ANALYZE");
            statement.execute(Database.GENERIC_PLANS);
            newChat = chatId(statement, "new");
            quietChat = chatId(statement, "quiet");
            statement.execute("PREPARE chat_load(bigint, int) AS " + ConversationStore.LOAD);
            statement.execute("PREPARE chat_history(text, text, text, text, int) AS " + ChatStore.HISTORY);
        }
    }

    @AfterAll
    void close() throws Exception {
        sql.close();
    }

    @Test
    void aNewChatsLoadReadsOnlyTheChat() throws SQLException {
        readsOnlyTheChat("EXECUTE chat_load(" + newChat + ", 20)");
    }

    @Test
    void aQuietChatsLoadReadsOnlyTheChatAndFindsItsMessages() throws SQLException {
        readsOnlyTheChat("EXECUTE chat_load(" + quietChat + ", 20)");
        try (Statement statement = sql.createStatement();
             ResultSet row = statement.executeQuery("EXECUTE chat_load(" + quietChat + ", 20)")) {
            assertThat(row.next()).isTrue();
            assertThat(row.getLong("stored")).isEqualTo(6);
            assertThat(new JsonArray(row.getString("history")).size()).isEqualTo(6);
        }
    }

    @Test
    void aQuietChatsTranscriptReadsOnlyTheChat() throws SQLException {
        readsOnlyTheChat("EXECUTE chat_history('acme', 'main', 'api', 'quiet', 20)");
        readsOnlyTheChat("EXECUTE chat_history('acme', 'main', 'api', 'new', 20)");
    }

    @Test
    void aBusyChatsLoadIsStillAnswered() throws SQLException {
        try (Statement statement = sql.createStatement();
             ResultSet row = statement.executeQuery("EXECUTE chat_load(" + chatId(statement, "busy-1") + ", 20)")) {
            assertThat(row.next()).isTrue();
            assertThat(row.getLong("stored")).isEqualTo(MESSAGES_PER_BUSY_CHAT);
            JsonArray history = new JsonArray(row.getString("history"));
            assertThat(history.size()).isEqualTo(20);
            assertThat(history.getJsonObject(19).getString("content")).isEqualTo("busy " + MESSAGES_PER_BUSY_CHAT);
        }
    }

    /** The statement, run, touched at most {@link #MOST_BUFFERS} shared buffers. */
    private void readsOnlyTheChat(String execute) throws SQLException {
        PlanBuffers.atMost(sql, execute, MOST_BUFFERS);
    }

    private static long chatId(Statement statement, String key) throws SQLException {
        try (ResultSet row = statement.executeQuery("SELECT id FROM chats WHERE chat_key = '" + key + "'")) {
            assertThat(row.next()).isTrue();
            return row.getLong(1);
        }
    }
}
