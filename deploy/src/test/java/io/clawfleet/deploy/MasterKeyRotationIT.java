package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
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
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Rotating the master key under load (issue 14), on separate JVMs, as docs/OPERATIONS.md tells an operator to: every
 * node restarted one at a time with the new key as current and the old one as previous, {@code secrets rotate-master},
 * then every node restarted without the old key. All the while chats talk to a bot whose model provider key is a
 * tenant secret that workers open: every message is answered by that provider, with that key, none lost, doubled or
 * reordered, and at the end every data key is wrapped by the new master key only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class MasterKeyRotationIT {

    private static final String PROVIDER_KEY = "sk-rotation-provider-key-5d2c9e";
    private static final List<String> NODES = List.of("worker-1", "worker-2", "gateway-1");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private Vertx vertx;
    private MockLlmServer model;
    private ClusterHarness cluster;
    private DbUrl db;
    private TestCluster fixture;

    @BeforeAll
    void start() throws Exception {
        // Slow enough that turns are in flight while nodes restart.
        fixture = new TestCluster(150, 3, harness -> harness.env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", "127.0.0.1"),
                "gateway-1:gateway", "worker-1:worker", "worker-2:worker");
        cluster = fixture.harness;
        vertx = fixture.vertx;
        model = fixture.model;
        db = fixture.db;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void theMasterKeyIsRotatedWhileTurnsUseATenantsProviderKey() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        // the default tenant's bot answers with its own provider (the same mock, reached with the tenant's key)
        HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/providers"))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(new JsonObject().put("providers", new JsonObject().put("own",
                        new JsonObject().put("type", "openai").put("baseUrl", "http://127.0.0.1:" + model.port() + "/v1")
                                .put("model", "mock").put("apiKey", PROVIDER_KEY))).encode()))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        String oldKey = gateway.env().get("CLAWFLEET_MASTER_KEY");
        String newKey = MasterKeys.generate();
        String newId = MasterKeys.decode(newKey, "test").id();

        ChatLoad load = new ChatLoad(gateway::url, ClusterHarness.API_KEY, "rotation");
        load.start(20, Integer.MAX_VALUE, 250);
        Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 100);

        // 1. every node, one at a time, gets the new key as current and keeps the old one as previous
        for (String node : NODES) {
            cluster.setEnv(node, "CLAWFLEET_MASTER_KEY", newKey);
            cluster.setEnv(node, "CLAWFLEET_MASTER_KEY_PREVIOUS", oldKey);
            restart(node);
        }
        // 2. the data keys are re-wrapped, while turns run
        int sentBefore = load.sent();
        MasterKeyRotation.Result rotated = new MasterKeyRotation(db, MasterKeys.configured(newKey, null, List.of(oldKey)),
                MasterKeys.decode(newKey, "test")).run();
        assertThat(rotated.rewrapped()).isPositive();
        // 3. the old key goes from every node
        for (String node : NODES) {
            cluster.setEnv(node, "CLAWFLEET_MASTER_KEY_PREVIOUS", null);
            restart(node);
        }
        Await.until("messages after the rotation", Duration.ofSeconds(60), () -> load.sent() >= sentBefore + 100);

        load.stopSending();
        load.awaitSent(Duration.ofMinutes(1));
        ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
        load.close();
        assertThat(verdict.messages()).isGreaterThan(200);
        assertThat(verdict.lost()).as("lost").isEmpty();
        assertThat(verdict.duplicated()).as("duplicated").isEmpty();
        assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
        assertThat(model.lastCredential()).isEqualTo("Bearer " + PROVIDER_KEY);

        Database database = Database.connect(vertx, db, 1, 5_000);
        try {
            // every turn was answered by the tenant's provider: no reply says the model could not be reached
            assertThat(result(database.pool().query("SELECT count(*) FROM outbox WHERE text LIKE 'Sorry, I could not%'")
                    .execute()).iterator().next().getLong(0)).as("failed turns").isZero();
            assertThat(result(database.pool().query("SELECT count(*) FROM llm_usage WHERE provider <> 'own'")
                    .execute()).iterator().next().getLong(0)).as("calls not made with the tenant's provider").isZero();
            List<String> masters = new java.util.ArrayList<>();
            result(database.pool().query("SELECT DISTINCT master_key_id FROM tenant_data_keys").execute())
                    .forEach(row -> masters.add(row.getString(0)));
            assertThat(masters).containsExactly(newId);
        } finally {
            result(database.close());
        }
    }

    private void restart(String node) throws Exception {
        cluster.stop(node);
        cluster.restart(node);
        cluster.awaitReady(Duration.ofSeconds(90));
    }
}
