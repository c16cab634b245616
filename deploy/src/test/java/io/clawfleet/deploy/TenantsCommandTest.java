package io.clawfleet.deploy;

import io.clawfleet.deploy.CliRunner.Run;
import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
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

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet tenants create|list|show|suspend|resume|delete} against a real gateway (issue 13). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantsCommandTest {

    private static final String OPERATOR = "cli-operator-key-0123456789abcdef";

    private NodeRuntime node;
    private String url;
    private CliRunner cli;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("operatorKey", OPERATOR)), db, List.of(GatewayRole::new));
        url = "http://127.0.0.1:" + node.httpPort();
        cli = new CliRunner(url, "--operator-key");
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
    }

    private Run tenants(String key, String... args) {
        return cli.run("tenants", key, args);
    }

    private int status(String key) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "/api/v1/settings"))
                .header("authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    @Test
    void theOperatorCreatesListsShowsSuspendsAndResumesATenant() throws Exception {
        Run created = tenants(OPERATOR, "create", "--id", "cli-acme", "--name", "Acme from the CLI");
        assertThat(created.exit()).as(created.err()).isZero();
        String key = new JsonObject(created.out()).getJsonObject("apiKey").getString("key");
        assertThat(status(key)).isEqualTo(200);
        assertThat(tenants(OPERATOR, "list", "--limit", "10").out()).contains("cli-acme");
        assertThat(tenants(OPERATOR, "show", "cli-acme").out()).contains("Acme from the CLI").doesNotContain(key);
        Run suspended = tenants(OPERATOR, "suspend", "cli-acme");
        assertThat(suspended.exit()).isZero();
        assertThat(new JsonObject(suspended.out()).getJsonObject("tenant").getString("status")).isEqualTo("suspended");
        Run resumed = tenants(OPERATOR, "resume", "cli-acme");
        assertThat(new JsonObject(resumed.out()).getJsonObject("tenant").getString("status")).isEqualTo("active");
    }

    @Test
    void theOperatorMakesListsRotatesAndRevokesATenantsKeys() throws Exception {
        assertThat(tenants(OPERATOR, "create", "--id", "cli-keys", "--name", "Keys").exit()).isZero();
        Run made = cli.run("keys", OPERATOR, "create", "--tenant", "cli-keys", "--name", "dashboard", "--scope", "read",
                "--messages-per-minute", "60");
        assertThat(made.exit()).as(made.err()).isZero();
        JsonObject key = new JsonObject(made.out()).getJsonObject("key");
        assertThat(key.getInteger("messagesPerMinute")).isEqualTo(60);
        assertThat(status(key.getString("key"))).isEqualTo(200);
        assertThat(cli.run("keys", OPERATOR, "list", "--tenant", "cli-keys").out()).contains(key.getString("id"))
                .doesNotContain(key.getString("key"));
        Run rotated = cli.run("keys", OPERATOR, "rotate", "--tenant", "cli-keys", key.getString("id"));
        assertThat(rotated.exit()).as(rotated.err()).isZero();
        String fresh = new JsonObject(rotated.out()).getJsonObject("key").getString("key");
        assertThat(status(key.getString("key"))).isEqualTo(401);
        assertThat(status(fresh)).isEqualTo(200);
        String freshId = new JsonObject(rotated.out()).getJsonObject("key").getString("id");
        assertThat(cli.run("keys", OPERATOR, "revoke", "--tenant", "cli-keys", freshId).exit()).isZero();
        assertThat(status(fresh)).isEqualTo(401);
        Run bad = cli.run("keys", OPERATOR, "create", "--tenant", "cli-keys", "--name", "x", "--scope", "root");
        assertThat(bad.exit()).isEqualTo(1);
        assertThat(bad.err()).contains("400").contains("scopes");
    }

    @Test
    void aWrongKeyOrAnUnknownTenantFailsWithTheGatewaysAnswer() {
        Run wrong = tenants("not-the-operator-key-0123456789", "list");
        assertThat(wrong.exit()).isEqualTo(1);
        assertThat(wrong.err()).contains("401").contains("invalid operator key");
        Run missing = tenants(OPERATOR, "show", "nobody");
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).contains("404");
    }

    @Test
    void deleteWithWaitFollowsTheDeletionUntilDone() throws Exception {
        // given a tenant and its working key
        Run created = tenants(OPERATOR, "create", "--id", "cli-gone", "--name", "Gone soon");
        String key = new JsonObject(created.out()).getJsonObject("apiKey").getString("key");
        assertThat(status(key)).isEqualTo(200);

        // when the operator deletes it and waits
        Run deleted = tenants(OPERATOR, "delete", "cli-gone", "--wait", "--timeout", "30");

        // then the deletion is printed done, the key is refused, and deleting again prints the same deletion
        assertThat(deleted.exit()).as(deleted.err()).isZero();
        JsonObject deletion = new JsonObject(deleted.out()).getJsonObject("deletion");
        assertThat(deletion.getString("state")).isEqualTo("done");
        assertThat(deletion.getJsonObject("counts").getLong("api_keys")).isEqualTo(1L);
        assertThat(deletion.getJsonObject("counts").getLong("tenants")).isEqualTo(1L);
        assertThat(status(key)).isEqualTo(401);
        Run again = tenants(OPERATOR, "delete", "cli-gone");
        assertThat(again.exit()).isZero();
        assertThat(new JsonObject(again.out()).getJsonObject("deletion").getLong("id")).isEqualTo(deletion.getLong("id"));
        assertThat(tenants(OPERATOR, "delete", "nobody").err()).contains("404");
    }
}
