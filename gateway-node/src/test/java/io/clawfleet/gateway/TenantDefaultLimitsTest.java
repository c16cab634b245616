package io.clawfleet.gateway;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code limits.tenantDefaults}: the limits a tenant the operator creates gets where its request sets none. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantDefaultLimitsTest {

    private static final String OPERATOR = "operator-defaults-key-0123456789";
    private TestGateway gateway;

    @BeforeAll
    void start() {
        gateway = TestGateway.start(Map.of("nodeId", "gw-defaults", "operatorKey", OPERATOR,
                "limits.tenantDefaults", "{\"messagesPerMinute\": 600, \"concurrentTurns\": 8, \"tokensPerDay\": 2000000}"));
    }

    @AfterAll
    void stop() {
        gateway.stop();
    }

    private JsonObject create(String id, JsonObject limits) throws Exception {
        JsonObject body = new JsonObject().put("id", id).put("name", id);
        if (limits != null) {
            body.put("limits", limits);
        }
        HttpResponse<String> created = gateway.client().call("POST", "/admin/v1/tenants", OPERATOR, body);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body()).getJsonObject("tenant").getJsonObject("limits");
    }

    @Test
    void aNewTenantGetsTheOperatorsDefaultsAndWhatItsRequestSetsWins() throws Exception {
        // a tenant created without limits has the defaults, stored with it
        assertThat(create("plain", null)).isEqualTo(new JsonObject()
                .put("messagesPerMinute", 600).put("concurrentTurns", 8).put("tokensPerDay", 2_000_000));
        assertThat(gateway.value("SELECT limits ->> 'concurrentTurns' FROM tenants WHERE id = 'plain'")).isEqualTo("8");
        // what a request sets wins, a null leaves that limit unset, and the others still come from the defaults
        assertThat(create("custom", new JsonObject().put("messagesPerMinute", 60).putNull("concurrentTurns").put("bots", 3)))
                .isEqualTo(new JsonObject().put("messagesPerMinute", 60).put("tokensPerDay", 2_000_000).put("bots", 3));
        // a later change of one tenant's limits is the operator's PATCH, as always
        HttpResponse<String> patched = gateway.client().call("PATCH", "/admin/v1/tenants/plain", OPERATOR,
                new JsonObject().put("limits", new JsonObject().put("concurrentTurns", 2)));
        assertThat(patched.statusCode()).as(patched.body()).isEqualTo(200);
        assertThat(new JsonObject(patched.body()).getJsonObject("tenant").getJsonObject("limits").getInteger("concurrentTurns"))
                .isEqualTo(2);
    }
}
