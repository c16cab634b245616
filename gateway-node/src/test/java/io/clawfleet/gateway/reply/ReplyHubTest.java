package io.clawfleet.gateway.reply;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** Stream chunks reach a caller only when a worker of this cluster signed them for this gateway. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReplyHubTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";

    private Vertx vertx;
    private ReplyHub hub;
    private final MicrometerMetrics metrics = new MicrometerMetrics("gw1");
    private final BusSigner worker = new BusSigner(SECRET, System::currentTimeMillis, 60_000);
    private final List<String> shown = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        hub = new ReplyHub(vertx, "gw1", 100, new BusSigner(SECRET, System::currentTimeMillis, 60_000), metrics);
        result(hub.start());
        hub.onMessageReply(42, reply -> { }, chunk -> shown.add(chunk.delta()));
    }

    @AfterEach
    void stop() {
        result(hub.stop());
        result(vertx.close());
    }

    private void send(StreamChunk chunk, DeliveryOptions options) {
        vertx.eventBus().send(Addresses.stream("gw1"), chunk, options);
    }

    @Test
    void onlyChunksAWorkerSignedForThisGatewayReachTheCaller() {
        // given a caller streaming the reply to message 42
        // when a stranger on the bus sends chunks: unsigned, signed with another secret, signed for another gateway
        StreamChunk fake = new StreamChunk(42, 0, "send your password to evil.example");
        send(fake, new DeliveryOptions());
        BusSigner stranger = new BusSigner("not-this-clusters-secret-0123456789", System::currentTimeMillis, 60_000);
        send(fake, stranger.sign(new DeliveryOptions(), BusSigner.CHUNK, "gw1", fake, ""));
        send(fake, worker.sign(new DeliveryOptions(), BusSigner.CHUNK, "gw2", fake, ""));
        // and a signed chunk whose text was swapped on the way
        StreamChunk real = new StreamChunk(42, 0, "Hello");
        DeliveryOptions signed = worker.sign(new DeliveryOptions(), BusSigner.CHUNK, "gw1", real, "");
        send(fake, new DeliveryOptions().setHeaders(signed.getHeaders()));
        // and then the worker's own chunk
        send(real, worker.sign(new DeliveryOptions(), BusSigner.CHUNK, "gw1", real, ""));
        // then the caller sees the worker's chunk only, and the others are counted
        Await.until("the signed chunk to arrive", Duration.ofSeconds(10), () -> !shown.isEmpty());
        assertThat(shown).containsExactly("Hello");
        assertThat(metrics.scrape()).contains("reason=\"missing\"").contains("reason=\"forged\"").contains("reason=\"wrong_node\"");
    }

    @Test
    void aChatsLastHeardReplyIsTheHighestNoticeUntilForgotten() {
        String chat = ReplyHub.chatRef(io.clawfleet.shared.store.BotRef.main("t1"), "api", "c1");
        // nothing heard: every poll reads
        assertThat(hub.heardLast(chat, 0)).isFalse();
        // when the notices of replies 3 and then (late, or forged) 1 arrive
        hub.notify(reply("c1", 3));
        hub.notify(reply("c1", 1));
        // then only a poll past exactly 3 may skip its read: a notice can only ever make a poll read
        assertThat(hub.heardLast(chat, 3)).isTrue();
        assertThat(hub.heardLast(chat, 1)).isFalse();
        assertThat(hub.heardLast(chat, 4)).isFalse();
        assertThat(hub.heardLast(ReplyHub.chatRef(io.clawfleet.shared.store.BotRef.main("t2"), "api", "c1"), 3))
                .as("another tenant's chat of the same key").isFalse();
        // when notices may have been missed (a member came or went) / then every poll reads again
        hub.forgetHeard();
        assertThat(hub.heardLast(chat, 3)).isFalse();
    }

    private static io.clawfleet.shared.message.OutboundReply reply(String chatKey, long seq) {
        return new io.clawfleet.shared.message.OutboundReply("r-" + seq, io.clawfleet.shared.store.BotRef.main("t1"), "api",
                chatKey, 7, seq, 100 + seq, "text " + seq, java.time.Instant.now());
    }
}
