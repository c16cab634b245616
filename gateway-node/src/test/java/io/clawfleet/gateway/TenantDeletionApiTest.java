package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TenantRows;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
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

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** DELETE /admin/v1/tenants/{id} over real HTTP (issue 13): all of the tenant goes, nothing of another, keys stop at once. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantDeletionApiTest {

    private static final String OPERATOR = "operator-key-0123456789abcdefghij";

    private NodeRuntime node;
    private Vertx vertx;
    private Database database;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        // small, paced batches: the deletion takes long enough to be seen under way
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-deleter", "operatorKey", OPERATOR,
                "tenantDeletion.batchSize", "10", "tenantDeletion.batchPauseMs", "20")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        vertx = Vertx.vertx();
        database = Database.connect(vertx, db, 2, 5_000);
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
        result(node.stop(), Duration.ofSeconds(60));
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()));
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        if (body != null) {
            request.header("content-type", "application/json");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private String create(String id) throws Exception {
        HttpResponse<String> created = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", id));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body()).getJsonObject("apiKey").getString("key");
    }

    @Test
    void aDeletedTenantLosesEveryRowItsKeysAtOnceAndAnotherTenantNothing() throws Exception {
        // given two tenants with rows in every table, and the first one's key in use
        String doomedKey = create("doomed");
        String keptKey = create("kept");
        result(TenantRows.seed(database.pool(), "doomed", 120, 150));
        result(TenantRows.seed(database.pool(), "kept", 40, 40));
        Map<String, Long> before = result(TenantRows.count(database.pool(), "doomed"));
        Map<String, Long> kept = result(TenantRows.count(database.pool(), "kept"));
        assertThat(before.values()).allMatch(n -> n > 0);
        assertThat(call("GET", "/api/v1/settings", doomedKey, null).statusCode()).isEqualTo(200);

        // when the operator deletes it
        HttpResponse<String> deleted = call("DELETE", "/admin/v1/tenants/doomed", OPERATOR, null);

        // then it is accepted, its key is refused on the next request, and the deletion is under way
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(202);
        JsonObject deletion = new JsonObject(deleted.body()).getJsonObject("deletion");
        assertThat(deletion.getString("tenantId")).isEqualTo("doomed");
        assertThat(deletion.getString("requestedBy")).isEqualTo("operator");
        assertThat(call("GET", "/api/v1/settings", doomedKey, null).statusCode()).isIn(401, 403);
        HttpResponse<String> during = call("GET", "/admin/v1/tenants/doomed", OPERATOR, null);
        assertThat(during.statusCode()).as(during.body()).isEqualTo(200);
        assertThat(new JsonObject(during.body()).getJsonObject("tenant").getString("status")).isEqualTo("deleting");
        assertThat(new JsonObject(during.body()).getJsonObject("deletion").getLong("id")).isEqualTo(deletion.getLong("id"));
        // a second DELETE is the same deletion; a change is refused
        HttpResponse<String> again = call("DELETE", "/admin/v1/tenants/doomed", OPERATOR, null);
        assertThat(new JsonObject(again.body()).getJsonObject("deletion").getLong("id")).isEqualTo(deletion.getLong("id"));
        HttpResponse<String> resume = call("PATCH", "/admin/v1/tenants/doomed", OPERATOR, new JsonObject().put("status", "active"));
        assertThat(resume.statusCode()).isIn(404, 409);

        // and once done, nothing of the tenant is left, the other tenant has all its rows, the counts are exact
        Await.until("deletion done", Duration.ofSeconds(30), () -> "done".equals(deletion("doomed").getString("state")));
        JsonObject done = deletion("doomed");
        assertThat(result(TenantRows.count(database.pool(), "doomed")).values()).containsOnly(0L);
        assertThat(result(TenantRows.count(database.pool(), "kept"))).isEqualTo(kept);
        assertThat(call("GET", "/api/v1/settings", keptKey, null).statusCode()).isEqualTo(200);
        assertThat(done.getJsonObject("counts").getMap()).allSatisfy((table, n) ->
                assertThat(((Number) n).longValue()).as(table).isEqualTo(before.get(table)));
        assertThat(done.getLong("rowsDeleted")).isEqualTo(before.values().stream().mapToLong(Long::longValue).sum());
        assertThat(done.getString("startedAt")).isNotNull();
        assertThat(done.getString("finishedAt")).isNotNull();
        assertThat(done.getLong("batches")).isGreaterThan(before.get("messages") / 10);
        assertThat(call("GET", "/admin/v1/tenants/doomed", OPERATOR, null).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/api/v1/settings", doomedKey, null).statusCode()).isEqualTo(401);
        HttpResponse<String> afterwards = call("DELETE", "/admin/v1/tenants/doomed", OPERATOR, null);
        assertThat(afterwards.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(afterwards.body()).getJsonObject("deletion").getLong("id")).isEqualTo(deletion.getLong("id"));
    }

    @Test
    void unknownTenantsAreNotFound() throws Exception {
        assertThat(call("DELETE", "/admin/v1/tenants/nobody", OPERATOR, null).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/admin/v1/tenants/nobody/deletion", OPERATOR, null).statusCode()).isEqualTo(404);
    }

    @Test
    void onlyTheOperatorDeletesATenant() throws Exception {
        String key = create("self-deleter");
        assertThat(call("DELETE", "/admin/v1/tenants/self-deleter", key, null).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/api/v1/settings", key, null).statusCode()).isEqualTo(200);
    }

    private JsonObject deletion(String tenantId) {
        HttpResponse<String> response;
        try {
            response = call("GET", "/admin/v1/tenants/" + tenantId + "/deletion", OPERATOR, null);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return new JsonObject(response.body()).getJsonObject("deletion");
    }
}
