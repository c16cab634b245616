package io.clawfleet.gateway.reply;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * When a wait serves the reply notice it was woken by (SECURITY.md rule 5): only an authentic notice, and only one that
 * answers the wait's own message of the wait's own tenant. The outbox here is a pool to a port nobody listens on, so
 * a wait that reads finds nothing: what completes a wait is the notice alone.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReplyWaitTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";

    private Vertx vertx;
    private Pool nowhere;
    private ReplyHub hub;
    private ReplyWait replies;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        nowhere = PgBuilder.pool().with(new PoolOptions().setMaxSize(1))
                .connectingTo(new PgConnectOptions().setHost("127.0.0.1").setPort(closedPort))
                .using(vertx).build();
        // a node that runs alone: its bus reaches no other process, so its notices are its own worker's
        hub = new ReplyHub(vertx, "gw1", 100, new BusSigner(SECRET, System::currentTimeMillis, 60_000),
                new MicrometerMetrics("gw1"));
        result(hub.start());
        replies = new ReplyWait(vertx, hub, new OutboxStore(nowhere), 20_000, () -> true);
    }

    @AfterEach
    void stop() {
        result(hub.stop());
        result(nowhere.close());
        result(vertx.close());
    }

    @Test
    void aNodeAloneServesItsWorkersNoticeAsTheReplyWithoutARead() {
        assertThat(hub.noticesAreAuthentic()).isTrue();
        // given a wait for the reply to message 42 of tenant t1
        Future<OutboundReply> waiting = replies.await("t1", 42, true, null, null);
        // when the notice of that reply arrives
        OutboundReply reply = notice("t1", 42, "the answer");
        hub.notify(reply);
        // then the wait serves it as it came
        assertThat(result(waiting, Duration.ofSeconds(10))).isEqualTo(reply);
    }

    @Test
    void aNoticeOfAnotherTenantOrMessageOnlyWakesTheWait() {
        // given a wait for the reply to message 42 of tenant t1, ended by the test
        Promise<Void> cancel = Promise.promise();
        Future<OutboundReply> waiting = replies.await("t1", 42, true, null, cancel.future());
        // when a notice naming message 42 of another tenant arrives (the waiter is found by message id alone)
        hub.notify(notice("t2", 42, "another tenant's answer"));
        // then the wait is not served it: it reads the outbox (which has nothing here) and goes on waiting
        vertx.setTimer(1_500, id -> cancel.tryComplete());
        Throwable ended = result(waiting.map(r -> (Throwable) null).otherwise(failure -> failure), Duration.ofSeconds(10));
        assertThat(ended).as("the wait was served the notice of another tenant").isNotNull()
                .hasMessageContaining("client went away");
    }

    @Test
    void aWaitForTheTokensTooIsServedTheNoticeThatCarriesThem() {
        // given a wait for the reply to message 42 of tenant t1 with the tokens its turn used (the OpenAI API)
        Future<Map.Entry<OutboundReply, UsageStore.TurnTokens>> waiting = replies.awaitWithTokens("t1", 42, true, null, null);
        // when the notice of that reply arrives with them
        UsageStore.TurnTokens tokens = new UsageStore.TurnTokens(120, 7);
        OutboundReply reply = new OutboundReply("r-t1-42", BotRef.main("t1"), "openai", "c1", 7, 1, 42, "the answer",
                Instant.now(), tokens);
        hub.notify(reply);
        // then the wait serves both as they came
        assertThat(result(waiting, Duration.ofSeconds(10))).isEqualTo(Map.entry(reply, tokens));
    }

    @Test
    void aNoticeWithoutTokensOnlyWakesAWaitForThem() {
        // given a wait for the reply to message 42 with its tokens, ended by the test
        Promise<Void> cancel = Promise.promise();
        Future<Map.Entry<OutboundReply, UsageStore.TurnTokens>> waiting = replies.awaitWithTokens("t1", 42, true, null,
                cancel.future());
        // when the notice of that reply arrives without them (a worker older than the field sent it)
        hub.notify(notice("t1", 42, "an older worker's answer"));
        // then the wait is not served it: it reads the outbox (which has nothing here) and goes on waiting
        vertx.setTimer(1_500, id -> cancel.tryComplete());
        Throwable ended = result(waiting.map(r -> (Throwable) null).otherwise(failure -> failure), Duration.ofSeconds(10));
        assertThat(ended).as("the wait was served a notice without the tokens").isNotNull()
                .hasMessageContaining("client went away");
    }

    @Test
    void onlyAnAuthenticNoticeOfTheWaitsOwnMessageAndTenantMayBeServed() {
        OutboundReply reply = notice("t1", 42, "x");
        assertThat(ReplyWait.servable(reply, true, "t1", 42)).isTrue();
        assertThat(ReplyWait.servable(reply, false, "t1", 42)).as("--insecure-cluster: anything can publish").isFalse();
        assertThat(ReplyWait.servable(reply, true, "t2", 42)).as("another tenant").isFalse();
        assertThat(ReplyWait.servable(reply, true, "t1", 43)).as("another message").isFalse();
    }

    private static OutboundReply notice(String tenant, long inReplyTo, String text) {
        return new OutboundReply("r-" + tenant + "-" + inReplyTo, BotRef.main(tenant), "api", "c1", 7, 1, inReplyTo, text,
                Instant.now());
    }
}
