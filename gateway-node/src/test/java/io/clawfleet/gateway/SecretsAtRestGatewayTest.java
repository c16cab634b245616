package io.clawfleet.gateway;

import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.testing.TestSecrets;
import io.clawfleet.testkit.EchoWorker;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Bot tokens at rest on a running gateway (issue 14): sealed in the database, a hint in the API, never in a
 * log; tokens left in plaintext sealed at start; a gateway without the right master key does not start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretsAtRestGatewayTest {

    private static final String KEY = "secrets-key-0123456789";
    /** The secret part of the fake Telegram's token: the canary. */
    private static final String CANARY = FakeTelegram.TOKEN.substring(FakeTelegram.TOKEN.indexOf(':') + 1);
    private static final String LEGACY_TOKEN = "777:legacy-plaintext-token-XYZW";

    private CapturedLogs logs;
    private TestGateway gateway;
    private FakeTelegram telegram;

    @BeforeAll
    void start() {
        logs = CapturedLogs.attach();
        gateway = TestGateway.on(TestDatabases.freshMigrated(16));
        telegram = new FakeTelegram(gateway.vertx());
        // a bot registered before this version, its token in plaintext
        result(gateway.pool().query("INSERT INTO tenants (id, name) VALUES ('legacy', 'Legacy')").execute());
        result(gateway.pool().preparedQuery("""
                        INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url, enabled)
                        VALUES ('legacy', 'telegram', 'legacy_bot', $1, 'legacy-hash', 'http://127.0.0.1:9', false)""")
                .execute(Tuple.of(LEGACY_TOKEN)));
        gateway.startNode(Map.of("apiKey", KEY, "nodeId", "gw-secrets", "egress.allowedHosts", "127.0.0.1"));
        new EchoWorker(gateway.node().vertx(), gateway.pool(), 16);
    }

    @AfterAll
    void stop() {
        logs.detach();
        gateway.stop();
    }

    @Test
    void aTokenLeftInPlaintextIsSealedWhenTheGatewayStarts() {
        Row row = result(gateway.pool().query("SELECT token, token_enc, token_hint FROM channel_bots WHERE tenant_id = 'legacy'")
                .execute()).iterator().next();
        assertThat(row.getString("token")).isNull();
        assertThat(row.getBuffer("token_enc")).isNotNull();
        assertThat(row.getString("token_hint")).isEqualTo("777:…XYZW");
        assertThat(gateway.rowsContaining("legacy-plaintext-token")).isEmpty();
    }

    @Test
    void aRegisteredTokenWorksIsShownAsAHintAndIsNeitherStoredNorLoggedInClear() throws Exception {
        // when a tenant registers a bot and a chat talks to it
        HttpResponse<String> registered = call("POST", "/api/v1/channels/telegram",
                new JsonObject().put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).isEqualTo(201);
        telegram.userSays(5005, "hello");
        Await.until("the reply", Duration.ofSeconds(20), () -> !telegram.sentTo(5005).isEmpty());
        HttpResponse<String> list = call("GET", "/api/v1/channels", null);

        // then the API shows a hint, never the token
        assertThat(new JsonObject(registered.body()).getString("tokenHint")).isEqualTo("123456:…GHIJ");
        assertThat(new JsonObject(list.body()).getJsonArray("channels").getJsonObject(0).getString("tokenHint"))
                .isEqualTo("123456:…GHIJ");
        assertThat(registered.body() + list.body()).doesNotContain(CANARY);
        // and no row of any table, and no line of the node's log, holds it
        assertThat(gateway.rowsContaining(CANARY)).isEmpty();
        assertThat(logs.lines()).isNotEmpty();
        logs.assertNoneContains(CANARY);
    }

    @Test
    void aGatewayWithoutAMasterKeyDoesNotStartOnEncryptedSecretsAndSaysWhatToSet() {
        var config = TestNodes.config("gateway", Map.of("nodeId", "gw-nokey", "masterKey", ""));
        assertThat(config.security().masterKeys().isEmpty()).isTrue();
        assertThatThrownBy(() -> TestNodes.start(config, gateway.db(), List.of(GatewayRole::new)))
                .hasStackTraceContaining("no master key is configured").hasStackTraceContaining("CLAWFLEET_MASTER_KEY");
    }

    @Test
    void aGatewayWithAnotherMasterKeyDoesNotStartAndNamesTheKeyItNeeds() {
        String before = bots();
        var config = TestNodes.config("gateway", Map.of("nodeId", "gw-wrongkey", "masterKey", MasterKeys.generate()));
        assertThatThrownBy(() -> TestNodes.start(config, gateway.db(), List.of(GatewayRole::new)))
                .hasStackTraceContaining(TestSecrets.masterKeys().current().id()).hasStackTraceContaining("does not have");
        assertThat(bots()).isEqualTo(before);
    }

    private String bots() {
        List<String> rows = new ArrayList<>();
        result(gateway.pool().query("SELECT b::text FROM channel_bots b ORDER BY id").execute()).forEach(r -> rows.add(r.getString(0)));
        result(gateway.pool().query("SELECT k::text FROM tenant_data_keys k ORDER BY 1").execute()).forEach(r -> rows.add(r.getString(0)));
        return String.join("\n", rows);
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return gateway.client().call(method, path, KEY, body);
    }
}
