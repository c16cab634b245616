package io.clawfleet.deploy;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.deploy.chaos.ClusterHarness;
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
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot over its send rate, with two gateways in separate JVMs delivering its replies (issue 15): 150 replies of a
 * Telegram bot to 50 chats, far past Telegram's 30 a second per bot, slow down to the bot's rate: at no time do the sends
 * pass its burst and rate, however the two gateways split them (each claims the replies it is told of first; the split
 * is printed), and every reply arrives once, in its chat's order. That two gateways share one budget is shown apart,
 * deterministically, by {@code SendPacingStoreTest} (two pools reserving at once).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class SendRateIT {

    private static final int CHATS = 50;
    private static final int PER_CHAT = 3;
    /** Telegram's rate per bot, as the gateways pace it ({@code SendPacer.Rates.TELEGRAM}). */
    private static final int BURST = 30;
    private static final double PER_SECOND = 30.0;
    /**
     * Sends the platform may see past the budget in a stretch: the pacer reserves each send's slot by the database's
     * clock, and any stall between the slot and the fake platform's stamp (a gateway starved of CPU, its HTTP pool, the
     * test JVM serving the fake) sends a late slot together with the next ones: the rate times the stall. Two gateways,
     * a worker, PostgreSQL and the test JVM share two cores here. Measured with two busy loops beside them: 2 to 13
     * over in five runs (3 without them), with reservations taking up to 1.4 s and sends 0.7 s in the burst; a CI run
     * once saw 16, one over the 15 allowed then. 20 is two thirds of a second at the rate. Paced by each gateway alone, the two would send
     * their bursts together, 30 over, and 150 replies in 2 s (the span is checked too).
     */
    private static final int JITTER = 20;

    private TestCluster fixture;
    private ClusterHarness cluster;
    private FakeTelegram telegram;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(20, 3, harness -> harness.env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", "127.0.0.1"),
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

    @Test
    void aBotOverItsSendRateSlowsDownAcrossGatewaysAndLosesNothing() throws Exception {
        HttpResponse<String> registered = http.send(HttpRequest.newBuilder(URI.create(cluster.node("gateway-1").url()
                        + "/api/v1/channels/telegram")).header("authorization", "Bearer " + ClusterHarness.API_KEY)
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(new JsonObject()
                        .put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()).encode())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        for (int round = 0; round < PER_CHAT; round++) {
            for (int chat = 0; chat < CHATS; chat++) {
                telegram.userSays(7000 + chat, "message " + round);
            }
        }
        Await.until("every reply", Duration.ofSeconds(120), () -> telegram.sendTimes().size() >= CHATS * PER_CHAT);
        Thread.sleep(1_000);
        for (int chat = 0; chat < CHATS; chat++) {
            assertThat(telegram.sentTo(7000 + chat)).as("chat " + (7000 + chat))
                    .containsExactly("echo: message 0", "echo: message 1", "echo: message 2");
        }
        List<Long> times = new ArrayList<>(telegram.sendTimes());
        times.sort(null);
        double spanSeconds = (times.getLast() - times.getFirst()) / 1e9;
        // in any stretch of time t, at most the burst and t at the rate, give or take the jitter between a slot's
        // reservation (by the database's clock) and the send reaching the platform: JITTER sends, two thirds of a second
        // at the rate. Paced by each gateway alone, the two would send their bursts together, 60 at once: 30 over.
        int worst = 0;
        int worstFrom = 0;
        int worstTo = 0;
        for (int i = 0; i < times.size(); i++) {
            for (int j = i; j < times.size(); j++) {
                double t = (times.get(j) - times.get(i)) / 1e9;
                int over = (j - i + 1) - (int) Math.floor(BURST + PER_SECOND * t);
                if (over > worst) {
                    worst = over;
                    worstFrom = i;
                    worstTo = j;
                }
            }
        }
        // sends per 100 ms from the first, to tell a late burst from a stall in the middle
        int[] per100ms = new int[(int) ((times.getLast() - times.getFirst()) / 100_000_000L) + 1];
        times.forEach(at -> per100ms[(int) ((at - times.getFirst()) / 100_000_000L)]++);
        System.out.printf("SendRateIT: sends per 100 ms %s; the worst stretch: sends %d to %d, %.0f to %.0f ms%n",
                java.util.Arrays.toString(per100ms), worstFrom, worstTo, (times.get(worstFrom) - times.getFirst()) / 1e6,
                (times.get(worstTo) - times.getFirst()) / 1e6);
        double first = metric("gateway-1");
        double second = metric("gateway-2");
        System.out.printf("SendRateIT: %d replies in %.2f s (%.1f/s), gateway-1 sent %.0f, gateway-2 %.0f; most over the "
                + "burst and rate in any stretch: %d%n", times.size(), spanSeconds, times.size() / spanSeconds, first, second, worst);
        assertThat(worst).as("sends past the bot's burst and rate in some stretch of time").isLessThanOrEqualTo(JITTER);
        assertThat(spanSeconds).as("150 replies at 30/s after a burst of 30 take 4 s").isGreaterThanOrEqualTo(3.5);
        assertThat(first + second).isEqualTo(CHATS * PER_CHAT);
    }

    private double metric(String node) {
        try {
            return Prometheus.sum(cluster.metrics(cluster.node(node)), "clawfleet_delivery_delivered_total", "telegram");
        } catch (Exception e) {
            return -1;
        }
    }
}
