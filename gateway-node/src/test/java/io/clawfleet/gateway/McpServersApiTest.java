package io.clawfleet.gateway;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.gateway.GatewayClient.json;
import static io.clawfleet.gateway.GatewayClient.ok;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot's remote MCP servers on a real gateway (issue 16): stored with their headers sealed and shown as hints, kept
 * when a change leaves them out (but not when the URL moves to another origin), refused with a clear error when
 * anything is wrong or a URL would lead into the cluster's networks; a header's value never reaches a row, a
 * response, an audit entry or a log line in plaintext.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class McpServersApiTest {

    private static final String TOKEN = "mcp-canary-token-5c1e7a93d04b";
    private static final String API_KEY = "mcp-canary-apikey-0b9f27e4a6d1";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private CapturedLogs logs;
    private TestGateway gateway;
    private GatewayClient client;

    @BeforeAll
    void start() {
        logs = CapturedLogs.attach();
        gateway = TestGateway.start(Map.of("nodeId", "gw-mcp-servers", "operatorKey", "operator-key-mcp-servers-0123456789",
                "egress.allowedHosts", "127.0.0.1"));
        client = gateway.client();
    }

    @AfterAll
    void stop() {
        logs.detach();
        gateway.stop();
    }

    /** A new tenant with a bot 'support'; its admin key. */
    private String tenant() throws Exception {
        String id = "mcps-" + TENANTS.incrementAndGet();
        String key = gateway.tenant(id, id, null).key();
        ok(client.call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support").put("name", "Support")));
        return key;
    }

    private static JsonObject servers() {
        return new JsonObject().put("servers", new JsonObject()
                .put("search", new JsonObject().put("url", "http://127.0.0.1:9/mcp").put("bearerToken", TOKEN)
                        .put("timeoutMs", 20_000).put("access", "everyone")
                        .put("tools", new JsonObject().put("delete_index", "off").put("reindex", "admin")))
                .put("docs", new JsonObject().put("type", "http").put("url", "http://127.0.0.1:9/docs/mcp")
                        .put("headers", new JsonObject().put("X-Api-Key", API_KEY))));
    }

    @Test
    void serversAreStoredSealedShownWithHintsAndTheHeadersAreKeptWhenLeftOut() throws Exception {
        String key = tenant();
        assertThat(json(ok(client.call("GET", "/api/v1/bots/support/mcp-servers", key, null))).getJsonObject("servers")).isEmpty();

        // when the tenant gives the bot two servers, one with a bearer token and one with an API key header
        JsonObject put = json(ok(client.call("PUT", "/api/v1/bots/support/mcp-servers", key, servers())));

        // then they are shown with hints of the credentials, never the credentials
        assertThat(put.getLong("version")).isEqualTo(1L);
        JsonObject search = put.getJsonObject("servers").getJsonObject("search");
        assertThat(search.getJsonObject("headers").getString("Authorization")).isEqualTo("Bearer mcp…d04b");
        assertThat(search.getString("access")).isEqualTo("everyone");
        assertThat(search.getJsonObject("tools").getMap()).isEqualTo(Map.of("delete_index", "off", "reindex", "admin"));
        assertThat(search.getLong("timeoutMs")).isEqualTo(20_000L);
        JsonObject docs = put.getJsonObject("servers").getJsonObject("docs");
        assertThat(docs.getJsonObject("headers").getString("X-Api-Key")).isEqualTo("mcp…a6d1");
        assertThat(docs.getString("access")).isEqualTo("admin");
        JsonObject got = json(ok(client.call("GET", "/api/v1/bots/support/mcp-servers", key, null)));
        assertThat(got.getJsonObject("servers")).isEqualTo(put.getJsonObject("servers"));
        // another bot of the tenant has none
        assertThat(json(ok(client.call("GET", "/api/v1/mcp-servers", key, null))).getJsonObject("servers")).isEmpty();

        // when what was shown is sent back edited, without credentials, on the same origin: they are kept
        JsonObject edited = new JsonObject().put("servers", got.getJsonObject("servers").copy());
        edited.getJsonObject("servers").getJsonObject("search").remove("headers");
        edited.getJsonObject("servers").getJsonObject("docs").remove("headers");
        edited.getJsonObject("servers").getJsonObject("docs").put("url", "http://127.0.0.1:9/docs/v2/mcp");
        JsonObject again = json(ok(client.call("PUT", "/api/v1/bots/support/mcp-servers", key, edited)));
        assertThat(again.getLong("version")).isEqualTo(2L);
        assertThat(again.getJsonObject("servers").getJsonObject("docs").getJsonObject("headers").getString("X-Api-Key"))
                .isEqualTo("mcp…a6d1");
        assertThat(again.getJsonObject("servers").getJsonObject("search").getJsonObject("headers").getString("Authorization"))
                .isEqualTo("Bearer mcp…d04b");

        // but a server whose URL moved to another origin must be given its credentials again
        JsonObject moved = new JsonObject().put("servers", new JsonObject().put("docs", new JsonObject()
                .put("url", "http://127.0.0.1:10/docs/mcp")));
        HttpResponse<String> refused = client.call("PUT", "/api/v1/bots/support/mcp-servers", key, moved);
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
        assertThat(refused.body()).contains("servers.docs", "another origin", "http://127.0.0.1:10");

        // the headers are sealed; no value is in a row, a response, an audit entry or a log line
        String sealed = (String) gateway.value("SELECT encode(secrets_enc, 'hex') FROM bot_mcp_servers WHERE bot_id = 'support' "
                + "AND tenant_id = (SELECT tenant_id FROM api_keys WHERE prefix = $1)", prefix(key));
        assertThat(sealed).isNotNull();
        assertThat(gateway.rowsContaining(TOKEN)).isEmpty();
        assertThat(gateway.rowsContaining(API_KEY)).isEmpty();
        assertThat(put.encode() + got.encode() + again.encode() + refused.body()).doesNotContain(TOKEN).doesNotContain(API_KEY);
        logs.assertNoneContains(TOKEN);
        logs.assertNoneContains(API_KEY);

        // when they are removed, the bot has none
        assertThat(client.call("DELETE", "/api/v1/bots/support/mcp-servers", key, null).statusCode()).isEqualTo(204);
        assertThat(json(ok(client.call("GET", "/api/v1/bots/support/mcp-servers", key, null))).getJsonObject("servers")).isEmpty();
        assertThat(client.call("DELETE", "/api/v1/bots/support/mcp-servers", key, null).statusCode()).isEqualTo(404);
    }

    @Test
    void badServersAreRefusedNamingTheFieldAndNothingChanges() throws Exception {
        String key = tenant();
        ok(client.call("PUT", "/api/v1/bots/support/mcp-servers", key, servers()));
        Map<String, JsonObject> cases = new java.util.LinkedHashMap<>();
        cases.put("'servers' must be an object", new JsonObject().put("servers", new JsonObject()));
        cases.put("unknown field 'server'", new JsonObject().put("server", new JsonObject()));
        cases.put("a server name is 1 to 32", one("bad__name", new JsonObject().put("url", "https://a.example/mcp")));
        cases.put("\"url\" must start with https://", one("x", new JsonObject().put("url", "ftp://a.example/mcp")));
        cases.put("user name or password", one("x", new JsonObject().put("url", "https://u:p@a.example/mcp")));
        cases.put("\"command\" and \"url\" exclude each other", one("x", new JsonObject().put("url", "https://a.example/mcp")
                .put("command", "node")));
        cases.put("old HTTP+SSE transport", one("x", new JsonObject().put("url", "https://a.example/sse").put("type", "sse")));
        cases.put("\"timeoutMs\"", one("x", new JsonObject().put("url", "https://a.example/mcp").put("timeoutMs", 0)));
        cases.put("\"access\"", one("x", new JsonObject().put("url", "https://a.example/mcp").put("access", "off")));
        cases.put("\"tools\": drop", one("x", new JsonObject().put("url", "https://a.example/mcp")
                .put("tools", new JsonObject().put("drop", "never"))));
        cases.put("bearerToken\" or an Authorization header", one("x", new JsonObject().put("url", "https://a.example/mcp")
                .put("bearerToken", "t").put("headers", new JsonObject().put("authorization", "Bearer u"))));
        cases.put("is set by Clawfleet's MCP client", one("x", new JsonObject().put("url", "https://a.example/mcp")
                .put("headers", new JsonObject().put("Mcp-Session-Id", "s"))));
        cases.put("without line breaks", one("x", new JsonObject().put("url", "https://a.example/mcp")
                .put("headers", new JsonObject().put("X-Key", "a\r\nHost: evil"))));
        cases.put("unknown key \"cwd\"", one("x", new JsonObject().put("url", "https://a.example/mcp").put("cwd", "/")));
        cases.put("10.1.2.3", one("x", new JsonObject().put("url", "http://10.1.2.3/mcp")));
        cases.put("169.254.169.254", one("x", new JsonObject().put("url", "http://169.254.169.254/mcp")));
        cases.put("127.0.0.2", one("x", new JsonObject().put("url", "http://127.0.0.2:8080/mcp")));
        for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
            HttpResponse<String> refused = client.call("PUT", "/api/v1/bots/support/mcp-servers", key, c.getValue());
            assertThat(refused.statusCode()).as(c.getKey() + ": " + refused.body()).isEqualTo(400);
            assertThat(json(refused).getJsonObject("error").getString("message")).as(c.getKey()).contains(c.getKey());
        }
        JsonObject after = json(client.call("GET", "/api/v1/bots/support/mcp-servers", key, null));
        assertThat(after.getLong("version")).isEqualTo(1L);
        assertThat(after.getJsonObject("servers").fieldNames()).containsExactlyInAnyOrder("search", "docs");
        assertThat(client.call("PUT", "/api/v1/bots/nobody/mcp-servers", key, servers()).statusCode()).isEqualTo(404);
    }

    @Test
    void aReadKeyMayLookButNotChange() throws Exception {
        String key = tenant();
        String read = json(ok(client.call("POST", "/api/v1/keys", key, new JsonObject().put("name", "viewer")
                .put("scopes", new io.vertx.core.json.JsonArray().add("read"))))).getJsonObject("key").getString("key");
        assertThat(client.call("GET", "/api/v1/bots/support/mcp-servers", read, null).statusCode()).isEqualTo(200);
        assertThat(client.call("PUT", "/api/v1/bots/support/mcp-servers", read, servers()).statusCode()).isEqualTo(403);
        assertThat(client.call("DELETE", "/api/v1/bots/support/mcp-servers", read, null).statusCode()).isEqualTo(403);
    }

    private static JsonObject one(String name, JsonObject server) {
        return new JsonObject().put("servers", new JsonObject().put(name, server));
    }

    /** The public prefix of an API key, as api_keys stores it. */
    private String prefix(String key) {
        return (String) gateway.value("SELECT prefix FROM api_keys WHERE $1 LIKE prefix || '%' ORDER BY length(prefix) DESC LIMIT 1", key);
    }
}
