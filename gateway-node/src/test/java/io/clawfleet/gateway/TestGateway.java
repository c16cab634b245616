package io.clawfleet.gateway;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A test class's gateway: a node of the gateway role on a database of its own, its {@link GatewayClient}, and a
 * pool on the same database for the rows a test sets up or looks at.
 */
final class TestGateway {

    private final DbUrl db;
    private final Vertx vertx = Vertx.vertx();
    private final Database database;
    private NodeRuntime node;
    private GatewayClient client;
    private String operatorKey;

    private TestGateway(DbUrl db) {
        this.db = db;
        this.database = Database.connect(vertx, db, 2, 5_000);
    }

    /** A gateway on a fresh empty database; {@code settings} are its config keys (nodeId, operatorKey, ...). */
    static TestGateway start(Map<String, String> settings) {
        return on(TestDatabases.freshEmpty()).startNode(settings);
    }

    /** The pool alone, on {@code db}: for rows a gateway must find when it starts ({@link #startNode} then). */
    static TestGateway on(DbUrl db) {
        return new TestGateway(db);
    }

    /** Starts the gateway's node on this database; {@code settings} are its config keys. */
    TestGateway startNode(Map<String, String> settings) {
        node = TestNodes.start(TestNodes.config("gateway", settings), db, List.of(GatewayRole::new));
        client = new GatewayClient("http://127.0.0.1:" + node.httpPort());
        operatorKey = settings.get("operatorKey");
        return this;
    }

    void stop() {
        if (node != null) {
            result(node.stop(), Duration.ofSeconds(60));
        }
        result(database.close());
        result(vertx.close());
    }

    DbUrl db() {
        return db;
    }

    Vertx vertx() {
        return vertx;
    }

    Pool pool() {
        return database.pool();
    }

    NodeRuntime node() {
        return node;
    }

    GatewayClient client() {
        return client;
    }

    /** A tenant the operator made: its id and its first key (a tenant admin's), as a secret and by id. */
    record Tenant(String id, String key, String keyId) {
    }

    /** Makes a tenant with the operator's key ({@code limits} only when not null) and asserts it was made. */
    Tenant tenant(String id, String name, JsonObject limits) throws Exception {
        JsonObject body = new JsonObject().put("id", id).put("name", name);
        if (limits != null) {
            body.put("limits", limits);
        }
        HttpResponse<String> created = client.call("POST", "/admin/v1/tenants", operatorKey, body);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        JsonObject key = new JsonObject(created.body()).getJsonObject("apiKey");
        return new Tenant(id, key.getString("key"), key.getString("id"));
    }

    /** The first column of the first row {@code sql} returns; null when it returns none. */
    Object value(String sql, Object... params) {
        var rows = result(database.pool().preparedQuery(sql).execute(Tuple.from(params)));
        return rows.size() == 0 ? null : rows.iterator().next().getValue(0);
    }

    /** Rows of any table whose text form holds the value, as text or as hex bytes. */
    List<String> rowsContaining(String value) {
        String hex = HexFormat.of().formatHex(value.getBytes(StandardCharsets.UTF_8));
        List<String> found = new ArrayList<>();
        List<String> tables = new ArrayList<>();
        result(database.pool().query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                + "AND table_type = 'BASE TABLE'").execute()).forEach(row -> tables.add(row.getString(0)));
        for (String table : tables) {
            result(database.pool().preparedQuery("SELECT t::text FROM " + table + " t WHERE t::text LIKE $1 OR t::text LIKE $2")
                    .execute(Tuple.of("%" + value + "%", "%" + hex + "%"))).forEach(row -> found.add(table + ": " + row.getString(0)));
        }
        return found;
    }
}
