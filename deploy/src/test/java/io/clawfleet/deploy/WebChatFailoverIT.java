package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.gateway.webchat.EndUserTokens;
import io.clawfleet.shared.db.Database;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The web chat across gateways in separate JVMs (issue 15): a user's connection is on gateway 1 when it dies (kill -9)
 * with the user's message taken and its turn in flight. The client reconnects to gateway 2 with the cursors of what it
 * has seen, as the widget does, sends the message again (its ack might have been lost), and gets the reply exactly
 * once; the next message on gateway 2 is streamed and answered as usual.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class WebChatFailoverIT {

    private static final String ORIGIN = "https://shop.example";

    private TestCluster fixture;
    private ClusterHarness cluster;
    private WebSocketClient client;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() throws Exception {
        // A slow model: the turn is in flight when the gateway dies.
        fixture = new TestCluster(1_500, 3, harness -> { }, "gateway-1:gateway", "gateway-2:gateway", "worker-1:worker");
        cluster = fixture.harness;
        client = fixture.vertx.createWebSocketClient();
    }

    @AfterAll
    void stop() throws Exception {
        if (client != null) {
            result(client.close());
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    /** A connection's frames as they come. */
    private final class Socket {
        final WebSocket ws;
        final BlockingQueue<JsonObject> frames = new LinkedBlockingQueue<>();
        final List<JsonObject> all = new ArrayList<>();

        Socket(ClusterHarness.Node gateway, String key) {
            URI url = URI.create(gateway.url());
            ws = result(client.connect(new WebSocketConnectOptions().setHost(url.getHost()).setPort(url.getPort())
                    .setURI("/webchat/v1/ws?key=" + key).addHeader("origin", ORIGIN)));
            ws.textMessageHandler(text -> {
                JsonObject frame = new JsonObject(text);
                frames.add(frame);
                synchronized (all) {
                    all.add(frame);
                }
            });
        }

        void send(JsonObject frame) {
            result(ws.writeTextMessage(frame.encode()));
        }

        JsonObject next(String type) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < end) {
                JsonObject frame = frames.poll(200, TimeUnit.MILLISECONDS);
                if (frame != null && type.equals(frame.getString("type"))) {
                    return frame;
                }
            }
            throw new AssertionError("no " + type + " frame within 60 s");
        }

        /** The bot's replies seen so far, as history entries or live. */
        List<String> replies() {
            List<String> replies = new ArrayList<>();
            synchronized (all) {
                for (JsonObject frame : all) {
                    if ("history".equals(frame.getString("type"))) {
                        frame.getJsonArray("messages").stream().map(JsonObject.class::cast)
                                .filter(m -> "assistant".equals(m.getString("role"))).forEach(m -> replies.add(m.getString("text")));
                    } else if ("message".equals(frame.getString("type"))) {
                        replies.add(frame.getString("text"));
                    }
                }
            }
            return replies;
        }

        long deltas() {
            synchronized (all) {
                return all.stream().filter(f -> "delta".equals(f.getString("type"))).count();
            }
        }
    }

    @Test
    void aUserWhoseGatewayDiesMidTurnReconnectsElsewhereAndGetsTheReplyOnce() throws Exception {
        ClusterHarness.Node first = cluster.node("gateway-1");
        ClusterHarness.Node second = cluster.node("gateway-2");
        HttpResponse<String> created = http.send(HttpRequest.newBuilder(URI.create(first.url() + "/api/v1/channels/webchat"))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("allowedOrigins", new JsonArray().add(ORIGIN)).encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        JsonObject account = new JsonObject(created.body());
        String key = account.getString("publishableKey");
        String token = EndUserTokens.mint(account.getString("secret"), "shopper-1", "Sam", Instant.now().getEpochSecond() + 3600);

        Socket before = new Socket(first, key);
        before.send(new JsonObject().put("type", "hello").put("token", token));
        before.next("ready");
        before.next("history");
        before.send(new JsonObject().put("type", "message").put("id", "order-1").put("text", "where is order 1?"));
        long userSeq = before.next("ack").getLong("seq");
        cluster.kill("gateway-1");

        // The widget's reconnect: to a gateway still up, with its cursors, and what it sent again.
        Socket after = new Socket(second, key);
        after.send(new JsonObject().put("type", "hello").put("token", token).put("after", 0).put("afterUser", userSeq));
        after.next("ready");
        after.next("history");
        after.send(new JsonObject().put("type", "message").put("id", "order-1").put("text", "where is order 1?"));
        assertThat(after.next("ack").getBoolean("duplicate")).isTrue();
        io.clawfleet.shared.testing.Await.until("the reply on gateway 2", Duration.ofSeconds(60), () -> !after.replies().isEmpty());
        Thread.sleep(2_000);
        assertThat(after.replies()).as("the reply, once").containsExactly("echo: where is order 1?");

        // Life goes on on gateway 2: the next reply streamed in and committed.
        after.send(new JsonObject().put("type", "message").put("id", "order-2").put("text", "and order 2?"));
        after.next("ack");
        io.clawfleet.shared.testing.Await.until("the second reply", Duration.ofSeconds(60), () -> after.replies().size() == 2);
        assertThat(after.replies()).containsExactly("echo: where is order 1?", "echo: and order 2?");
        assertThat(after.deltas()).as("pieces of the second reply streamed in").isPositive();

        Database database = Database.connect(fixture.vertx, fixture.db, 1, 5_000);
        try {
            var rows = result(database.pool().preparedQuery("""
                    SELECT (SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.channel = 'webchat') AS messages,
                           (SELECT count(*) FROM outbox o JOIN chats c ON c.id = o.chat_id WHERE c.channel = 'webchat') AS replies""")
                    .execute(io.vertx.sqlclient.Tuple.tuple())).iterator().next();
            assertThat(rows.getLong("messages")).isEqualTo(2);
            assertThat(rows.getLong("replies")).isEqualTo(2);
        } finally {
            result(database.close());
        }
    }
}
