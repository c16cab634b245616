package io.clawfleet.gateway;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
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
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tenant keys over real HTTP (issue 13): scopes decide what a key may do, revocation and suspension
 * hold on the next request, rotation has a grace period, a tenant keeps one admin key, and one
 * tenant's key ids mean nothing to another.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KeysApiTest {

    private static final String OPERATOR = "operator-key-for-keys-0123456789";
    private static final AtomicInteger IDS = new AtomicInteger();

    private NodeRuntime node;
    private String base;
    private GatewayClient client;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-keys", "operatorKey", OPERATOR)), db,
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

    private record Tenant(String id, String adminKey, String adminKeyId) {
    }

    private Tenant newTenant() throws Exception {
        String id = "keys-" + IDS.incrementAndGet();
        HttpResponse<String> created = call("POST", "/admin/v1/tenants", OPERATOR, new JsonObject().put("id", id).put("name", id));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        JsonObject key = new JsonObject(created.body()).getJsonObject("apiKey");
        return new Tenant(id, key.getString("key"), key.getString("id"));
    }

    private JsonObject makeKey(Tenant tenant, String name, String... scopes) throws Exception {
        HttpResponse<String> made = call("POST", "/api/v1/keys", tenant.adminKey(),
                new JsonObject().put("name", name).put("scopes", new JsonArray(List.of((Object[]) scopes))));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        return new JsonObject(made.body()).getJsonObject("key");
    }

    private static JsonObject message(String id) {
        return new JsonObject().put("chatId", "c1").put("senderId", "u").put("messageId", id).put("text", "hi");
    }

    @Test
    void scopesDecideWhatAKeyMayDo() throws Exception {
        Tenant tenant = newTenant();
        String chat = makeKey(tenant, "widget", "chat").getString("key");
        String read = makeKey(tenant, "dashboard", "read").getString("key");
        // a chat key talks, and reads replies, but reads nothing else and changes nothing
        assertThat(call("POST", "/api/v1/messages", chat, message("m1")).statusCode()).isEqualTo(202);
        assertThat(call("GET", "/api/v1/chats/c1/replies", chat, null).statusCode()).isEqualTo(200);
        HttpResponse<String> refused = call("GET", "/api/v1/settings", chat, null);
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).contains("[chat]").contains("GET /api/v1/settings").contains("read");
        assertThat(call("PUT", "/api/v1/settings", chat, new JsonObject().put("autonomy", "full")).statusCode()).isEqualTo(403);
        // a read key reads, but not what only the admin sees, and changes nothing
        assertThat(call("GET", "/api/v1/settings", read, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/tasks", read, null).statusCode()).isEqualTo(200);
        assertThat(call("PUT", "/api/v1/settings", read, new JsonObject().put("autonomy", "full")).statusCode()).isEqualTo(403);
        assertThat(call("POST", "/api/v1/messages", read, message("m2")).statusCode()).isEqualTo(403);
        for (String adminRead : List.of("/api/v1/keys", "/api/v1/audit", "/api/v1/approvals", "/api/v1/pairings")) {
            assertThat(call("GET", adminRead, read, null).statusCode()).as(adminRead).isEqualTo(403);
            assertThat(call("GET", adminRead, tenant.adminKey(), null).statusCode()).as(adminRead).isEqualTo(200);
        }
        // and neither makes keys
        assertThat(call("POST", "/api/v1/keys", read, new JsonObject().put("name", "x").put("scopes", new JsonArray().add("admin")))
                .statusCode()).isEqualTo(403);
    }

    @Test
    void aKeyIsListedWithoutItsSecretAndRevokedOnTheNextRequest() throws Exception {
        Tenant tenant = newTenant();
        JsonObject made = makeKey(tenant, "ci", "read");
        String secret = made.getString("key");
        assertThat(call("GET", "/api/v1/settings", secret, null).statusCode()).isEqualTo(200);
        HttpResponse<String> listed = call("GET", "/api/v1/keys", tenant.adminKey(), null);
        assertThat(listed.body()).contains(made.getString("id")).contains(made.getString("prefix")).doesNotContain(secret)
                .doesNotContain(tenant.adminKey());
        JsonObject ci = new JsonObject(listed.body()).getJsonArray("keys").stream().map(JsonObject.class::cast)
                .filter(k -> k.getString("id").equals(made.getString("id"))).findFirst().orElseThrow();
        assertThat(ci.getString("lastUsedAt")).isNotNull();
        // revoked: refused at once although this gateway had it cached
        HttpResponse<String> revoked = call("DELETE", "/api/v1/keys/" + made.getString("id"), tenant.adminKey(), null);
        assertThat(revoked.statusCode()).as(revoked.body()).isEqualTo(200);
        assertThat(new JsonObject(revoked.body()).getJsonObject("key").getString("revokedAt")).isNotNull();
        assertThat(call("GET", "/api/v1/settings", secret, null).statusCode()).isEqualTo(401);
        assertThat(call("DELETE", "/api/v1/keys/" + made.getString("id"), tenant.adminKey(), null).statusCode()).isEqualTo(404);
    }

    @Test
    void anotherTenantsKeyIdsMeanNothing() throws Exception {
        Tenant mine = newTenant();
        Tenant other = newTenant();
        JsonObject made = makeKey(mine, "mine", "read");
        assertThat(call("GET", "/api/v1/keys", other.adminKey(), null).body()).doesNotContain(made.getString("id"));
        assertThat(call("DELETE", "/api/v1/keys/" + made.getString("id"), other.adminKey(), null).statusCode()).isEqualTo(404);
        assertThat(call("POST", "/api/v1/keys/" + made.getString("id") + "/rotate", other.adminKey(), new JsonObject())
                .statusCode()).isEqualTo(404);
        assertThat(call("GET", "/api/v1/settings", made.getString("key"), null).statusCode()).isEqualTo(200);
    }

    @Test
    void theLastAdminKeyCannotBeRevokedButCanBeRotated() throws Exception {
        Tenant tenant = newTenant();
        HttpResponse<String> last = call("DELETE", "/api/v1/keys/" + tenant.adminKeyId(), tenant.adminKey(), null);
        assertThat(last.statusCode()).as(last.body()).isEqualTo(409);
        assertThat(last.body()).contains("last_admin_key");
        // rotation with a grace period: both work until the old one's grace ends
        HttpResponse<String> rotated = call("POST", "/api/v1/keys/" + tenant.adminKeyId() + "/rotate", tenant.adminKey(),
                new JsonObject().put("graceSeconds", 600));
        assertThat(rotated.statusCode()).as(rotated.body()).isEqualTo(201);
        String fresh = new JsonObject(rotated.body()).getJsonObject("key").getString("key");
        assertThat(new JsonObject(rotated.body()).getJsonObject("previous").getString("expiresAt")).isNotNull();
        assertThat(call("GET", "/api/v1/settings", tenant.adminKey(), null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/settings", fresh, null).statusCode()).isEqualTo(200);
        // without grace the old one stops at once
        String freshId = new JsonObject(rotated.body()).getJsonObject("key").getString("id");
        HttpResponse<String> again = call("POST", "/api/v1/keys/" + freshId + "/rotate", fresh, null);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(201);
        assertThat(call("GET", "/api/v1/settings", fresh, null).statusCode()).isEqualTo(401);
        assertThat(call("POST", "/api/v1/keys/" + freshId + "/rotate", tenant.adminKey(),
                new JsonObject().put("graceSeconds", -1)).statusCode()).isIn(400, 404);
    }

    @Test
    void anExpiredKeyIsRefusedAndBadKeysAreRefusedByName() throws Exception {
        Tenant tenant = newTenant();
        HttpResponse<String> made = call("POST", "/api/v1/keys", tenant.adminKey(), new JsonObject().put("name", "short")
                .put("scopes", new JsonArray().add("read")).put("expiresAt", Instant.now().plusSeconds(2).toString()));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String secret = new JsonObject(made.body()).getJsonObject("key").getString("key");
        assertThat(call("GET", "/api/v1/settings", secret, null).statusCode()).isEqualTo(200);
        Await.until("the key to expire", Duration.ofSeconds(10), () -> {
            try {
                HttpResponse<String> late = call("GET", "/api/v1/settings", secret, null);
                return late.statusCode() == 401 && late.body().contains("expired");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        for (JsonObject bad : List.of(new JsonObject().put("name", "x"),
                new JsonObject().put("name", "x").put("scopes", new JsonArray()),
                new JsonObject().put("name", "x").put("scopes", new JsonArray().add("root")),
                new JsonObject().put("name", "x").put("scopes", new JsonArray().add("read")).put("expiresAt", "tomorrow"),
                new JsonObject().put("name", "x").put("scopes", new JsonArray().add("read")).put("expiresAt", "2001-01-01T00:00:00Z"))) {
            HttpResponse<String> refused = call("POST", "/api/v1/keys", tenant.adminKey(), bad);
            assertThat(refused.statusCode()).as(bad.encode()).isEqualTo(400);
        }
    }

    @Test
    void aSuspendedTenantsKeysAreRefusedUntilItIsResumed() throws Exception {
        Tenant tenant = newTenant();
        assertThat(call("GET", "/api/v1/settings", tenant.adminKey(), null).statusCode()).isEqualTo(200);
        assertThat(call("PATCH", "/admin/v1/tenants/" + tenant.id(), OPERATOR, new JsonObject().put("status", "suspended"))
                .statusCode()).isEqualTo(200);
        HttpResponse<String> suspended = call("GET", "/api/v1/settings", tenant.adminKey(), null);
        assertThat(suspended.statusCode()).isEqualTo(403);
        assertThat(suspended.body()).contains("tenant suspended");
        assertThat(call("POST", "/api/v1/messages", tenant.adminKey(), message("s1")).statusCode()).isEqualTo(403);
        assertThat(call("PATCH", "/admin/v1/tenants/" + tenant.id(), OPERATOR, new JsonObject().put("status", "active"))
                .statusCode()).isEqualTo(200);
        assertThat(call("GET", "/api/v1/settings", tenant.adminKey(), null).statusCode()).isEqualTo(200);
    }

    @Test
    void theOperatorManagesATenantsKeys() throws Exception {
        Tenant tenant = newTenant();
        HttpResponse<String> made = call("POST", "/admin/v1/tenants/" + tenant.id() + "/keys", OPERATOR,
                new JsonObject().put("name", "ops").put("scopes", new JsonArray().add("admin")));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String id = new JsonObject(made.body()).getJsonObject("key").getString("id");
        assertThat(call("GET", "/admin/v1/tenants/" + tenant.id() + "/keys", OPERATOR, null).body()).contains(id);
        assertThat(call("DELETE", "/admin/v1/tenants/" + tenant.id() + "/keys/" + id, OPERATOR, null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/admin/v1/tenants/nobody/keys", OPERATOR, null).statusCode()).isEqualTo(404);
        assertThat(call("POST", "/admin/v1/tenants/nobody/keys", OPERATOR,
                new JsonObject().put("name", "x").put("scopes", new JsonArray().add("read"))).statusCode()).isEqualTo(404);
        // a tenant key is not the operator's
        assertThat(call("GET", "/admin/v1/tenants/" + tenant.id() + "/keys", tenant.adminKey(), null).statusCode()).isEqualTo(401);
    }
}
