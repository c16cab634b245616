package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeDiscord;
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

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Discord bot's Gateway session across gateways in separate JVMs (issue 15): the gateway holding the bot's connection
 * is killed (kill -9) while messages keep coming; the other gateway takes the lease over when it runs out, resumes the
 * same session from the last event taken (no new identify), and every message is answered exactly once, in order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class DiscordFailoverIT {

    private static final String CHANNEL = "2200000000000000001";
    private static final String USER = "4400000000000000001";

    private TestCluster fixture;
    private ClusterHarness cluster;
    private FakeDiscord discord;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(20, 3, harness -> harness.env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", "127.0.0.1"),
                "gateway-1:gateway", "gateway-2:gateway", "worker-1:worker");
        cluster = fixture.harness;
        discord = new FakeDiscord(fixture.vertx);
    }

    @AfterAll
    void stop() throws Exception {
        if (discord != null) {
            discord.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void theSessionMovesToTheOtherGatewayAndResumesLosingAndDoublingNothing() throws Exception {
        ClusterHarness.Node first = cluster.node("gateway-1");
        HttpResponse<String> registered = http.send(HttpRequest.newBuilder(URI.create(first.url() + "/api/v1/channels/discord"))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("token", FakeDiscord.TOKEN)
                        .put("apiUrl", discord.url()).encode())).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        long account = new JsonObject(registered.body()).getLong("id");
        Await.until("the bot's gateway connection", Duration.ofSeconds(30), () -> discord.connected());
        String holder = holder(account);
        String other = holder.equals("gateway-1") ? "gateway-2" : "gateway-1";

        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            discord.message(CHANNEL, null, USER, "before " + i, false);
            expected.add("echo: before " + i);
        }
        Await.until("the first replies", Duration.ofSeconds(30), () -> discord.sentTo(CHANNEL).size() == 5);
        // Killed once those are recorded as delivered: a gateway killed between a send and its record sends that reply
        // again (replies are delivered at least once, ChannelSender), which is not what this test is about.
        Await.until("the first replies recorded as delivered", Duration.ofSeconds(30), () -> delivered() == 5);
        long killed = System.nanoTime();
        cluster.kill(holder);
        // messages while no gateway holds the bot: Discord keeps them for the session's resume
        for (int i = 0; i < 5; i++) {
            discord.message(CHANNEL, null, USER, "meanwhile " + i, false);
            expected.add("echo: meanwhile " + i);
        }
        Await.until("the session resumed by " + other, Duration.ofSeconds(60), () -> discord.connected() && discord.opens().size() == 2);
        System.out.printf("DiscordFailoverIT: the session resumed on %s %d ms after %s was killed%n", other,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed), holder);
        assertThat(discord.opens().get(0)).isEqualTo("identify");
        assertThat(discord.opens().get(1)).as("a resume of the same session, not a new identify").startsWith("resume:");
        assertThat(holder(account)).isEqualTo(other);
        for (int i = 0; i < 3; i++) {
            discord.message(CHANNEL, null, USER, "after " + i, false);
            expected.add("echo: after " + i);
        }
        Await.until("every reply", Duration.ofSeconds(60), () -> discord.sentTo(CHANNEL).size() >= expected.size());
        Thread.sleep(1_000);
        assertThat(discord.sentTo(CHANNEL)).containsExactlyElementsOf(expected);
    }

    /** Discord replies recorded as delivered. */
    private long delivered() {
        Database database = Database.connect(fixture.vertx, fixture.db, 1, 5_000);
        try {
            return result(database.pool().query("SELECT count(*) FROM outbox o JOIN chats c ON c.id = o.chat_id"
                    + " WHERE c.channel = 'discord' AND o.status = 'delivered'").execute()).iterator().next().getLong(0);
        } finally {
            result(database.close());
        }
    }

    /** The node holding the bot's Gateway lease now. */
    private String holder(long account) {
        Database database = Database.connect(fixture.vertx, fixture.db, 1, 5_000);
        try {
            return result(database.pool().preparedQuery("SELECT poller_node FROM channel_bots WHERE id = $1 AND poller_until > now()")
                    .execute(io.vertx.sqlclient.Tuple.of(account))).iterator().next().getString(0);
        } finally {
            result(database.close());
        }
    }
}
