package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The audit of writes, role changes and auth-failure bursts, and {@code GET /api/v1/audit}, over real HTTP (issue 22). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuditApiTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private GatewayClient gateway;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-audit")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        gateway = new GatewayClient(base);
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    /** A tenant of its own, so one test's events cannot show in another's; returns its key. */
    private String newTenant() {
        String id = "audit" + TENANTS.incrementAndGet();
        String key = "key-" + id + "-0123456789abcdef";
        result(new TenantStore(database.pool()).ensure(id, "Tenant " + id, key));
        return key;
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return gateway.call(method, path, key, body);
    }

    private JsonArray events(String key, String query) throws Exception {
        HttpResponse<String> response = call("GET", "/api/v1/audit" + query, key, null);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return new JsonObject(response.body()).getJsonArray("events");
    }

    /** The tenant's events of a type once {@code count} are there (a write's row is written after its answer). */
    private List<JsonObject> eventsOnce(String key, String type, int count) throws Exception {
        Await.until(count + " " + type + " events", Duration.ofSeconds(10), () -> {
            try {
                return events(key, "?type=" + type).size() >= count;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        return events(key, "?type=" + type).stream().map(JsonObject.class::cast).toList();
    }

    private void message(String key, String chat) throws Exception {
        assertThat(call("POST", "/api/v1/messages", key, new JsonObject().put("chatId", chat).put("senderId", "alice")
                .put("messageId", "m-" + chat).put("text", "hello")).statusCode()).isEqualTo(202);
    }

    @Test
    void aRoleChangeIsAuditedWithItsChatKeyAndRouteTemplateAndMessageIntakeIsNot() throws Exception {
        // given a tenant's chat
        String key = newTenant();
        message(key, "alice");
        // when its key makes the chat admin
        assertThat(call("PUT", "/api/v1/chats/api/alice/role", key, new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
        // then one role_change names the chat, the new role and the key (its id, never the key)
        JsonObject change = eventsOnce(key, "role_change", 1).getFirst();
        assertThat(change.getJsonObject("chat")).isEqualTo(new JsonObject().put("channel", "api").put("chatId", "alice"));
        assertThat(change.getJsonObject("metadata").getString("role")).isEqualTo("admin");
        assertThat(change.getJsonObject("actor").getString("keyId"))
                .isEqualTo("k" + TenantStore.hashKey(key).substring(0, 15));
        assertThat(change.getJsonObject("actor").getString("keyName")).isEqualTo("default");
        // and one http_write names the route template, not the raw path, with the status
        JsonObject write = eventsOnce(key, "http_write", 1).getFirst();
        assertThat(write.getJsonObject("http")).isEqualTo(new JsonObject().put("method", "PUT")
                .put("route", "/api/v1/chats/:channel/:chatKey/role").put("status", 200));
        assertThat(write.getString("outcome")).isEqualTo("success");
        assertThat(write.getJsonObject("chat").getString("chatId")).isEqualTo("alice");
        // and the message intake wrote no row; nothing anywhere carries the key
        JsonArray all = events(key, "");
        assertThat(all).hasSize(2);
        assertThat(all.encode()).doesNotContain(key);
    }

    @Test
    void aRefusedWriteIsAuditedWithItsStatusAndErrorCode() throws Exception {
        // given a tenant / when it writes a bad setting and deletes a task that does not exist
        String key = newTenant();
        assertThat(call("PUT", "/api/v1/settings", key, new JsonObject().put("timeZone", "Mars/Base")).statusCode()).isEqualTo(400);
        assertThat(call("DELETE", "/api/v1/tasks/t-none", key, null).statusCode()).isEqualTo(404);
        assertThat(call("PUT", "/api/v1/settings", key, new JsonObject().put("timeZone", "Europe/Berlin")).statusCode())
                .isEqualTo(200);
        // then each write has its row with status, outcome and the error's code (rows are written after the
        // answers, so their order may differ from the requests')
        List<JsonObject> writes = eventsOnce(key, "http_write", 3);
        assertThat(writes).extracting(e -> e.getJsonObject("http").getString("route") + " " + e.getJsonObject("http")
                        .getInteger("status") + " " + e.getString("outcome") + " " + e.getJsonObject("metadata").getString("errorCode"))
                .containsExactlyInAnyOrder("/api/v1/settings 400 invalid_args invalid_request",
                        "/api/v1/tasks/:id 404 denied not_found", "/api/v1/settings 200 success null");
        assertThat(writes).filteredOn(e -> e.getJsonObject("http").getInteger("status") == 404).singleElement()
                .satisfies(e -> assertThat(e.getJsonObject("metadata").getJsonObject("params"))
                        .isEqualTo(new JsonObject().put("id", "t-none")));
    }

    @Test
    void aWriteNamesTheChatItActsOnAndTheFileItWrites() throws Exception {
        // given a tenant's chat / when a task is created for it and a workspace file is written
        String key = newTenant();
        message(key, "bob");
        assertThat(call("POST", "/api/v1/tasks", key, new JsonObject().put("chatId", "bob").put("prompt", "ping")
                .put("scheduleType", "interval").put("scheduleValue", "3600000")).statusCode()).isEqualTo(201);
        assertThat(call("PUT", "/api/v1/workspace/files/memory/notes.md", key, new JsonObject().put("content", "x"))
                .statusCode()).isBetween(200, 201);
        // then the task's row names the chat, and the file's row the route template with the file's path
        List<JsonObject> writes = eventsOnce(key, "http_write", 2);
        assertThat(writes).filteredOn(e -> e.getJsonObject("http").getString("route").equals("/api/v1/tasks")).singleElement()
                .satisfies(e -> assertThat(e.getJsonObject("chat")).isEqualTo(new JsonObject().put("channel", "api")
                        .put("chatId", "bob")));
        assertThat(writes).filteredOn(e -> e.getJsonObject("http").getString("route").equals("/api/v1/workspace/files/*"))
                .singleElement().satisfies(e -> assertThat(e.getJsonObject("metadata").getJsonObject("params")
                        .getString("*")).isEqualTo("memory/notes.md"));
    }

    @Test
    void aTenantReadsOnlyItsOwnEvents() throws Exception {
        // given two tenants, each with a write
        String mine = newTenant();
        String other = newTenant();
        call("PUT", "/api/v1/settings", mine, new JsonObject().put("timeZone", "Asia/Tokyo"));
        call("PUT", "/api/v1/settings", other, new JsonObject().put("timeZone", "Asia/Tokyo"));
        List<JsonObject> own = eventsOnce(mine, "http_write", 1);
        List<JsonObject> theirs = eventsOnce(other, "http_write", 1);
        // when the other tenant reads from before both events (audit rows are written after the reply, so either id
        // may be the lower one)
        long before = Math.min(own.getFirst().getLong("id"), theirs.getFirst().getLong("id")) - 1;
        JsonArray seen = events(other, "?after=" + before);
        // then it sees its own event only
        assertThat(seen).isNotEmpty();
        assertThat(seen.stream().map(JsonObject.class::cast).map(e -> e.getLong("id"))).doesNotContain(own.getFirst().getLong("id"));
        assertThat(result(new AuditStore(database.pool()).list("audit-nobody", 0, 500))).isEmpty();
    }

    @Test
    void pagesFollowNext() throws Exception {
        String key = newTenant();
        for (int i = 0; i < 3; i++) {
            call("PUT", "/api/v1/settings", key, new JsonObject().put("memoryScope", i % 2 == 0 ? "global" : "chat"));
        }
        eventsOnce(key, "http_write", 3);
        JsonObject first = new JsonObject(call("GET", "/api/v1/audit?limit=2", key, null).body());
        assertThat(first.getJsonArray("events")).hasSize(2);
        JsonObject second = new JsonObject(call("GET", "/api/v1/audit?limit=2&after=" + first.getLong("next"), key, null).body());
        assertThat(second.getJsonArray("events")).hasSize(1);
        JsonObject last = new JsonObject(call("GET", "/api/v1/audit?after=" + second.getLong("next"), key, null).body());
        assertThat(last.getJsonArray("events")).isEmpty();
        assertThat(last.getLong("next")).isEqualTo(second.getLong("next"));
    }

    @Test
    void badParametersAre400sNamingTheParameter() throws Exception {
        String key = newTenant();
        Map<String, String> cases = Map.of(
                "?after=-1", "after",
                "?after=abc", "after",
                "?limit=0", "limit",
                "?limit=501", "limit",
                "?type=Tool-Call", "type",
                "?type=", "type",
                "?since=1", "since",
                "?limit=1&limit=2", "limit");
        for (var bad : cases.entrySet()) {
            HttpResponse<String> response = call("GET", "/api/v1/audit" + bad.getKey(), key, null);
            assertThat(response.statusCode()).as(bad.getKey()).isEqualTo(400);
            assertThat(new JsonObject(response.body()).getJsonObject("error").getString("message")).as(bad.getKey())
                    .contains("'" + bad.getValue() + "'");
        }
    }

    @Test
    void aBurstOfBogusKeysIsOneAggregatedRowNotOnePerRequest() throws Exception {
        // given the cluster's burst rows so far
        AuditStore audit = new AuditStore(database.pool());
        long before = result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, 0, 500)).stream()
                .mapToLong(AuditStore.Event::id).max().orElse(0);
        // when one address sends 150 requests with made-up keys
        for (int i = 0; i < 150; i++) {
            assertThat(call("POST", "/api/v1/tasks", "bogus-" + i, new JsonObject()).statusCode()).isEqualTo(401);
        }
        // then there is one burst row for it, with no tenant, and no row per request
        Await.until("a burst row", Duration.ofSeconds(10),
                () -> !result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, before, 500)).isEmpty());
        List<AuditStore.Event> bursts = result(audit.listCluster(AuditStore.AUTH_FAILURE_BURST, before, 500));
        assertThat(bursts).singleElement().satisfies(burst -> {
            assertThat(burst.tenantId()).isNull();
            assertThat(burst.metadata().getString("source")).isEqualTo("127.0.0.1");
            assertThat(burst.metadata().getInteger("count")).isGreaterThanOrEqualTo(20);
            assertThat(burst.statusCode()).isEqualTo(401);
        });
        long rows = result(database.pool().query("SELECT count(*) FROM audit_events WHERE tenant_id IS NULL").execute())
                .iterator().next().getLong(0);
        assertThat(rows).isEqualTo(1);
    }
}
