package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import java.util.concurrent.atomic.AtomicInteger;
import io.vertx.core.Promise;
import io.vertx.core.Future;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Vertx;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real cluster of separate JVMs on loopback: 1 gateway, 2 workers, 1 sandbox, 1 scheduler, on
 * embedded PostgreSQL, with the mock model. 50 chats send 20 messages each without waiting for
 * replies; every chat must get every reply exactly once, in order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class ClusterIT {

    private static final int CHATS = 50;
    private static final int MESSAGES = 20;

    private Vertx vertx;
    private MockLlmServer model;
    private ClusterHarness cluster;
    private Database database;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        model = new MockLlmServer(vertx, 5);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 5);
        cluster.start("gateway-1", "gateway");
        cluster.start("worker-1", "worker");
        cluster.start("worker-2", "worker");
        cluster.start("sandbox-1", "sandbox");
        cluster.start("scheduler-1", "scheduler");
        cluster.awaitReady(Duration.ofSeconds(90));
        database = Database.connect(vertx, db, 2, 5_000);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (database != null) {
            result(database.close());
        }
        result(vertx.close());
    }

    @Test
    void everyChatGetsEveryReplyExactlyOnceInOrderWithPartitionsSplitBetweenWorkers() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        // given both workers own a share of the partitions
        awaitSplit(gateway);
        JsonObject view = cluster.cluster(gateway);
        assertThat(view.getJsonArray("members")).hasSize(5);

        // when 50 chats each send 20 messages, one after another, without waiting for replies
        List<CompletableFuture<List<String>>> senders = new ArrayList<>();
        for (int c = 0; c < CHATS; c++) {
            int chat = c;
            senders.add(CompletableFuture.supplyAsync(() -> sendAll(gateway, chat)));
        }
        List<List<String>> ids = new ArrayList<>();
        for (CompletableFuture<List<String>> sender : senders) {
            ids.add(sender.get(120, TimeUnit.SECONDS));
        }

        // then every chat gets 20 replies, numbered 1..20, each answering its message in order
        for (int c = 0; c < CHATS; c++) {
            JsonArray replies = awaitReplies(gateway, "chat-" + c, MESSAGES);
            assertThat(replies).hasSize(MESSAGES);
            for (int m = 0; m < MESSAGES; m++) {
                JsonObject reply = replies.getJsonObject(m);
                assertThat(reply.getLong("seq")).isEqualTo(m + 1);
                assertThat(reply.getString("inReplyTo")).isEqualTo(ids.get(c).get(m));
                assertThat(reply.getString("text")).isEqualTo("echo: chat-" + c + " message " + m);
            }
        }
        long duplicates = result(database.pool().query(
                "SELECT count(*) FROM (SELECT in_reply_to FROM outbox GROUP BY in_reply_to HAVING count(*) > 1) d")
                .execute()).iterator().next().getLong(0);
        assertThat(duplicates).isZero();
        long answeredBy = result(database.pool().query("SELECT count(DISTINCT owner_node) FROM partition_leases").execute())
                .iterator().next().getLong(0);
        assertThat(answeredBy).isEqualTo(2);
    }

    @Test
    void aTenantsConcurrentTurnLimitHoldsAcrossBothWorkers() throws Exception {
        // given a tenant limited to 3 concurrent turns, whose model calls take 400 ms
        String tenant = "capped";
        String key = "capped-key-0123456789abcdef";
        result(new TenantStore(database.pool()).ensure(tenant, "Capped", key));
        result(database.pool().query("UPDATE tenants SET limits = '{\"concurrentTurns\": 3}' WHERE id = 'capped'").execute());
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        AtomicInteger answered = new AtomicInteger();
        model.beforeAnswer(body -> {
            JsonArray messages = body.getJsonArray("messages");
            if (!messages.getJsonObject(messages.size() - 1).getString("content", "").startsWith("capped ")) {
                return Future.succeededFuture();
            }
            peak.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            Promise<Void> done = Promise.promise();
            vertx.setTimer(400, id -> {
                inFlight.decrementAndGet();
                answered.incrementAndGet();
                done.complete();
            });
            return done.future();
        });
        try {
            // when 24 of its chats, on partitions of both workers, send a message each at once
            ClusterHarness.Node gateway = cluster.node("gateway-1");
            awaitSplit(gateway);
            for (int c = 0; c < 24; c++) {
                JsonObject body = new JsonObject().put("chatId", "capped-" + c).put("senderId", "u").put("messageId", "m")
                        .put("text", "capped " + c);
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/messages"))
                        .header("authorization", "Bearer " + key).header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            }
            long owners = result(database.pool().query("""
                    SELECT count(DISTINCT l.owner_node) FROM inbox i JOIN partition_leases l ON l.partition = i.partition
                     WHERE i.tenant_id = 'capped'""").execute()).iterator().next().getLong(0);
            assertThat(owners).as("workers owning the tenant's chats").isEqualTo(2);
            // then all are answered, never more than 3 at once over both workers, and 3 at once at times
            Await.until("the capped tenant's 24 calls answered", Duration.ofSeconds(120), () -> answered.get() == 24);
            assertThat(peak.get()).isEqualTo(3);
        } finally {
            model.beforeAnswer(body -> Future.succeededFuture());
        }
    }

    /** Until both workers own a share of the 64 partitions and every partition has an owner. */
    private void awaitSplit(ClusterHarness.Node gateway) {
        Await.until("partitions split between both workers", Duration.ofSeconds(60), () -> {
            try {
                JsonObject owners = cluster.cluster(gateway).getJsonObject("partitionsByOwner");
                return owners.getInteger("worker-1", 0) > 10 && owners.getInteger("worker-2", 0) > 10
                        && owners.getInteger("worker-1", 0) + owners.getInteger("worker-2", 0) == 64;
            } catch (Exception e) {
                return false;
            }
        });
    }

    private List<String> sendAll(ClusterHarness.Node gateway, int chat) {
        List<String> ids = new ArrayList<>();
        for (int m = 0; m < MESSAGES; m++) {
            JsonObject body = new JsonObject().put("chatId", "chat-" + chat).put("senderId", "user-" + chat)
                    .put("messageId", "m-" + m).put("text", "chat-" + chat + " message " + m);
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/messages"))
                        .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() != 202) {
                    throw new IllegalStateException("message refused: " + response.statusCode() + " " + response.body());
                }
                ids.add(new JsonObject(response.body()).getString("id"));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        return ids;
    }

    private JsonArray awaitReplies(ClusterHarness.Node gateway, String chat, int count) throws Exception {
        JsonArray all = new JsonArray();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (all.size() < count && System.nanoTime() < deadline) {
            long after = all.isEmpty() ? 0 : all.getJsonObject(all.size() - 1).getLong("seq");
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateway.url()
                            + "/api/v1/chats/" + chat + "/replies?after=" + after + "&wait=10"))
                    .header("authorization", "Bearer " + ClusterHarness.API_KEY).timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString());
            new JsonObject(response.body()).getJsonArray("replies").forEach(all::add);
        }
        return all;
    }
}
