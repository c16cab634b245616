package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TenantRows;
import io.clawfleet.shared.testing.TestDatabases;
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
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tenant deletion on two gateway JVMs (issue 13): the gateway deleting a tenant of 20,000 inbox rows is
 * killed with kill -9 midway; the other gateway takes the deletion over once its lease runs out and
 * finishes it, every row counted exactly once, another tenant untouched.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 4, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class TenantDeletionIT {

    private static final String OPERATOR = "it-operator-key-0123456789abcdef";
    private static final int INBOX_ROWS = 20_000;

    private Vertx vertx;
    private ClusterHarness cluster;
    private Database database;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        DbUrl db = TestDatabases.freshEmpty();
        // batches of 20 with a pause: 1,000 inbox batches take long enough to kill a gateway midway
        cluster = new ClusterHarness(db, "http://127.0.0.1:9/v1", TestJar.path(), TestJar.logs(), 2)
                .env("CLAWFLEET_OPERATOR_KEY", OPERATOR)
                .env("CLAWFLEET_TENANT_DELETION_BATCH_SIZE", "20")
                .env("CLAWFLEET_TENANT_DELETION_BATCH_PAUSE_MS", "5")
                .env("CLAWFLEET_TENANT_DELETION_LEASE_MS", "3000")
                .env("CLAWFLEET_TENANT_DELETION_SCAN_MS", "500");
        cluster.start("gw-1", "gateway");
        cluster.start("gw-2", "gateway");
        cluster.awaitReady(Duration.ofSeconds(120));
        database = Database.connect(vertx, db, 2, 5_000);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (database != null) {
            result(database.close());
        }
        result(vertx.close());
    }

    @Test
    void aGatewayKilledMidwayLeavesTheDeletionToAnotherWhichFinishesIt() throws Exception {
        // given a big tenant and a bystander, with rows in every table
        create("big");
        create("bystander");
        result(TenantRows.seed(database.pool(), "big", INBOX_ROWS, 500), Duration.ofSeconds(60));
        result(TenantRows.seed(database.pool(), "bystander", 50, 50));
        Map<String, Long> before = result(TenantRows.count(database.pool(), "big"));
        Map<String, Long> bystander = result(TenantRows.count(database.pool(), "bystander"));

        // when the operator deletes it, and the gateway working on it is killed midway
        HttpResponse<String> deleted = send("gw-1", "DELETE", "/admin/v1/tenants/big");
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(202);
        Await.until("a gateway deleting inbox rows", Duration.ofSeconds(30),
                () -> deletion("gw-1").getJsonObject("counts").getLong("inbox") >= 2_000);
        JsonObject midway = deletion("gw-1");
        String worker = midway.getString("node");
        String survivor = worker.equals("gw-1") ? "gw-2" : "gw-1";
        cluster.kill(worker);
        long deletedAtKill = deletion(survivor).getJsonObject("counts").getLong("inbox");
        assertThat(deletedAtKill).isLessThan(INBOX_ROWS);

        // then the other gateway takes it over and finishes it
        Await.until("the deletion finished by " + survivor, Duration.ofSeconds(90),
                () -> "done".equals(deletion(survivor).getString("state")));
        JsonObject done = deletion(survivor);
        assertThat(Files.readString(cluster.node(survivor).log())).contains("tenant deleted [tenant: big");
        // every row gone and counted exactly once, though a batch's transaction may have died with the node
        assertThat(result(TenantRows.count(database.pool(), "big")).values()).containsOnly(0L);
        assertThat(done.getJsonObject("counts").getLong("inbox")).isEqualTo((long) INBOX_ROWS);
        assertThat(done.getJsonObject("counts").getMap()).allSatisfy((table, n) ->
                assertThat(((Number) n).longValue()).as(table).isEqualTo(before.get(table)));
        // and the bystander keeps all of its rows
        assertThat(result(TenantRows.count(database.pool(), "bystander"))).isEqualTo(bystander);
    }

    private void create(String id) throws Exception {
        HttpResponse<String> created = http.send(HttpRequest.newBuilder(URI.create(cluster.node("gw-1").url() + "/admin/v1/tenants"))
                .header("authorization", "Bearer " + OPERATOR).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("id", id).put("name", id).encode())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    }

    private HttpResponse<String> send(String node, String method, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(cluster.node(node).url() + path)).timeout(Duration.ofSeconds(10))
                .header("authorization", "Bearer " + OPERATOR).method(method, HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonObject deletion(String node) {
        try {
            HttpResponse<String> response = send(node, "GET", "/admin/v1/tenants/big/deletion");
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            return new JsonObject(response.body()).getJsonObject("deletion");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
