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

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet bots list|create|show|delete|providers} against a real gateway, with a tenant key. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BotsCommandTest {

    private static final String KEY = "cli-bots-key-0123456789abcdef";
    private static final String PROVIDER_KEY = "sk-cli-provider-key-0123456789";

    private NodeRuntime node;
    private CliRunner cli;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "egress.allowedHosts", "127.0.0.1")), db,
                List.of(GatewayRole::new));
        cli = new CliRunner("http://127.0.0.1:" + node.httpPort(), "--api-key");
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
    }

    private Run bots(String... args) {
        return cli.run("bots", KEY, args);
    }

    @Test
    void aTenantMakesListsShowsAndDeletesBots() {
        Run made = bots("create", "support", "--name", "Support desk");
        assertThat(made.exit()).as(made.err()).isZero();
        assertThat(new JsonObject(made.out()).getJsonObject("bot").getString("name")).isEqualTo("Support desk");
        assertThat(bots("list").out()).contains("\"main\"").contains("\"support\"");
        assertThat(bots("show", "support").out()).contains("Support desk");
        Run taken = bots("create", "support");
        assertThat(taken.exit()).isEqualTo(1);
        assertThat(taken.err()).contains("409");
        Run deleted = bots("delete", "support");
        assertThat(deleted.exit()).as(deleted.err()).isZero();
        assertThat(new JsonObject(deleted.out()).getJsonObject("deletion").getString("botId")).isEqualTo("support");
        assertThat(bots("delete", "main").err()).contains("409");
    }

    @Test
    void aBotsProvidersAreSetFromAFileShownWithHintsAndRemoved(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path file = dir.resolve("providers.json");
        Files.writeString(file, new JsonObject().put("providers", new JsonObject().put("own", new JsonObject()
                .put("type", "openai").put("baseUrl", "http://127.0.0.1:9/v1").put("model", "gpt-4o-mini")
                .put("apiKey", PROVIDER_KEY))).encodePrettily());

        Run set = bots("providers", "main", "--set", file.toString());
        assertThat(set.exit()).as(set.err()).isZero();
        assertThat(set.out()).contains("\"source\" : \"bot\"").contains("sk-…6789").doesNotContain(PROVIDER_KEY);
        assertThat(bots("providers", "main").out()).contains("gpt-4o-mini").doesNotContain(PROVIDER_KEY);
        assertThat(bots("providers", "main", "--remove").exit()).isZero();
        assertThat(bots("providers", "main").out()).contains("\"source\" : \"operator\"");

        Files.writeString(file, "not json");
        Run bad = bots("providers", "main", "--set", file.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("is not a JSON object");
        Files.writeString(file, "{\"providers\": {}}");
        Run refused = bots("providers", "main", "--set", file.toString());
        assertThat(refused.exit()).isEqualTo(1);
        assertThat(refused.err()).contains("400").contains("providers");
    }
}
