package io.clawfleet.gateway;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.testing.TestSecrets;
import io.clawfleet.testkit.EchoWorker;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
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

    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Vertx vertx;
    private FakeTelegram telegram;
    private DbUrl db;
    private Database database;
    private NodeRuntime node;
    private String base;

    @BeforeAll
    void start() {
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        vertx = Vertx.vertx();
        telegram = new FakeTelegram(vertx);
        db = TestDatabases.freshMigrated(16);
        database = Database.connect(vertx, db, 2, 5_000);
        // a bot registered before this version, its token in plaintext
        result(database.pool().query("INSERT INTO tenants (id, name) VALUES ('legacy', 'Legacy')").execute());
        result(database.pool().preparedQuery("""
                        INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url, enabled)
                        VALUES ('legacy', 'telegram', 'legacy_bot', $1, 'legacy-hash', 'http://127.0.0.1:9', false)""")
                .execute(Tuple.of(LEGACY_TOKEN)));
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw-secrets",
                "egress.allowedHosts", "127.0.0.1")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        new EchoWorker(node.vertx(), database.pool(), 16);
    }

    @AfterAll
    void stop() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(vertx.close());
    }

    @Test
    void aTokenLeftInPlaintextIsSealedWhenTheGatewayStarts() {
        Row row = result(database.pool().query("SELECT token, token_enc, token_hint FROM channel_bots WHERE tenant_id = 'legacy'")
                .execute()).iterator().next();
        assertThat(row.getString("token")).isNull();
        assertThat(row.getBuffer("token_enc")).isNotNull();
        assertThat(row.getString("token_hint")).isEqualTo("777:…XYZW");
        assertThat(rowsContaining("legacy-plaintext-token")).isEmpty();
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
        assertThat(rowsContaining(CANARY)).isEmpty();
        assertThat(logs.list).isNotEmpty();
        assertThat(logs.list).noneSatisfy(event -> assertThat(event.getFormattedMessage()
                + (event.getThrowableProxy() == null ? "" : ThrowableProxyUtil.asString(event.getThrowableProxy()))).contains(CANARY));
    }

    @Test
    void aGatewayWithoutAMasterKeyDoesNotStartOnEncryptedSecretsAndSaysWhatToSet() {
        var config = TestNodes.config("gateway", Map.of("nodeId", "gw-nokey", "masterKey", ""));
        assertThat(config.security().masterKeys().isEmpty()).isTrue();
        assertThatThrownBy(() -> TestNodes.start(config, db, List.of(GatewayRole::new)))
                .hasStackTraceContaining("no master key is configured").hasStackTraceContaining("CLAWFLEET_MASTER_KEY");
    }

    @Test
    void aGatewayWithAnotherMasterKeyDoesNotStartAndNamesTheKeyItNeeds() {
        String before = bots();
        var config = TestNodes.config("gateway", Map.of("nodeId", "gw-wrongkey", "masterKey", MasterKeys.generate()));
        assertThatThrownBy(() -> TestNodes.start(config, db, List.of(GatewayRole::new)))
                .hasStackTraceContaining(TestSecrets.masterKeys().current().id()).hasStackTraceContaining("does not have");
        assertThat(bots()).isEqualTo(before);
    }

    private String bots() {
        List<String> rows = new ArrayList<>();
        result(database.pool().query("SELECT b::text FROM channel_bots b ORDER BY id").execute()).forEach(r -> rows.add(r.getString(0)));
        result(database.pool().query("SELECT k::text FROM tenant_data_keys k ORDER BY 1").execute()).forEach(r -> rows.add(r.getString(0)));
        return String.join("\n", rows);
    }

    /** Rows of any table whose text form holds the value, as text or as hex bytes. */
    private List<String> rowsContaining(String value) {
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

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("authorization", "Bearer " + KEY)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }
}
