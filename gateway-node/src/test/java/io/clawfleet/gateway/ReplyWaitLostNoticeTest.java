package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * An OpenAI-API request waits for its new message's reply without reading the outbox first (the reply cannot be there
 * before its notice), so what stands between a lost notice and the caller is the wait's periodic read: the reply,
 * committed here with no notice at all, still comes back within a few seconds, with the tokens of its turn, and is
 * marked delivered. The gateway's member carries the worker role, so notices can arrive; no worker answers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ReplyWaitLostNoticeTest {

    private static final String KEY = "reply-wait-lost-notice-key-0123";

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway,worker", Map.of("apiKey", KEY, "nodeId", "gw1",
                "http.replyTimeoutMs", "30000")), db, List.of(GatewayRole::new));
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    @Test
    void aReplyWhoseNoticeIsLostReachesTheCallerByThePeriodicRead() throws Exception {
        // given a caller waiting for the reply to its message
        String user = "lost-" + UUID.randomUUID();
        JsonObject body = new JsonObject().put("model", "default").put("user", user)
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "anyone there?")));
        CompletableFuture<HttpResponse<String>> call = http.sendAsync(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(40)).header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
        Row[] found = new Row[1];
        Await.until("the message to be in the inbox", Duration.ofSeconds(10), () -> {
            var rows = result(database.pool().preparedQuery(
                    "SELECT i.id, i.tenant_id, i.chat_id FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = $1")
                    .execute(io.vertx.sqlclient.Tuple.of(user)));
            found[0] = rows.size() == 1 ? rows.iterator().next() : null;
            return found[0] != null;
        });
        Row message = found[0];

        // when its reply and the turn's usage are committed and no notice is sent (as when one is lost)
        long sent = System.nanoTime();
        result(database.pool().preparedQuery("""
                        WITH out AS (
                          INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text)
                          VALUES ($1, $2, $3, 1, $4, 'here, late') RETURNING 1)
                        INSERT INTO llm_usage (tenant_id, bot_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens)
                        VALUES ($2, 'main', $3, $4, 'mock', 'mock', 21, 5)""")
                .execute(io.vertx.sqlclient.Tuple.of("r-" + user, message.getString("tenant_id"), message.getLong("chat_id"),
                        message.getLong("id"))));

        // then the caller gets it, with the usage, within the periodic read's 2 s (and some), not at the timeout
        HttpResponse<String> response = call.get(30, TimeUnit.SECONDS);
        assertThat(Duration.ofNanos(System.nanoTime() - sent)).isLessThan(Duration.ofSeconds(6));
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonObject completion = new JsonObject(response.body());
        assertThat(completion.getJsonArray("choices").getJsonObject(0).getJsonObject("message").getString("content"))
                .isEqualTo("here, late");
        assertThat(completion.getJsonObject("usage").getLong("prompt_tokens")).isEqualTo(21);
        assertThat(completion.getJsonObject("usage").getLong("completion_tokens")).isEqualTo(5);
        // and the reply is marked delivered (through the grouped marks)
        Await.until("the reply to be marked delivered", Duration.ofSeconds(10), () -> "delivered".equals(result(database.pool()
                .preparedQuery("SELECT status FROM outbox WHERE id = $1").execute(io.vertx.sqlclient.Tuple.of("r-" + user)))
                .iterator().next().getString("status")));
    }
}
