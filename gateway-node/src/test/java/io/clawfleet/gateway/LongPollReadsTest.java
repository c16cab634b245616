package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.EchoWorker;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
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
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A long poll whose client already has the last reply this gateway heard a notice of waits for the next notice
 * without reading the outbox first (one statement less per message in a chat's usual rhythm: send, poll, answer).
 * Shown the one way it can be seen from outside: a reply committed with no notice at all reaches such a poll at its
 * deadline, not at once, while a poll for anything the gateway did not hear of reads at once. Here the gateway's own
 * member carries the worker role, so notices can arrive (with no worker member, polls read as before and the backstop
 * reads for them, GatewayApiTest).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class LongPollReadsTest {

    private static final String KEY = "long-poll-reads-key-0123456789";

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway,worker", Map.of("apiKey", KEY, "nodeId", "gw1")), db,
                List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
        // Answers on the node's own bus and publishes a notice per reply, as a worker does.
        new EchoWorker(node.vertx(), database.pool(), 16);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    @Test
    void aPollPastTheLastHeardReplyWaitsForTheNextNoticeAndAnyOtherPollReadsAtOnce() throws Exception {
        // given a chat whose first reply this gateway heard the notice of
        String chat = "c-" + UUID.randomUUID();
        assertThat(post(chat, "m1", "first").statusCode()).isEqualTo(202);
        JsonObject first = replies(chat, 0, 10).getJsonObject(0);
        assertThat(first.getLong("seq")).isEqualTo(1);
        // and a second reply committed with no notice (only a lost notice looks like this)
        result(database.pool().preparedQuery("""
                        INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text, status)
                        SELECT $1, o.tenant_id, o.chat_id, 2, o.in_reply_to, 'no notice', 'delivered'
                          FROM outbox o WHERE o.in_reply_to = $2""")
                .execute(Tuple.of("silent-" + chat, Long.parseLong(first.getString("inReplyTo")))));

        // when the client polls past the reply it has (the one heard last) / then the poll waits for a notice,
        // and reads at its deadline: the read before waiting was spared
        long started = System.nanoTime();
        JsonArray late = replies(chat, 1, 3);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThanOrEqualTo(Duration.ofMillis(2_900));
        assertThat(late).hasSize(1);
        assertThat(late.getJsonObject(0).getString("text")).isEqualTo("no notice");

        // when it polls from an earlier point, or past a reply the gateway did not hear of / then it reads at once
        started = System.nanoTime();
        assertThat(replies(chat, 0, 20)).hasSize(2);
        assertThat(replies(chat, 2, 1)).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofMillis(2_500));

    }

    @Test
    void aPollPastTheLastHeardReplyIsWokenByTheNextReplysNotice() throws Exception {
        // given a chat whose first reply this gateway heard the notice of
        String chat = "c-" + UUID.randomUUID();
        assertThat(post(chat, "m1", "first").statusCode()).isEqualTo(202);
        assertThat(replies(chat, 0, 10)).hasSize(1);
        for (int i = 2; i <= 5; i++) {
            // when the next message is sent and the client polls past the reply it has
            assertThat(post(chat, "m" + i, "message " + i).statusCode()).isEqualTo(202);
            long started = System.nanoTime();
            JsonArray woken = replies(chat, i - 1, 20);
            // then the reply's notice wakes the poll (whether the reply came before or after the poll parked)
            assertThat(woken).hasSize(1);
            assertThat(woken.getJsonObject(0).getString("text")).isEqualTo("re: message " + i);
            assertThat(woken.getJsonObject(0).getLong("seq")).isEqualTo(i);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
        }
    }

    private HttpResponse<String> post(String chat, String id, String text) throws Exception {
        JsonObject body = new JsonObject().put("chatId", chat).put("senderId", "alice").put("messageId", id).put("text", text);
        return http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/messages")).timeout(Duration.ofSeconds(30))
                .header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonArray replies(String chat, long after, int wait) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(
                        URI.create(base + "/api/v1/chats/" + chat + "/replies?after=" + after + "&wait=" + wait))
                .timeout(Duration.ofSeconds(40)).header("authorization", "Bearer " + KEY).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return new JsonObject(response.body()).getJsonArray("replies");
    }
}
