package io.clawfleet.deploy;

import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet admin grant|revoke --chat CHANNEL:CHAT}: the operator's way to the first admin chat (issue 22). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminCommandTest {

    private static final String KEY = "cli-admin-key-0123456789abcdef";

    private NodeRuntime node;
    private Database database;
    private String url;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY)), db, List.of(GatewayRole::new));
        url = "http://127.0.0.1:" + node.httpPort();
        database = Database.connect(node.vertx(), db, 1, 5_000);
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(node.stop(), Duration.ofSeconds(60));
    }

    private int admin(String... args) {
        String[] full = Stream.concat(Arrays.stream(args), Stream.of("--url", url, "--api-key", KEY)).toArray(String[]::new);
        return Main.commandLine().execute(full);
    }

    private String roleOf(String chat) {
        return result(database.pool().preparedQuery("SELECT role FROM chats WHERE chat_key = $1").execute(Tuple.of(chat)))
                .iterator().next().getString(0);
    }

    @Test
    void grantAndRevokeChangeTheChatsRole() throws Exception {
        HttpResponse<String> sent = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "/api/v1/messages"))
                .header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("chatId", "op-chat").put("senderId", "op")
                        .put("messageId", "1").put("text", "hello").encode())).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(sent.statusCode()).isEqualTo(202);
        assertThat(admin("admin", "grant", "--chat", "api:op-chat")).isZero();
        assertThat(roleOf("op-chat")).isEqualTo("admin");
        assertThat(admin("admin", "revoke", "--chat", "api:op-chat")).isZero();
        assertThat(roleOf("op-chat")).isEqualTo("normal");
        // each is audited as a role change of the chat, naming the command that made it (issue 22)
        List<AuditStore.Event> changes = result(new AuditStore(database.pool()).list(GatewayRole.DEFAULT_TENANT, 0, 500,
                AuditStore.ROLE_CHANGE));
        assertThat(changes).extracting(e -> e.metadata().getString("client"))
                .containsExactly("clawfleet-cli admin grant", "clawfleet-cli admin revoke");
        assertThat(changes).extracting(e -> e.metadata().getString("role")).containsExactly("admin", "normal");
        assertThat(changes).allSatisfy(e -> assertThat(e.chatKey()).isEqualTo("op-chat"));
        // a chat that does not exist, or a chat written without its channel, is an error and changes nothing
        assertThat(admin("admin", "grant", "--chat", "api:nobody")).isEqualTo(1);
        assertThat(admin("admin", "grant", "--chat", "op-chat")).isEqualTo(2);
        assertThat(roleOf("op-chat")).isEqualTo("normal");
    }
}
