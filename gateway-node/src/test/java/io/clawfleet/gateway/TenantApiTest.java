package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.TenantStore;
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
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** A tenant's own settings over real HTTP ({@code GET|PUT /api/v1/settings}), on embedded PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantApiTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-settings")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    /** A new tenant of its own, so one test's settings cannot leak into another's; returns its key. */
    private String newTenant() {
        String id = "settings" + TENANTS.incrementAndGet();
        String key = "key-" + id + "-0123456789abcdef";
        result(new TenantStore(database.pool()).ensure(id, "Tenant " + id, key));
        return key;
    }

    private HttpResponse<String> send(String method, String key, JsonObject body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/api/v1/settings")).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .header("authorization", "Bearer " + key);
        if (body != null) {
            request.header("content-type", "application/json");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonObject settings(String key) throws Exception {
        HttpResponse<String> response = send("GET", key, null);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return new JsonObject(response.body());
    }

    @Test
    void aTenantsTimeZoneIsUtcUntilSetAndThenReadsBackCanonical() throws Exception {
        // given a new tenant
        String key = newTenant();
        assertThat(settings(key).getString("timeZone")).isEqualTo("UTC");
        // when it sets its zone, in any letter case
        HttpResponse<String> put = send("PUT", key, new JsonObject().put("timeZone", "america/new_york"));
        // then the answer and every later read show the canonical IANA id, and the other settings are untouched
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        assertThat(new JsonObject(put.body()).getString("timeZone")).isEqualTo("America/New_York");
        JsonObject read = settings(key);
        assertThat(read.getString("timeZone")).isEqualTo("America/New_York");
        assertThat(read.getString("autonomy")).isEqualTo(new JsonObject(put.body()).getString("autonomy"));
    }

    @Test
    void changingAnotherSettingKeepsTheTimeZone() throws Exception {
        String key = newTenant();
        send("PUT", key, new JsonObject().put("timeZone", "Asia/Kathmandu"));
        HttpResponse<String> put = send("PUT", key, new JsonObject().put("memoryScope", "global"));
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        assertThat(settings(key).getString("timeZone")).isEqualTo("Asia/Kathmandu");
        assertThat(settings(key).getString("memoryScope")).isEqualTo("global");
    }

    @Test
    void aBadTimeZoneIsRefusedNamingTheFieldAndChangesNothing() throws Exception {
        // given a tenant in Berlin
        String key = newTenant();
        send("PUT", key, new JsonObject().put("timeZone", "Europe/Berlin"));
        JsonObject before = settings(key);
        for (Object bad : List.of("CEST", "+02:00", "Mars/Olympus_Mons", "", 2)) {
            // when a request sets a valid autonomy together with a bad zone
            HttpResponse<String> put = send("PUT", key, new JsonObject().put("autonomy", "read_only").put("timeZone", bad));
            // then it is refused with an error naming the field, and nothing changed
            assertThat(put.statusCode()).as("%s: %s", bad, put.body()).isEqualTo(400);
            assertThat(new JsonObject(put.body()).getJsonObject("error").getString("message")).as("%s", bad).contains("timeZone");
            assertThat(settings(key)).as("%s", bad).isEqualTo(before);
        }
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .method(method, HttpRequest.BodyPublishers.ofString(body.encode()))
                .header("authorization", "Bearer " + key).header("content-type", "application/json").build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private String roleOf(String chatKey) {
        return result(database.pool().preparedQuery("SELECT role FROM chats WHERE chat_key = $1")
                .execute(io.vertx.sqlclient.Tuple.of(chatKey))).iterator().next().getString(0);
    }

    /** Issue 22: no chat makes itself admin; the operator grants the role, for the tenant's own chats only. */
    @Test
    void theOperatorGrantsAChatTheAdminRoleAndAnotherTenantCannot() throws Exception {
        String mine = newTenant();
        String other = newTenant();
        String chat = "alice-" + TENANTS.incrementAndGet();
        JsonObject admin = new JsonObject().put("role", "admin");
        // a chat exists once it has sent a message
        assertThat(call("PUT", "/api/v1/chats/api/" + chat + "/role", mine, admin).statusCode()).isEqualTo(404);
        assertThat(call("POST", "/api/v1/messages", mine, new JsonObject().put("chatId", chat).put("senderId", "alice")
                .put("messageId", "m1").put("text", "hello")).statusCode()).isEqualTo(202);
        // another tenant's key does not find it
        assertThat(call("PUT", "/api/v1/chats/api/" + chat + "/role", other, admin).statusCode()).isEqualTo(404);
        assertThat(roleOf(chat)).isEqualTo("normal");
        // the tenant's own key grants and revokes the role; anything else is refused by name
        HttpResponse<String> granted = call("PUT", "/api/v1/chats/api/" + chat + "/role", mine, admin);
        assertThat(granted.statusCode()).as(granted.body()).isEqualTo(200);
        assertThat(new JsonObject(granted.body()).getString("role")).isEqualTo("admin");
        assertThat(roleOf(chat)).isEqualTo("admin");
        assertThat(call("PUT", "/api/v1/chats/api/" + chat + "/role", mine, new JsonObject().put("role", "root")).body())
                .contains("'admin' or 'normal'");
        assertThat(call("PUT", "/api/v1/chats/api/" + chat + "/role", mine, new JsonObject().put("role", "normal")).statusCode())
                .isEqualTo(200);
        assertThat(roleOf(chat)).isEqualTo("normal");
    }
}
