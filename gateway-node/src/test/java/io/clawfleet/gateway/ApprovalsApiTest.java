package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
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

/**
 * Issue 22 over real HTTP: the tenant's admin lists and decides calls waiting for approval
 * ({@code GET /api/v1/approvals}, {@code POST /api/v1/approvals/{id}}) naming the exact call, only its
 * own tenant's; and a group chat's admin role names its admin senders.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ApprovalsApiTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private GatewayClient gateway;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-approvals")), db, List.of(GatewayRole::new));
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

    private record Tenant(String id, String key) {
    }

    private Tenant newTenant() {
        String id = "approvals" + TENANTS.incrementAndGet();
        String key = "key-" + id + "-0123456789abcdef";
        result(new TenantStore(database.pool()).ensure(id, "Tenant " + id, key));
        return new Tenant(id, key);
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return gateway.call(method, path, key, body);
    }

    /** A call of the tenant's chat waiting for approval, as a paused turn leaves it; returns its id. */
    private String waitingCall(Tenant tenant, String chat, String expiresIn) {
        var accepted = result(new InboxStore(database.pool()).accept(tenant.id(), "api", chat, 0, "m-" + chat, "alice", "user",
                "please send it", null)).message();
        String id = "id" + TENANTS.incrementAndGet() + "x";
        result(database.pool().preparedQuery("""
                        INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,
                                                       args_hash, requested_by, expires_at)
                        VALUES ($1, $2, $3, 'message_send', 'call_1', $4, '{}'::jsonb, $5, $6, 'alice', now() + $7::text::interval)""")
                .execute(Tuple.of(accepted.chatId(), tenant.id(), accepted.id(), new JsonObject().put("chat_id", "ops"),
                        id, "hash-of-" + id, expiresIn)));
        return id;
    }

    private static JsonObject decision(String decision, String hash) {
        return new JsonObject().put("decision", decision).put("argsHash", hash);
    }

    @Test
    void anAdminDecidesAWaitingCallNamingItsHashAndTheDecisionEntersTheChat() throws Exception {
        Tenant tenant = newTenant();
        String id = waitingCall(tenant, "asker-" + TENANTS.incrementAndGet(), "1 hour");
        // the tenant's key lists it, with what it would run and the hash to name
        HttpResponse<String> list = call("GET", "/api/v1/approvals", tenant.key(), null);
        assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
        JsonArray approvals = new JsonObject(list.body()).getJsonArray("approvals");
        assertThat(approvals).hasSize(1);
        JsonObject listed = approvals.getJsonObject(0);
        assertThat(listed.getString("id")).isEqualTo(id);
        assertThat(listed.getString("tool")).isEqualTo("message_send");
        assertThat(listed.getString("argsHash")).isEqualTo("hash-of-" + id);
        assertThat(listed.getString("status")).isEqualTo("waiting");
        // a decision naming another hash is refused and changes nothing
        HttpResponse<String> wrong = call("POST", "/api/v1/approvals/" + id, tenant.key(), decision("approve", "hash-of-something-else"));
        assertThat(wrong.statusCode()).as(wrong.body()).isEqualTo(409);
        assertThat(wrong.body()).contains("args_mismatch");
        // the right one is recorded, audited, and enters the asking chat's inbox as an approval message
        HttpResponse<String> approved = call("POST", "/api/v1/approvals/" + id, tenant.key(), decision("approve", "hash-of-" + id));
        assertThat(approved.statusCode()).as(approved.body()).isEqualTo(200);
        assertThat(new JsonObject(approved.body()).getJsonObject("approval").getString("status")).isEqualTo("approve");
        assertThat(value("SELECT text FROM inbox WHERE tenant_id = $1 AND kind = 'approval'", tenant.id()))
                .isEqualTo("/approval " + id + " approve");
        assertThat(value("SELECT reason FROM audit_events WHERE tenant_id = $1 AND event_type = 'approval'", tenant.id()))
                .asString().startsWith("approve by api key");
        // a second decision finds it decided
        HttpResponse<String> again = call("POST", "/api/v1/approvals/" + id, tenant.key(), decision("deny", "hash-of-" + id));
        assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
        assertThat(again.body()).contains("already_decided");
    }

    @Test
    void anotherTenantNeitherSeesNorDecidesTheCall() throws Exception {
        Tenant mine = newTenant();
        Tenant other = newTenant();
        String id = waitingCall(mine, "asker-" + TENANTS.incrementAndGet(), "1 hour");
        assertThat(new JsonObject(call("GET", "/api/v1/approvals", other.key(), null).body()).getJsonArray("approvals")).isEmpty();
        HttpResponse<String> decided = call("POST", "/api/v1/approvals/" + id, other.key(), decision("approve", "hash-of-" + id));
        assertThat(decided.statusCode()).as(decided.body()).isEqualTo(404);
        assertThat(value("SELECT decision FROM pending_approvals WHERE approval_id = $1", id)).isNull();
    }

    @Test
    void anExpiredCallCannotBeApprovedAndBadDecisionsAreRefusedByName() throws Exception {
        Tenant tenant = newTenant();
        String id = waitingCall(tenant, "asker-" + TENANTS.incrementAndGet(), "-1 second");
        HttpResponse<String> late = call("POST", "/api/v1/approvals/" + id, tenant.key(), decision("approve", "hash-of-" + id));
        assertThat(late.statusCode()).as(late.body()).isEqualTo(410);
        assertThat(late.body()).contains("expired");
        HttpResponse<String> bad = call("POST", "/api/v1/approvals/" + id, tenant.key(), decision("maybe", "x"));
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("decision");
        HttpResponse<String> unnamed = call("POST", "/api/v1/approvals/" + id, tenant.key(), new JsonObject().put("decision", "approve"));
        assertThat(unnamed.statusCode()).isEqualTo(400);
        assertThat(unnamed.body()).contains("argsHash");
        assertThat(new JsonObject(call("GET", "/api/v1/approvals", tenant.key(), null).body()).getJsonArray("approvals")).isEmpty();
    }

    @Test
    void aGroupChatsAdminRoleNamesItsAdminSenders() throws Exception {
        Tenant tenant = newTenant();
        String group = "bot1:-100" + TENANTS.incrementAndGet();
        result(new InboxStore(database.pool()).accept(tenant.id(), "telegram", group, 0, "m-" + group, "42", "user", "hi", null));
        String path = "/api/v1/chats/telegram/" + group + "/role";
        // admin for a whole group is refused, naming what to do instead
        HttpResponse<String> whole = call("PUT", path, tenant.key(), new JsonObject().put("role", "admin"));
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(400);
        assertThat(whole.body()).contains("group chat").contains("senders");
        // naming the senders grants it to them
        HttpResponse<String> named = call("PUT", path, tenant.key(),
                new JsonObject().put("role", "admin").put("senders", new JsonArray().add("42").add("42").add("7")));
        assertThat(named.statusCode()).as(named.body()).isEqualTo(200);
        assertThat(new JsonObject(named.body()).getJsonArray("senders")).containsExactly("42", "7");
        assertThat(value("SELECT string_agg(sender_id, ',' ORDER BY sender_id) FROM chat_admins WHERE tenant_id = $1", tenant.id()))
                .isEqualTo("42,7");
        // senders without the admin role, and senders that are not ids, are refused
        assertThat(call("PUT", path, tenant.key(), new JsonObject().put("role", "normal").put("senders", new JsonArray().add("42")))
                .statusCode()).isEqualTo(400);
        assertThat(call("PUT", path, tenant.key(), new JsonObject().put("role", "admin").put("senders", new JsonArray().add(42)))
                .statusCode()).isEqualTo(400);
        // revoking clears them
        assertThat(call("PUT", path, tenant.key(), new JsonObject().put("role", "normal")).statusCode()).isEqualTo(200);
        assertThat(value("SELECT count(*) FROM chat_admins WHERE tenant_id = $1", tenant.id())).isEqualTo(0L);
    }

    private Object value(String sql, Object... params) {
        var rows = result(database.pool().preparedQuery(sql).execute(Tuple.from(params)));
        return rows.size() == 0 ? null : rows.iterator().next().getValue(0);
    }
}
