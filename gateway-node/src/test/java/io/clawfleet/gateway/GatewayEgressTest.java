package io.clawfleet.gateway;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Attack 3 of issue 22: a tenant registers a bot whose Telegram API URL points into the operator's
 * network, and reads the gateway's answers to map it (which ports are open, closed, or speak HTTP; the
 * cloud metadata service). The gateway must not connect, and its answers must not tell the cases apart.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayEgressTest {

    private static final String KEY = "egress-key-0123456789";
    private static final String TOKEN = "123456:fake-token-ABCDEFGHIJ";

    private Vertx vertx;
    private NodeRuntime node;
    private HttpServer internal;
    private final AtomicInteger internalRequests = new AtomicInteger();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        // an internal service that answers anything, as an admin console or a database's HTTP port would
        internal = result(vertx.createHttpServer().requestHandler(request -> {
            internalRequests.incrementAndGet();
            request.response().putHeader("content-type", "application/json").end("{\"ok\":true,\"result\":{\"id\":1,\"username\":\"internal\"}}");
        }).listen(0, "127.0.0.1"));
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw-egress")), db,
                List.of(GatewayRole::new));
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(vertx.close());
    }

    private HttpResponse<String> register(String apiUrl) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/api/v1/channels/telegram"))
                .header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("token", TOKEN).put("apiUrl", apiUrl).encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aBotsApiUrlCannotReachTheOperatorsNetworkNorTellItsPortsApart() throws Exception {
        int closed = FreePorts.take();
        List<String> targets = List.of(
                "http://127.0.0.1:" + internal.actualPort(),           // open, speaks HTTP (and even answers like Telegram)
                "http://127.0.0.1:" + closed,                           // closed
                "http://127.0.0.1:" + node.httpPort(),                  // the gateway itself
                "http://localhost:" + internal.actualPort(),            // a name for loopback
                "http://2130706433:" + internal.actualPort(),           // loopback written as a number
                "http://[::ffff:127.0.0.1]:" + internal.actualPort(),   // loopback inside IPv6
                "http://169.254.169.254",                               // the cloud metadata service
                "http://10.0.0.1:5432");                                // a private network's database port
        for (String target : targets) {
            HttpResponse<String> answer = register(target);
            // then each is the same refusal, naming only the URL given and an error id for the operator
            assertThat(answer.statusCode()).as(target).isEqualTo(400);
            JsonObject error = new JsonObject(answer.body()).getJsonObject("error");
            assertThat(error.getString("code")).as(target).isEqualTo("token_check_failed");
            assertThat(error.getString("message").replace(target, "URL").replaceAll("error id [0-9a-f]{8}", "error id X"))
                    .as(target).isEqualTo("the bot token could not be checked with the Telegram API at URL (error id X); "
                            + "check the token and the URL, or ask the operator with the error id");
        }
        // and the gateway never connected to any of them
        assertThat(internalRequests).hasValue(0);
        assertThat(new JsonObject(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort()
                + "/api/v1/channels")).header("authorization", "Bearer " + KEY).build(), HttpResponse.BodyHandlers.ofString())
                .body()).getJsonArray("channels")).isEmpty();
    }
}
