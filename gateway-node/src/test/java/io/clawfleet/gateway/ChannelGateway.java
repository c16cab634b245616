package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.EchoWorker;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;

/**
 * What the tests of a webhook channel (Slack, WhatsApp) start from: a gateway on a fresh database with its public URL
 * set, loopback allowed as a platform's API address (the fakes listen there), delivery retried fast, and
 * {@link EchoWorker} answering ({@code re: <text>}). Closing it stops them all.
 */
final class ChannelGateway implements AutoCloseable {

    private static final String METRICS_KEY = "channel-metrics-key-0123456789";

    final Vertx vertx = Vertx.vertx();
    final NodeRuntime node;
    final Database database;
    final String base;
    final String publicUrl;
    private final String key;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    ChannelGateway(String nodeId, String key) throws Exception {
        this(nodeId, key, Map.of());
    }

    /** @param settings more of the gateway's settings */
    ChannelGateway(String nodeId, String key, Map<String, String> settings) throws Exception {
        this.key = key;
        DbUrl db = TestDatabases.freshEmpty();
        int port = FreePorts.take();
        Map<String, String> config = new HashMap<>(Map.of("nodeId", nodeId, "apiKey", key, "delivery.backoffMs", "50",
                "delivery.maxAttempts", "4", "egress.allowedHosts", "127.0.0.1", "http.port", Integer.toString(port)));
        publicUrl = "http://127.0.0.1:" + port;
        config.put("http.publicUrl", publicUrl + "/");
        config.put("metricsKey", METRICS_KEY);
        config.putAll(settings);
        node = TestNodes.start(TestNodes.config("gateway", config), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        database = Database.connect(vertx, db, 2, 5_000);
        new EchoWorker(node.vertx(), database.pool(), 16);
    }

    /** Calls the gateway's API with the tenant's key. */
    HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + key)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** What {@code /metrics} shows now. */
    String metrics() {
        return send(HttpRequest.newBuilder(URI.create(base + "/metrics")).header("authorization", "Bearer " + METRICS_KEY)).body();
    }

    /** Sends a request as a platform would: no API key. */
    HttpResponse<String> send(HttpRequest.Builder request) {
        try {
            return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Inbox rows of the chats of a channel whose key is like {@code chatKeyLike}. */
    long inboxRows(String channel, String chatKeyLike) {
        return result(database.pool().preparedQuery("SELECT count(*) FROM inbox i JOIN chats c ON c.id = i.chat_id"
                + " WHERE c.channel = $1 AND c.chat_key LIKE $2").execute(Tuple.of(channel, chatKeyLike))).iterator().next().getLong(0);
    }

    /** Time for what should not come (a second reply) to come, if it were going to. */
    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(vertx.close());
    }
}
