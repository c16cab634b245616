package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sandbox node distrusts the bus: a call runs only when a worker signed it for this node with the
 * cluster secret, lately, once; the result goes back signed and bound to the call. The calls here are
 * {@code web_fetch}es of a local page that counts its hits, so "not run" is seen from outside.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SandboxEndpointTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";
    private static final String NODE = "sb-1";
    private static final String ADDRESS = "test.sandbox.execute";

    @TempDir
    Path temp;
    private Vertx vertx;
    private HttpServer web;
    private HttpClient http;
    private final AtomicInteger hits = new AtomicInteger();
    private final BusSigner worker = new BusSigner(SECRET, System::currentTimeMillis, 60_000);
    private MicrometerMetrics metrics;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        web = result(vertx.createHttpServer().requestHandler(request -> {
            hits.incrementAndGet();
            request.response().putHeader("content-type", "text/plain").end("ran");
        }).listen(0, "127.0.0.1"));
        http = vertx.createHttpClient();
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), Map.of("sandbox.web.allowedPrivateRanges", "127.0.0.1/32",
                "sandbox.web.allowedPorts", ""));
        HostSupport none = new HostSupport(Isolation.NONE, "not needed here", null, null, null, null, null, false, false, false);
        metrics = new MicrometerMetrics("test");
        SandboxService service = new SandboxService(vertx, config, new ProcessSandbox(none, config.sandbox(), temp),
                new WebFetcher(vertx, http, config.sandbox().web(), name -> Future.succeededFuture(List.<InetAddress>of())),
                new BraveSearch(http, config.sandbox().web(), Map.of()), vertx.createSharedWorkerExecutor("test-sandbox", 2),
                Map.of(), metrics);
        SandboxEndpoint endpoint = new SandboxEndpoint(service, () -> true,
                new BusSigner(SECRET, System::currentTimeMillis, 60_000), NODE, metrics);
        result(vertx.eventBus().consumer(ADDRESS, endpoint).completion());
    }

    @AfterEach
    void stop() {
        result(vertx.close());
    }

    private ToolCall fetch() {
        return new ToolCall(UUID.randomUUID().toString(), "acme", 1, "web_fetch",
                new JsonObject().put("url", "http://127.0.0.1:" + web.actualPort() + "/x").encode(), Map.of(), Map.of(), 10_000);
    }

    private Future<Message<ToolResult>> send(ToolCall call, DeliveryOptions options) {
        return vertx.eventBus().request(ADDRESS, call, options);
    }

    private int refusal(ToolCall call, DeliveryOptions options) {
        Throwable failure = result(send(call, options).<Throwable>map(m -> null).otherwise(e -> e));
        assertThat(failure).isInstanceOf(ReplyException.class);
        return ((ReplyException) failure).failureCode();
    }

    @Test
    void aSignedCallRunsAndItsResultComesBackSignedForThatCall() {
        // given a call a worker signed for this node
        ToolCall call = fetch();
        DeliveryOptions options = worker.sign(new DeliveryOptions(), BusSigner.CALL, NODE, call, "");
        // when it is sent
        Message<ToolResult> reply = result(send(call, options));
        // then it ran, and the result is signed by this node, bound to that call
        assertThat(hits.get()).isEqualTo(1);
        assertThat(reply.body().status()).as(reply.body().output()).isEqualTo(ToolResult.OK);
        assertThat(worker.verify(reply.headers(), BusSigner.RESULT, NODE, reply.body(),
                options.getHeaders().get(BusSigner.SIGNATURE))).isEqualTo(BusSigner.Verdict.VALID);
    }

    @Test
    void anUnsignedCallIsRefusedAndNotRun() {
        assertThat(refusal(fetch(), new DeliveryOptions())).isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(hits.get()).isZero();
        assertThat(metrics.scrape()).contains("clawfleet_bus_rejected_total{message=\"tool-call\",node=\"test\",reason=\"missing\"");
    }

    @Test
    void aTamperedCallIsRefusedAndNotRun() {
        // given a signed call whose arguments a stranger on the bus swapped
        ToolCall call = fetch();
        DeliveryOptions options = worker.sign(new DeliveryOptions(), BusSigner.CALL, NODE, call, "");
        ToolCall tampered = new ToolCall(call.callId(), call.tenantId(), call.chatId(), call.tool(),
                new JsonObject().put("url", "http://127.0.0.1:" + web.actualPort() + "/other").encode(), Map.of(), Map.of(), 10_000);
        // when it is sent / then it is refused unstarted
        assertThat(refusal(tampered, options)).isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(hits.get()).isZero();
    }

    @Test
    void aCallSignedWithAnotherSecretOrForAnotherNodeIsRefused() {
        ToolCall call = fetch();
        BusSigner stranger = new BusSigner("another-secret-of-at-least-32-chars!!", System::currentTimeMillis, 60_000);
        assertThat(refusal(call, stranger.sign(new DeliveryOptions(), BusSigner.CALL, NODE, call, "")))
                .isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(refusal(call, worker.sign(new DeliveryOptions(), BusSigner.CALL, "sb-2", call, "")))
                .isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(hits.get()).isZero();
    }

    @Test
    void anExpiredCallIsRefused() {
        ToolCall call = fetch();
        BusSigner lateClock = new BusSigner(SECRET, () -> System.currentTimeMillis() - 61_000, 60_000);
        assertThat(refusal(call, lateClock.sign(new DeliveryOptions(), BusSigner.CALL, NODE, call, "")))
                .isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(hits.get()).isZero();
    }

    @Test
    void aReplayedCallIsRefusedAndNotRunAgain() {
        // given a signed call that ran
        ToolCall call = fetch();
        DeliveryOptions options = worker.sign(new DeliveryOptions(), BusSigner.CALL, NODE, call, "");
        result(send(call, options));
        // when a stranger who saw it sends it again, signature and all
        int code = refusal(call, new DeliveryOptions().setHeaders(options.getHeaders()));
        // then it is refused and ran once only
        assertThat(code).isEqualTo(SandboxFailures.UNTRUSTED);
        assertThat(hits.get()).isEqualTo(1);
        assertThat(metrics.scrape()).contains("reason=\"replay\"");
    }
}
