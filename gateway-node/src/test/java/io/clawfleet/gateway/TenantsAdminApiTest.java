package io.clawfleet.gateway;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The operator plane over real HTTP (issue 13): tenants created, listed, read and changed with the operator key. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantsAdminApiTest {

    private static final String OPERATOR = "operator-key-0123456789abcdefghij";
    private static final AtomicInteger IDS = new AtomicInteger();

    private NodeRuntime node;
    private String base;
    private GatewayClient client;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-operator", "operatorKey", OPERATOR)), db,
                List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = new GatewayClient(base);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return client.call(method, path, key, body);
    }

    private JsonObject create(String id, String name) throws Exception {
        HttpResponse<String> created = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", name));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body());
    }

    @Test
    void theOperatorCreatesATenantWhoseFirstKeyIsShownOnceAndWorks() throws Exception {
        String id = "acme-" + IDS.incrementAndGet();
        JsonObject created = create(id, "Acme Ltd");
        assertThat(created.getJsonObject("tenant").getString("id")).isEqualTo(id);
        assertThat(created.getJsonObject("tenant").getString("status")).isEqualTo("active");
        JsonObject key = created.getJsonObject("apiKey");
        assertThat(key.getString("key")).startsWith(key.getString("prefix") + "_").startsWith("cf_");
        assertThat(key.getJsonArray("scopes")).containsExactly("admin");
        // the key opens the tenant's own API, and the tenant starts with the default workspace
        HttpResponse<String> settings = call("GET", "/api/v1/settings", key.getString("key"), null);
        assertThat(settings.statusCode()).as(settings.body()).isEqualTo(200);
        HttpResponse<String> files = call("GET", "/api/v1/workspace", key.getString("key"), null);
        assertThat(files.body()).contains("IDENTITY.md");
        // reading the tenant never shows a secret again
        HttpResponse<String> read = call("GET", "/admin/v1/tenants/" + id, OPERATOR, null);
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).doesNotContain(key.getString("key")).contains("\"keys\":1");
        // the same id again is a conflict, and the first tenant is untouched
        HttpResponse<String> again = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", "Other"));
        assertThat(again.statusCode()).isEqualTo(409);
        assertThat(new JsonObject(call("GET", "/admin/v1/tenants/" + id, OPERATOR, null).body()).getJsonObject("tenant")
                .getString("name")).isEqualTo("Acme Ltd");
    }

    @Test
    void withoutAnIdTheTenantGetsOne() throws Exception {
        HttpResponse<String> created = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("name", "No id"));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(new JsonObject(created.body()).getJsonObject("tenant").getString("id")).matches("t-[a-z0-9]+");
    }

    @Test
    void onlyTheOperatorKeyOpensTheOperatorApi() throws Exception {
        String id = "keyed-" + IDS.incrementAndGet();
        String tenantKey = create(id, "Keyed").getJsonObject("apiKey").getString("key");
        assertThat(call("GET", "/admin/v1/tenants", null, null).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/admin/v1/tenants", "wrong-operator-key-0123456789", null).statusCode()).isEqualTo(401);
        // a tenant's own admin key is not the operator's
        assertThat(call("GET", "/admin/v1/tenants", tenantKey, null).statusCode()).isEqualTo(401);
        assertThat(call("PATCH", "/admin/v1/tenants/" + id, tenantKey, new JsonObject().put("status", "suspended")).statusCode())
                .isEqualTo(401);
    }

    @Test
    void tenantsAreListedPageByPageWithACursor() throws Exception {
        String prefix = "page" + IDS.incrementAndGet() + "-";
        for (int i = 0; i < 5; i++) {
            create(prefix + i, "Page tenant " + i);
        }
        List<String> seen = new ArrayList<>();
        String cursor = prefix.substring(0, prefix.length() - 1);
        do {
            HttpResponse<String> page = call("GET", "/admin/v1/tenants?limit=2&cursor=" + cursor, OPERATOR, null);
            assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
            JsonObject body = new JsonObject(page.body());
            JsonArray tenants = body.getJsonArray("tenants");
            assertThat(tenants.size()).isLessThanOrEqualTo(2);
            tenants.stream().map(JsonObject.class::cast).map(t -> t.getString("id")).filter(t -> t.startsWith(prefix)).forEach(seen::add);
            cursor = body.getString("nextCursor");
        } while (cursor != null && cursor.startsWith(prefix));
        assertThat(seen).containsExactly(prefix + 0, prefix + 1, prefix + 2, prefix + 3, prefix + 4);
        assertThat(call("GET", "/admin/v1/tenants?limit=0", OPERATOR, null).statusCode()).isEqualTo(400);
        assertThat(call("GET", "/admin/v1/tenants?limit=x", OPERATOR, null).statusCode()).isEqualTo(400);
        assertThat(call("GET", "/admin/v1/tenants?cursor=Not%20An%20Id", OPERATOR, null).statusCode()).isEqualTo(400);
    }

    @Test
    void badInputIsRefusedByNameAndChangesNothing() throws Exception {
        assertThat(call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", "Bad Id").put("name", "x")).body())
                .contains("'id'");
        assertThat(call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", "nameless")).statusCode()).isEqualTo(400);
        assertThat(call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("name", "x").put("limits", new JsonObject()))
                .body()).contains("limits");
        String id = "patch-" + IDS.incrementAndGet();
        create(id, "Patched");
        assertThat(call("PATCH", "/admin/v1/tenants/" + id, OPERATOR, new JsonObject().put("status", "gone")).statusCode())
                .isEqualTo(400);
        assertThat(call("PATCH", "/admin/v1/tenants/" + id, OPERATOR, new JsonObject()).statusCode()).isEqualTo(400);
        assertThat(call("PATCH", "/admin/v1/tenants/nobody-here", OPERATOR, new JsonObject().put("name", "x")).statusCode())
                .isEqualTo(404);
        HttpResponse<String> renamed = call("PATCH", "/admin/v1/tenants/" + id, OPERATOR, new JsonObject().put("name", "Renamed"));
        assertThat(new JsonObject(renamed.body()).getJsonObject("tenant").getString("name")).isEqualTo("Renamed");
        assertThat(new JsonObject(renamed.body()).getJsonObject("tenant").getString("status")).isEqualTo("active");
    }
}
