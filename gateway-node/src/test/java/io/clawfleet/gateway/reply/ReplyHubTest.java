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
}
