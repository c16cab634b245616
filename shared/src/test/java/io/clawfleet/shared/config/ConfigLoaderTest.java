package io.clawfleet.shared.config;

import io.clawfleet.shared.config.ClawfleetConfig.Role;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConfigLoaderTest {

    @TempDir
    Path dir;

    @Test
    void defaultsAreUsableWithoutAnyInput() {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), Map.of());
        assertThat(config.http().port()).isEqualTo(8080);
        assertThat(config.http().maxBodyBytes()).isEqualTo(1_048_576);
        assertThat(config.partitions()).isEqualTo(128);
        assertThat(config.roles()).containsExactlyInAnyOrder(Role.values());
        assertThat(config.security().allowShell()).isFalse();
        assertThat(config.llm().configured()).isFalse();
    }

    @Test
    void environmentOverridesTheFile() throws IOException {
        // given a file and an env var for the same key / when loaded / then the env var wins
        Path file = write("http:\n  port: 9000\ncluster:\n  members: [10.0.0.1, 10.0.0.2:5702]\n");
        ClawfleetConfig config = ConfigLoader.load(file, Map.of("CLAWFLEET_HTTP_PORT", "9100"), Map.of());
        assertThat(config.http().port()).isEqualTo(9100);
        assertThat(config.cluster().members()).containsExactly("10.0.0.1", "10.0.0.2:5702");
    }

    @Test
    void commandLineOverridesTheEnvironment() {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of("CLAWFLEET_ROLES", "gateway"), Map.of("roles", "worker,sandbox"));
        assertThat(config.roles()).containsExactlyInAnyOrder(Role.WORKER, Role.SANDBOX);
    }

    @Test
    void documentedEnvironmentNamesMapToKeys() {
        Map<String, String> env = Map.of(
                "CLAWFLEET_DB_URL", "postgresql://u:p%40ss@db.example:6543/claw",
                "CLAWFLEET_CLUSTER_MEMBERS", "a:5701, b:5701",
                "CLAWFLEET_LLM_BASE_URL", "http://127.0.0.1:9999/v1",
                "CLAWFLEET_LLM_API_KEY", "sk-test",
                "CLAWFLEET_ADMIN_BOOTSTRAP_KEY", "boot",
                "CLAWFLEET_ALLOW_SHELL", "true",
                "CLAWFLEET_ALLOWED_SHELL_COMMANDS", "ls,cat",
                "CLAWFLEET_API_KEY", "0123456789abcdef0123");
        ClawfleetConfig config = ConfigLoader.load(null, env, Map.of());
        assertThat(config.db().url()).isEqualTo("postgresql://u:p%40ss@db.example:6543/claw");
        assertThat(config.cluster().members()).containsExactly("a:5701", "b:5701");
        assertThat(config.llm().baseUrl()).isEqualTo("http://127.0.0.1:9999/v1");
        assertThat(config.llm().apiKey()).isEqualTo("sk-test");
        assertThat(config.security().adminBootstrapKey()).isEqualTo("boot");
        assertThat(config.security().allowShell()).isTrue();
        assertThat(config.security().allowedShellCommands()).containsExactly("ls", "cat");
        assertThat(config.apiKey()).isEqualTo("0123456789abcdef0123");
    }

    @Test
    void everyProblemNamesItsKeyAndExpectedForm() {
        // given several bad values / when loaded / then one error lists each with key, env name and expectation
        Map<String, String> env = Map.of(
                "CLAWFLEET_HTTP_PORT", "eighty",
                "CLAWFLEET_PARTITIONS", "0",
                "CLAWFLEET_DB_URL", "mysql://x",
                "CLAWFLEET_ROLES", "gateway,brain");
        assertThatThrownBy(() -> ConfigLoader.load(null, env, Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactlyInAnyOrder(
                        "http.port (CLAWFLEET_HTTP_PORT): expected an integer from 0 to 65535, got 'eighty' (from env CLAWFLEET_HTTP_PORT)",
                        "partitions (CLAWFLEET_PARTITIONS): expected an integer from 1 to 65536, got '0' (from env CLAWFLEET_PARTITIONS)",
                        "db.url (CLAWFLEET_DB_URL): expected postgresql://user:password@host:port/database, the URL must start with postgresql://",
                        "roles (CLAWFLEET_ROLES): expected a comma list of gateway, worker, sandbox, scheduler, got 'brain'"));
    }

    @Test
    void anUnknownFileKeyIsReportedAsATypo() throws IOException {
        Path file = write("htp:\n  port: 80\n");
        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of(), Map.of()))
                .hasMessageContaining("unknown configuration key 'htp.port'");
    }

    @Test
    void leaseRenewalMustFitTwiceInTheTtl() {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_LEASE_TTL_MS", "1000",
                "CLAWFLEET_LEASE_RENEW_INTERVAL_MS", "800"), Map.of()))
                .hasMessageContaining("lease.renewIntervalMs");
    }

    @Test
    void aMissingFileIsAClearError() {
        assertThatThrownBy(() -> ConfigLoader.load(dir.resolve("nope.yaml"), Map.of(), Map.of()))
                .hasMessageContaining("does not exist");
    }

    @Test
    void envNamesFollowTheKey() {
        assertThat(ConfigReader.envName("http.maxBodyBytes")).isEqualTo("CLAWFLEET_HTTP_MAX_BODY_BYTES");
        assertThat(ConfigReader.envName("llm.baseUrl")).isEqualTo("CLAWFLEET_LLM_BASE_URL");
        assertThat(ConfigReader.envName("adminBootstrapKey")).isEqualTo("CLAWFLEET_ADMIN_BOOTSTRAP_KEY");
    }

    @Test
    void everyKeyIsDocumented() throws IOException {
        // given docs/CONFIGURATION.md / when every known key is looked up / then each is there with its env name
        Path docs = Path.of("..", "docs", "CONFIGURATION.md");
        String text = Files.readString(docs);
        for (String key : ConfigLoader.knownKeys()) {
            assertThat(text).as("docs/CONFIGURATION.md documents " + key).contains("`" + key + "`");
            assertThat(text).as("docs/CONFIGURATION.md documents " + ConfigReader.envName(key)).contains(ConfigReader.envName(key));
        }
    }

    private Path write(String yaml) throws IOException {
        Path file = dir.resolve("clawfleet.yaml");
        Files.writeString(file, yaml);
        return file;
    }
}
