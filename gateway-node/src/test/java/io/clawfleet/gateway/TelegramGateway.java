package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.EchoWorker;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the Telegram tests start from: a gateway on a fresh database, with its public URL set, a {@link FakeTelegram}
 * it may reach on loopback, {@link EchoWorker} answering ({@code re: <text>}), and one bot registered for the default
 * tenant. Closing it stops them all.
 */
final class TelegramGateway implements AutoCloseable {

    final Vertx vertx = Vertx.vertx();
    final FakeTelegram telegram = new FakeTelegram(vertx);
    final NodeRuntime node;
    final Database database;
    final String base;
    final long channelId;
    private final String key;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** @param settings the gateway's settings beyond the API key, the egress exception and the public URL */
    TelegramGateway(String key, Map<String, String> settings) throws Exception {
        this.key = key;
        DbUrl db = TestDatabases.freshEmpty();
        int port = FreePorts.take();
        Map<String, String> config = new HashMap<>(settings);
        config.put("apiKey", key);
        // The fake Bot API listens on loopback, which a tenant's URL may reach only when the operator allows it.
        config.put("egress.allowedHosts", "127.0.0.1");
        config.put("http.port", Integer.toString(port));
        config.put("http.publicUrl", "http://127.0.0.1:" + port + "/");
        node = TestNodes.start(TestNodes.config("gateway", config), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        database = Database.connect(vertx, db, 2, 5_000);
        new EchoWorker(node.vertx(), database.pool(), 16);
        HttpResponse<String> registered = call("POST", "/api/v1/channels/telegram",
                new JsonObject().put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        channelId = new JsonObject(registered.body()).getLong("id");
    }

    /** Calls the gateway's API with the tenant's key. */
    HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + key)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    @Override
    public void close() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(vertx.close());
    }
}
