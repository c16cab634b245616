package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.cluster.ClusterBootstrap;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.nio.file.Files;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Attack 5 of issue 22, on a real cluster of separate JVMs: a process that knows the cluster's name and
 * members joins it (a clustered Vert.x of its own, without the cluster secret), sends a tool call
 * straight to the sandbox node and publishes a made-up stream chunk to the gateway streaming a reply.
 * The sandbox node refuses the call unstarted; the client never sees the chunk. The cluster runs without TLS here
 * ({@code --insecure-cluster}), so this shows what the signatures stop on their own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class BusTrustIT {

    private Vertx vertx;
    private MockLlmServer model;
    private HttpServer target;
    private final AtomicInteger targetHits = new AtomicInteger();
    private ClusterHarness cluster;
    private Database database;
    private Vertx intruder;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        // Slow answers: the stream stays open long enough for the intruder to speak into it.
        model = new MockLlmServer(vertx, 3_000);
        result(model.start("127.0.0.1", 0));
        // What the intruder's call would fetch, if it ran: every hit is counted.
        target = result(vertx.createHttpServer().requestHandler(request -> {
            targetHits.incrementAndGet();
            request.response().end("fetched");
        }).listen(0, "127.0.0.1"));
        DbUrl db = TestDatabases.freshEmpty();
        // The layer under test is the signatures, as on a cluster whose bus runs without TLS (--insecure-cluster):
        // with mutual TLS the intruder would not even connect (ClusterTlsIT).
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 3)
                .env("CLAWFLEET_CLUSTER_INSECURE", "true")
                .env("CLAWFLEET_SANDBOX_WEB_ALLOWED_PRIVATE_RANGES", "127.0.0.1/32")
                .env("CLAWFLEET_SANDBOX_WEB_ALLOWED_PORTS", Integer.toString(target.actualPort()));
        cluster.start("gateway-1", "gateway");
        cluster.start("worker-1", "worker");
        cluster.start("sandbox-1", "sandbox");
        cluster.awaitReady(Duration.ofSeconds(90));
        database = Database.connect(vertx, db, 2, 5_000);
        // The intruder: the cluster's name and members, no secret.
        var config = ConfigLoader.load(null, Map.of(), Map.of("roles", "scheduler", "cluster.name", cluster.clusterName(),
                "cluster.members", String.join(",", cluster.clusterMembers()), "cluster.host", "127.0.0.1",
                "cluster.port", Integer.toString(FreePorts.take())));
        intruder = result(ClusterBootstrap.start(config, new Member("intruder", Set.of(), null), true, null, null),
                Duration.ofSeconds(90)).vertx();
        Codecs.registerAll(intruder.eventBus());
    }

    @AfterAll
    void stop() throws Exception {
        if (intruder != null) {
            result(intruder.close(), Duration.ofSeconds(30));
        }
        if (cluster != null) {
            cluster.close();
        }
        if (database != null) {
            result(database.close());
        }
        result(vertx.close());
    }

    @Test
    void aCallFromAProcessWithoutTheSecretIsRefusedAndNotRun() throws Exception {
        // given the intruder has joined: the sandbox node's address is reachable from it
        ToolCall call = new ToolCall(UUID.randomUUID().toString(), "default", 1, "web_fetch",
                new JsonObject().put("url", "http://127.0.0.1:" + target.actualPort() + "/steal").encode(), Map.of(), Map.of(), 10_000);
        // when it sends an unsigned call straight to the node
        Throwable failure = result(intruder.eventBus().request(Addresses.sandboxExecute("sandbox-1"), call,
                new DeliveryOptions().setSendTimeout(30_000)).<Throwable>map(m -> null).otherwise(e -> e), Duration.ofSeconds(40));
        // then the node refuses it unstarted, says so in its metrics, and nothing was fetched
        assertThat(failure).isInstanceOf(ReplyException.class);
        assertThat(((ReplyException) failure).failureCode()).as(failure.getMessage()).isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(targetHits.get()).isZero();
        assertThat(metrics(cluster.node("sandbox-1"))).contains("clawfleet_bus_rejected_total{message=\"tool-call\"")
                .doesNotContain("clawfleet_sandbox_runs_total{");
    }

    @Test
    void aClusterStartedWithInsecureClusterSaysSoInItsClusterView() throws Exception {
        // given nodes started with --insecure-cluster (CLAWFLEET_CLUSTER_INSECURE=true)
        JsonObject view = cluster.cluster(cluster.node("gateway-1"));
        // then the cluster view says the bus is insecure, names those members, and each says how it talks
        assertThat(view.getBoolean("insecureCluster")).isTrue();
        assertThat(view.getJsonArray("insecureMembers").getList()).contains("gateway-1", "worker-1", "sandbox-1");
        for (Object member : view.getJsonArray("members")) {
            JsonObject m = (JsonObject) member;
            if (!"intruder".equals(m.getString("nodeId"))) {
                assertThat(m.getJsonObject("attributes").getString("busTransport")).as(m.encode()).isEqualTo("insecure");
            }
        }
        assertThat(Files.readString(cluster.node("worker-1").log())).contains("INSECURE CLUSTER");
    }

    @Test
    void aChunkPublishedByAProcessWithoutTheSecretNeverReachesTheClient() throws Exception {
        // given a client streaming the answer to a message
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        String question = "stream me " + UUID.randomUUID();
        JsonObject body = new JsonObject().put("model", "default").put("stream", true).put("user", "bus-trust")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", question)));
        CompletableFuture<HttpResponse<String>> streaming = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(gateway.url() + "/v1/chat/completions")).timeout(Duration.ofSeconds(60))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
        long[] inboxId = new long[1];
        Await.until("the message to be in the inbox", Duration.ofSeconds(20), () -> {
            var rows = result(database.pool().preparedQuery("SELECT id FROM inbox WHERE text = $1").execute(Tuple.of(question)));
            for (Row row : rows) {
                inboxId[0] = row.getLong(0);
                return true;
            }
            return false;
        });
        // when the intruder publishes a chunk of "the bot's answer" to the gateway holding the connection
        intruder.eventBus().publish(Addresses.stream("gateway-1"),
                new StreamChunk(inboxId[0], 0, "I am the bot: send your password to evil.example"));
        Await.until("the gateway to drop the chunk", Duration.ofSeconds(20),
                () -> metrics(gateway).contains("clawfleet_bus_rejected_total{message=\"stream-chunk\""));
        // then the client gets the bot's real answer and never the intruder's words
        HttpResponse<String> response = streaming.get(60, TimeUnit.SECONDS);
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).contains(question.substring("stream me ".length())).doesNotContain("evil.example");
        // and the worker's own chunks, signed in another JVM, passed: the only chunks dropped were unsigned
        assertThat(metrics(gateway).lines().filter(line -> line.startsWith("clawfleet_bus_rejected_total{message=\"stream-chunk\"")))
                .isNotEmpty().allMatch(line -> line.contains("reason=\"missing\""));
    }

    /**
     * SECURITY.md rule 5: with --insecure-cluster anything on the cluster network can publish a reply notice, so a notice
     * only wakes a long poll, which reads the outbox. (On a node alone, or on a bus with certificates where every notice
     * a waiter sees carries a worker's tag, the notice of a chat's next reply is served as it came.)
     */
    @Test
    void aReplyNoticePublishedByAProcessWithoutTheSecretIsNeverServed() throws Exception {
        // given a long poll waiting for the first reply of a chat
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        String chat = "forged-" + UUID.randomUUID();
        CompletableFuture<HttpResponse<String>> poll = http.sendAsync(HttpRequest.newBuilder(
                        URI.create(gateway.url() + "/api/v1/chats/" + chat + "/replies?after=0&wait=30"))
                .timeout(Duration.ofSeconds(60)).header("authorization", "Bearer " + ClusterHarness.API_KEY).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        Await.until("the long poll to be waiting", Duration.ofSeconds(20), () -> metrics(gateway).lines()
                .anyMatch(line -> line.startsWith("clawfleet_gateway_waiting{") && !line.endsWith(" 0.0")));
        // when the intruder publishes exactly the reply the poll waits for: the chat's next one
        intruder.eventBus().publish(Addresses.REPLY_READY, new OutboundReply("forged-1", BotRef.main("default"), "api", chat,
                1, 1, 1, "I am the bot: send your password to evil.example", Instant.now()));
        // then the poll wakes, reads the outbox, and finds nothing to serve
        HttpResponse<String> response = poll.get(25, TimeUnit.SECONDS);
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).doesNotContain("evil.example");
        assertThat(new JsonObject(response.body()).getJsonArray("replies")).isEmpty();
        // when the worker answers a real message of that chat
        HttpResponse<String> sent = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/messages"))
                .timeout(Duration.ofSeconds(30)).header("authorization", "Bearer " + ClusterHarness.API_KEY)
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(new JsonObject()
                        .put("chatId", chat).put("senderId", "u1").put("messageId", "m1").put("text", "real question").encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(sent.statusCode()).isEqualTo(202);
        JsonArray replies = new JsonObject(http.send(HttpRequest.newBuilder(
                        URI.create(gateway.url() + "/api/v1/chats/" + chat + "/replies?after=0&wait=30"))
                .timeout(Duration.ofSeconds(60)).header("authorization", "Bearer " + ClusterHarness.API_KEY).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body()).getJsonArray("replies");
        // then the client gets it, and no reply was served from its notice, the worker's included: on an insecure bus
        // every one is read from the outbox
        assertThat(replies).hasSize(1);
        assertThat(replies.getJsonObject(0).getString("text")).doesNotContain("evil.example");
        assertThat(metrics(gateway)).doesNotContain("clawfleet_gateway_replies_pushed_total");
    }

    private String metrics(ClusterHarness.Node node) {
        try {
            return cluster.metrics(node);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
