package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeTelegram;
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
 * Telegram webhooks across gateways in separate JVMs (issue 15): the test plays Telegram and its load balancer. It
 * posts a bot's updates one at a time to gateway 1, kills gateway 1 (kill -9) while a post is in flight, and posts
 * every update again to gateway 2, as Telegram does with an update it got no 2xx for, and as it may do with one whose
 * answer was lost. Every update is answered exactly once, in its chat's order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class TelegramWebhookFailoverIT {

    private static final int CHATS = 4;
    private static final int UPDATES = 40;
    private static final int KILL_AT = 17;

    private TestCluster fixture;
    private ClusterHarness cluster;
    private FakeTelegram telegram;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(20, 3, harness -> harness
                        // the fake Bot API listens on loopback, which a tenant's apiUrl may reach only when allowed
                        .env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", "127.0.0.1")
                        .env("CLAWFLEET_HTTP_PUBLIC_URL", "https://bots.example.test")
                        // replies a dead gateway had claimed are taken over after this
                        .env("CLAWFLEET_DELIVERY_CLAIM_MS", "2000")
                        .env("CLAWFLEET_DELIVERY_BACKOFF_MS", "100"),
                "gateway-1:gateway", "gateway-2:gateway", "worker-1:worker");
        cluster = fixture.harness;
        telegram = new FakeTelegram(fixture.vertx);
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> api(ClusterHarness.Node gateway, String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(gateway.url() + path))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30)).method(method, HttpRequest.BodyPublishers.ofString(body.encode())).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<Integer> post(ClusterHarness.Node gateway, long channel, String secret, JsonObject update) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(gateway.url() + "/hooks/telegram/" + channel))
                        .header("content-type", "application/json").header("X-Telegram-Bot-Api-Secret-Token", secret)
                        .timeout(Duration.ofSeconds(20)).POST(HttpRequest.BodyPublishers.ofString(update.encode())).build(),
                HttpResponse.BodyHandlers.discarding()).thenApply(HttpResponse::statusCode).exceptionally(failure -> -1);
    }

    private static JsonObject update(int i) {
        long chat = 5000 + i % CHATS;
        return new JsonObject().put("update_id", 700_000 + i).put("message", new JsonObject().put("message_id", i + 1)
                .put("date", 0).put("chat", new JsonObject().put("id", chat).put("type", "private"))
                .put("from", new JsonObject().put("id", chat).put("is_bot", false).put("first_name", "U"))
                .put("text", "update " + i));
    }

    @Test
    void aWebhookPostRetriedToASecondGatewayAfterTheFirstDiesIsAnsweredOnce() throws Exception {
        ClusterHarness.Node first = cluster.node("gateway-1");
        ClusterHarness.Node second = cluster.node("gateway-2");
        HttpResponse<String> registered = api(first, "POST", "/api/v1/channels/telegram",
                new JsonObject().put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        long channel = new JsonObject(registered.body()).getLong("id");
        HttpResponse<String> hooked = api(first, "PATCH", "/api/v1/channels/" + channel, new JsonObject().put("mode", "webhook"));
        assertThat(hooked.statusCode()).as(hooked.body()).isEqualTo(200);
        String secret = telegram.webhookSecret();

        // Telegram posts the updates one at a time (max_connections 1) to gateway 1, which dies under one of them
        List<Integer> firstAnswers = new ArrayList<>();
        for (int i = 0; i < UPDATES; i++) {
            CompletableFuture<Integer> answer = post(first, channel, secret, update(i));
            if (i == KILL_AT) {
                cluster.kill("gateway-1");
            }
            int status = answer.get(30, TimeUnit.SECONDS);
            firstAnswers.add(status);
            if (status != 200) {
                // no 2xx: Telegram posts it again, and the load balancer sends it to the gateway still up
                int again = post(second, channel, secret, update(i)).get(30, TimeUnit.SECONDS);
                assertThat(again).as("update " + i + " posted again to gateway 2").isEqualTo(200);
            }
        }
        assertThat(firstAnswers.subList(0, KILL_AT)).as("answers of gateway 1 before the kill").containsOnly(200);
        assertThat(firstAnswers.subList(KILL_AT + 1, UPDATES)).as("answers of gateway 1 after the kill").containsOnly(-1);
        // answers lost on the way back: Telegram may post an update it had a 2xx for again, to any gateway
        for (int i = 0; i < UPDATES; i++) {
            assertThat(post(second, channel, secret, update(i)).get(30, TimeUnit.SECONDS)).isEqualTo(200);
        }

        // every update answered once, in its chat's order (gateway 2 delivers what gateway 1 had claimed, after its claim)
        for (int c = 0; c < CHATS; c++) {
            long chat = 5000 + c;
            List<String> expected = new ArrayList<>();
            for (int i = c; i < UPDATES; i += CHATS) {
                expected.add("echo: update " + i);
            }
            Await.until(expected.size() + " replies in chat " + chat, Duration.ofSeconds(90),
                    () -> telegram.sentTo(chat).size() >= expected.size());
            assertThat(telegram.sentTo(chat)).as("chat " + chat).containsExactlyElementsOf(expected);
        }
        Database database = Database.connect(fixture.vertx, fixture.db, 1, 5_000);
        try {
            long rows = result(database.pool().query("SELECT count(*) FROM inbox WHERE idempotency_key LIKE 'u7%'").execute())
                    .iterator().next().getLong(0);
            assertThat(rows).as("inbox rows of the updates").isEqualTo(UPDATES);
        } finally {
            result(database.close());
        }
        // nothing more turns up later
        Thread.sleep(1_000);
        for (int c = 0; c < CHATS; c++) {
            assertThat(telegram.sentTo(5000 + c)).hasSize(UPDATES / CHATS);
        }
    }
}
