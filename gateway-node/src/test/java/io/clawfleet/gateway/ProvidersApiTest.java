package io.clawfleet.gateway;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.gateway.GatewayClient.json;
import static io.clawfleet.gateway.GatewayClient.ok;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bot's own model providers on a real gateway (issue 14): stored with the key sealed and shown as a hint, kept
 * when a change leaves it out, refused with a clear error when anything is wrong or when an endpoint would lead
 * into the cluster's networks, removed to fall back on the operator's; the key never reaches a row, a response,
 * an audit entry or a log line in plaintext.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProvidersApiTest {

    private static final String OPERATOR = "operator-key-providers-0123456789";
    private static final String CANARY = "sk-canary-providers-7f3a9d2e41b8c6";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private CapturedLogs logs;
    private TestGateway gateway;
    private GatewayClient client;

    @BeforeAll
    void start() {
        logs = CapturedLogs.attach();
        // 127.0.0.1 only is let through; other internal addresses are not
        gateway = TestGateway.start(Map.of("nodeId", "gw-providers", "operatorKey", OPERATOR, "egress.allowedHosts", "127.0.0.1"));
        client = gateway.client();
    }

    @AfterAll
    void stop() {
        logs.detach();
        gateway.stop();
    }

    /** A new tenant with a bot 'support'; its admin key. */
    private String tenant() throws Exception {
        String id = "prov-" + TENANTS.incrementAndGet();
        String key = gateway.tenant(id, id, null).key();
        ok(client.call("POST", "/api/v1/bots", key, new JsonObject().put("id", "support").put("name", "Support")));
        return key;
    }

    private static JsonObject providers() {
        return new JsonObject()
                .put("providers", new JsonObject()
                        .put("primary", new JsonObject().put("type", "openai").put("baseUrl", "http://127.0.0.1:9/v1/")
                                .put("apiKey", CANARY).put("model", "gpt-4o-mini")
                                .put("price", new JsonObject().put("input", 0.15).put("output", 0.6).put("cachedInput", 0.075)))
                        .put("backup", new JsonObject().put("type", "anthropic").put("baseUrl", "http://127.0.0.1:9")
                                .put("model", "claude-haiku").put("maxTokens", 2048)))
                .put("roles", new JsonObject().put("default", new JsonArray().add("primary").add("backup"))
                        .put("fast", new JsonArray().add("backup")));
    }

    @Test
    void aBotsProvidersAreStoredSealedShownWithAHintAndTheKeyIsKeptWhenLeftOut() throws Exception {
        String key = tenant();
        assertThat(json(client.call("GET", "/api/v1/bots/support/providers", key, null)).getString("source")).isEqualTo("operator");

        // when the tenant gives the bot its providers
        JsonObject put = json(ok(client.call("PUT", "/api/v1/bots/support/providers", key, providers())));

        // then they are shown with the key's hint, never the key
        assertThat(put.getString("source")).isEqualTo("bot");
        assertThat(put.getLong("version")).isEqualTo(1L);
        JsonObject primary = put.getJsonObject("providers").getJsonObject("primary");
        assertThat(primary.getString("apiKeyHint")).isEqualTo("sk-…b8c6");
        assertThat(primary.containsKey("apiKey")).isFalse();
        assertThat(primary.getString("baseUrl")).isEqualTo("http://127.0.0.1:9/v1");
        assertThat(put.getJsonObject("providers").getJsonObject("backup").getInteger("maxTokens")).isEqualTo(2048);
        assertThat(put.getJsonObject("roles").getJsonArray("default")).containsExactly("primary", "backup");
        JsonObject got = json(ok(client.call("GET", "/api/v1/bots/support/providers", key, null)));
        assertThat(got.getJsonObject("providers")).isEqualTo(put.getJsonObject("providers"));
        // the OpenAI endpoint offers the bot's own roles, and refuses a role it does not have
        List<String> models = new ArrayList<>();
        json(ok(client.call("GET", "/v1/models", key, null))).getJsonArray("data")
                .forEach(m -> models.add(((JsonObject) m).getString("id")));
        assertThat(models).contains("default", "support", "support/fast");
        HttpResponse<String> noRole = client.call("POST", "/v1/chat/completions", key, new JsonObject().put("model", "support/smart")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
        assertThat(noRole.statusCode()).isEqualTo(404);
        assertThat(noRole.body()).contains("model_not_found").contains("no model role 'smart'").contains("fast");
        // its default role may be one of its own roles, not one it lacks (checked against its providers, not the cluster's)
        ok(client.call("PUT", "/api/v1/bots/support/settings", key, new JsonObject().put("defaultRole", "fast")));
        HttpResponse<String> lacking = client.call("PUT", "/api/v1/bots/support/settings", key,
                new JsonObject().put("defaultRole", "smart"));
        assertThat(lacking.statusCode()).as(lacking.body()).isEqualTo(400);
        assertThat(lacking.body()).contains("'defaultRole'", "bot support", "[default, fast]", "'smart'");
        // main is another bot: it still uses the operator's
        assertThat(json(client.call("GET", "/api/v1/providers", key, null)).getString("source")).isEqualTo("operator");
        HttpResponse<String> notMains = client.call("PUT", "/api/v1/bots/main/settings", key,
                new JsonObject().put("defaultRole", "fast"));
        assertThat(notMains.statusCode()).as("main has only the cluster's roles: " + notMains.body()).isEqualTo(400);

        // when what was shown is sent back with a change but without the key, the stored key stays
        JsonObject edited = new JsonObject().put("providers", got.getJsonObject("providers").copy()).put("roles", got.getJsonObject("roles"));
        edited.getJsonObject("providers").getJsonObject("primary").remove("apiKeyHint");
        edited.getJsonObject("providers").getJsonObject("backup").remove("apiKeyHint");
        edited.getJsonObject("providers").getJsonObject("primary").put("model", "gpt-4.1-mini");
        JsonObject again = json(ok(client.call("PUT", "/api/v1/bots/support/providers", key, edited)));
        assertThat(again.getLong("version")).isEqualTo(2L);
        assertThat(again.getJsonObject("providers").getJsonObject("primary").getString("apiKeyHint")).isEqualTo("sk-…b8c6");
        String sealed = (String) gateway.value("SELECT encode(keys_enc, 'hex') FROM bot_providers WHERE bot_id = 'support' "
                + "AND tenant_id = (SELECT tenant_id FROM api_keys WHERE prefix = $1)", prefix(key));
        assertThat(sealed).isNotNull();

        // and the key is in no row, response, audit entry or log line in plaintext
        assertThat(gateway.rowsContaining(CANARY)).isEmpty();
        assertThat(put.encode() + got.encode() + again.encode()).doesNotContain(CANARY);
        logs.assertNoneContains(CANARY);

        // when they are removed, the bot uses the operator's again
        assertThat(client.call("DELETE", "/api/v1/bots/support/providers", key, null).statusCode()).isEqualTo(204);
        assertThat(json(client.call("GET", "/api/v1/bots/support/providers", key, null)).getString("source")).isEqualTo("operator");
        assertThat(client.call("DELETE", "/api/v1/bots/support/providers", key, null).statusCode()).isEqualTo(404);
    }

    @Test
    void badProvidersAreRefusedNamingTheFieldAndNothingChanges() throws Exception {
        String key = tenant();
        ok(client.call("PUT", "/api/v1/bots/support/providers", key, providers()));
        Map<String, JsonObject> cases = new java.util.LinkedHashMap<>();
        cases.put("providers", new JsonObject().put("roles", new JsonObject()));
        cases.put("providers.x.type", one(new JsonObject().put("type", "gemini").put("baseUrl", "https://a.example/v1").put("model", "m")));
        cases.put("providers.x.baseUrl", one(new JsonObject().put("type", "openai").put("baseUrl", "ftp://a.example").put("model", "m")));
        cases.put("credentials", one(new JsonObject().put("type", "openai").put("baseUrl", "https://u:p@a.example/v1").put("model", "m")));
        cases.put("providers.x.model", one(new JsonObject().put("type", "openai").put("baseUrl", "https://a.example/v1")));
        cases.put("providers.x.timeoutMs", one(new JsonObject().put("type", "openai").put("baseUrl", "https://a.example/v1")
                .put("model", "m").put("timeoutMs", 5)));
        cases.put("providers.x.price.output", one(new JsonObject().put("type", "openai").put("baseUrl", "https://a.example/v1")
                .put("model", "m").put("price", new JsonObject().put("input", 1))));
        cases.put("providers.x.colour", one(new JsonObject().put("type", "openai").put("baseUrl", "https://a.example/v1")
                .put("model", "m").put("colour", "red")));
        cases.put("roles.default", providers().put("roles", new JsonObject().put("default", new JsonArray().add("nobody"))));
        cases.put("'roles' must include 'default'", providers().put("roles", new JsonObject().put("fast", new JsonArray().add("backup"))));
        cases.put("'roles' is required", providers().put("roles", new JsonObject()));
        cases.put("10.1.2.3", one(new JsonObject().put("type", "openai").put("baseUrl", "http://10.1.2.3/v1").put("model", "m")));
        cases.put("169.254.169.254", one(new JsonObject().put("type", "openai").put("baseUrl", "http://169.254.169.254/v1").put("model", "m")));
        cases.put("127.0.0.2", one(new JsonObject().put("type", "openai").put("baseUrl", "http://127.0.0.2:8080/v1").put("model", "m")));
        cases.put("fd00::1", one(new JsonObject().put("type", "openai").put("baseUrl", "http://[fd00::1]/v1").put("model", "m")));
        for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
            HttpResponse<String> refused = client.call("PUT", "/api/v1/bots/support/providers", key, c.getValue());
            assertThat(refused.statusCode()).as(c.getKey() + ": " + refused.body()).isEqualTo(400);
            assertThat(json(refused).getJsonObject("error").getString("message")).as(c.getKey()).contains(c.getKey());
        }
        JsonObject after = json(client.call("GET", "/api/v1/bots/support/providers", key, null));
        assertThat(after.getLong("version")).isEqualTo(1L);
        assertThat(after.getJsonObject("providers").fieldNames()).containsExactlyInAnyOrder("primary", "backup");
        assertThat(client.call("PUT", "/api/v1/bots/nobody/providers", key, providers()).statusCode()).isEqualTo(404);
    }

    @Test
    void aTenantTheOperatorKeepsOffTheClustersModelsSeesThatItsBotHasNone() throws Exception {
        String key = tenant();
        String tenantId = (String) gateway.value("SELECT tenant_id FROM api_keys WHERE prefix = $1", prefix(key));
        HttpResponse<String> bad = client.call("PATCH", "/admin/v1/tenants/" + tenantId, OPERATOR,
                new JsonObject().put("operatorModels", "no"));
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("operatorModels");
        JsonObject patched = json(ok(client.call("PATCH", "/admin/v1/tenants/" + tenantId, OPERATOR,
                new JsonObject().put("operatorModels", false))));
        assertThat(patched.getJsonObject("tenant").getBoolean("operatorModels")).isFalse();
        JsonObject shown = json(client.call("GET", "/api/v1/bots/support/providers", key, null));
        assertThat(shown.getString("source")).isEqualTo("none");
        assertThat(shown.getBoolean("operatorModels")).isFalse();
        ok(client.call("PUT", "/api/v1/bots/support/providers", key, providers()));
        assertThat(json(client.call("GET", "/api/v1/bots/support/providers", key, null)).getString("source")).isEqualTo("bot");
    }

    private static JsonObject one(JsonObject provider) {
        return new JsonObject().put("providers", new JsonObject().put("x", provider));
    }

    /** The public prefix of an API key, as api_keys stores it. */
    private String prefix(String key) {
        return (String) gateway.value("SELECT prefix FROM api_keys WHERE $1 LIKE prefix || '%' ORDER BY length(prefix) DESC LIMIT 1", key);
    }
}
