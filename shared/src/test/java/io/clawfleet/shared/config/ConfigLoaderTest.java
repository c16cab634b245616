package io.clawfleet.shared.config;

import io.clawfleet.shared.config.ClawfleetConfig.Llm;
import io.clawfleet.shared.config.ClawfleetConfig.ModelProvider;
import io.clawfleet.shared.config.ClawfleetConfig.ProviderType;
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
    void theAgentsLimitsDefaultToTheSeeds() {
        // seed 000 §6.2 and §12.10: 8 model calls with tools per turn, tool output cut at 50,000 characters
        ClawfleetConfig.Agent agent = ConfigLoader.load(null, Map.of(), Map.of()).agent();
        assertThat(agent.maxToolIterations()).isEqualTo(8);
        assertThat(agent.maxToolOutputChars()).isEqualTo(50_000);
        assertThat(agent.autonomy()).isEqualTo("supervised");
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
    void theOperatorsDefaultLimitsOfNewTenantsAreCheckedLikeATenantsLimits() {
        assertThat(ConfigLoader.load(null, Map.of(), Map.of()).limits().tenantDefaults()).isEmpty();
        ClawfleetConfig config = ConfigLoader.load(null,
                Map.of("CLAWFLEET_LIMITS_TENANT_DEFAULTS", "{\"messagesPerMinute\": 600, \"concurrentTurns\": 8}"), Map.of());
        assertThat(config.limits().tenantDefaults().getInteger("messagesPerMinute")).isEqualTo(600);
        assertThat(config.limits().tenantDefaults().getInteger("concurrentTurns")).isEqualTo(8);
        for (String bad : List.of("{\"robots\": 1}", "{\"bots\": -1}", "600")) {
            assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_LIMITS_TENANT_DEFAULTS", bad), Map.of()))
                    .as(bad).isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                            .contains("limits.tenantDefaults"));
        }
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
    void retentionDaysMayBeFractionsAndTranscriptsAreKeptUnlessSet() {
        ClawfleetConfig defaults = ConfigLoader.load(null, Map.of(), Map.of());
        assertThat(defaults.retention().inboxDays()).isEqualTo(7);
        assertThat(defaults.retention().transcriptDays()).isZero();
        ClawfleetConfig brief = ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_INBOX_DAYS", "0.25",
                "CLAWFLEET_RETENTION_TRANSCRIPT_DAYS", "0.01"), Map.of());
        assertThat(brief.retention().inboxDays()).isEqualTo(0.25);
        assertThat(brief.retention().transcriptDays()).isEqualTo(0.01);
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_TRANSCRIPT_DAYS", "0.0001"), Map.of()))
                .hasMessageContaining("retention.transcriptDays").hasMessageContaining("a number from 0.0007 to 3650, or 0");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_INBOX_DAYS", "0"), Map.of()))
                .hasMessageContaining("retention.inboxDays").hasMessageContaining("a number from 0.0007 to 3650");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_USAGE_DAYS", "30.5"), Map.of()))
                .hasMessageContaining("retention.usageDays");
        assertThat(defaults.retention().usageDetailDays()).isEqualTo(35);
        assertThat(ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_USAGE_DETAIL_DAYS", "0.5"), Map.of())
                .retention().usageDetailDays()).isEqualTo(0.5);
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_RETENTION_USAGE_DAYS", "40",
                "CLAWFLEET_RETENTION_USAGE_DETAIL_DAYS", "41"), Map.of()))
                .hasMessageContaining("retention.usageDetailDays").hasMessageContaining("at most retention.usageDays (40.0)");
    }

    @Test
    void leaseRenewalMustFitTwiceInTheTtl() {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_LEASE_TTL_MS", "1000",
                "CLAWFLEET_LEASE_RENEW_INTERVAL_MS", "800"), Map.of()))
                .hasMessageContaining("lease.renewIntervalMs");
    }

    @Test
    void theManagementListenerIsOffByDefaultOnLoopbackWhenOnAndNeverOnTheApiPort() {
        ClawfleetConfig defaults = ConfigLoader.load(null, Map.of(), Map.of());
        assertThat(defaults.http().managementPort()).isZero();
        assertThat(defaults.http().managementHost()).isEqualTo("127.0.0.1");
        assertThat(defaults.security().metricsKey()).isNull();
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_HTTP_PORT", "9400",
                "CLAWFLEET_HTTP_MANAGEMENT_PORT", "9400", "CLAWFLEET_METRICS_KEY", "short"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("http.management.port (CLAWFLEET_HTTP_MANAGEMENT_PORT): must differ from http.port (9400)")
                        .contains("metricsKey (CLAWFLEET_METRICS_KEY): expected at least 24 characters"));
        ClawfleetConfig keyed = ConfigLoader.load(null, Map.of("CLAWFLEET_METRICS_KEY", "metrics-key-0123456789abcdef"), Map.of());
        assertThat(keyed.security().toString()).contains("metricsKey=[redacted]").doesNotContain("0123456789abcdef");
    }

    @Test
    void thePublicUrlIsOptionalLosesItsTrailingSlashAndMustBeAnHttpUrl() {
        assertThat(ConfigLoader.load(null, Map.of(), Map.of()).http().publicUrl()).isNull();
        assertThat(ConfigLoader.load(null, Map.of("CLAWFLEET_HTTP_PUBLIC_URL", "https://bots.example.com/"), Map.of()).http().publicUrl())
                .isEqualTo("https://bots.example.com");
        assertThat(ConfigLoader.load(null, Map.of("CLAWFLEET_HTTP_PUBLIC_URL", "https://example.com:8443/clawfleet"), Map.of())
                .http().publicUrl()).isEqualTo("https://example.com:8443/clawfleet");
        for (String wrong : List.of("bots.example.com", "ftp://bots.example.com", "https://bots.example.com/?x=1", "https://")) {
            assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_HTTP_PUBLIC_URL", wrong), Map.of()))
                    .as(wrong).isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                            .contains("http.publicUrl (CLAWFLEET_HTTP_PUBLIC_URL): expected the https:// URL"));
        }
    }

    @Test
    void aMissingFileIsAClearError() {
        assertThatThrownBy(() -> ConfigLoader.load(dir.resolve("nope.yaml"), Map.of(), Map.of()))
                .hasMessageContaining("does not exist");
    }

    @Test
    void sandboxDefaultsAreSafe() {
        ClawfleetConfig.Sandbox sandbox = ConfigLoader.load(null, Map.of(), Map.of()).sandbox();
        assertThat(sandbox.isolation()).isEqualTo("auto");
        assertThat(sandbox.maxConcurrentWorkers()).isEqualTo(4);
        assertThat(sandbox.allowedEnv()).isEmpty();
        assertThat(sandbox.egress("shell")).isFalse();
        assertThat(sandbox.web().allowedPorts()).containsExactly(80, 443);
        assertThat(sandbox.web().allowedPrivateRanges()).isEmpty();
        assertThat(sandbox.web().braveApiKeyEnv()).isEqualTo("BRAVE_API_KEY");
    }

    @Test
    void aWorkerWaitsForTheLongestRunTheSandboxAllows() {
        // given the defaults / then a worker's wait for a tool covers the longest sandbox run and its wait for a slot
        ClawfleetConfig defaults = ConfigLoader.load(null, Map.of(), Map.of("roles", "worker"));
        assertThat(defaults.agent().toolTimeoutMs())
                .isGreaterThanOrEqualTo(defaults.sandbox().maxTimeoutMs() + defaults.sandbox().queueTimeoutMs());
        assertThat(defaults.sandbox().skillTimeoutMs()).isEqualTo(30_000);
        // when a worker would let the sandbox run longer than it waits / then it is told which keys to change
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of(), Map.of("roles", "worker", "sandbox.maxTimeoutMs", "300000")))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("agent.toolTimeoutMs (CLAWFLEET_AGENT_TOOL_TIMEOUT_MS): expected at least sandbox.maxTimeoutMs "
                                + "+ sandbox.queueTimeoutMs (310000 ms)"));
        // while a sandbox-only node, which waits for no tool, may allow long runs
        assertThat(ConfigLoader.load(null, Map.of(), Map.of("roles", "sandbox", "sandbox.maxTimeoutMs", "300000"))
                .sandbox().maxTimeoutMs()).isEqualTo(300_000);
    }

    @Test
    void warmMcpSessionsAreBoundedByDefaultAndTunableByFileOrEnvironment() throws IOException {
        // given nothing / then sessions idle out after 5 minutes, live an hour at most, 32 per node
        ClawfleetConfig.Sandbox defaults = ConfigLoader.load(null, Map.of(), Map.of()).sandbox();
        assertThat(defaults.mcpSessionIdleMs()).isEqualTo(300_000);
        assertThat(defaults.mcpSessionMaxLifeMs()).isEqualTo(3_600_000);
        assertThat(defaults.mcpMaxSessions()).isEqualTo(32);
        // when a file sets them and the environment overrides one / then the environment wins, 0 turns sessions off
        Path file = write("""
                sandbox:
                  mcpSessionIdleMs: 1500
                  mcpMaxSessions: 8
                """);
        ClawfleetConfig.Sandbox set = ConfigLoader.load(file, Map.of("CLAWFLEET_SANDBOX_MCP_MAX_SESSIONS", "0",
                "CLAWFLEET_SANDBOX_MCP_SESSION_MAX_LIFE_MS", "60000"), Map.of()).sandbox();
        assertThat(set.mcpSessionIdleMs()).isEqualTo(1_500);
        assertThat(set.mcpSessionMaxLifeMs()).isEqualTo(60_000);
        assertThat(set.mcpMaxSessions()).isZero();
        // when they are out of range / then each is named with its variable
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_SANDBOX_MCP_SESSION_IDLE_MS", "5",
                "CLAWFLEET_SANDBOX_MCP_SESSION_MAX_LIFE_MS", "soon", "CLAWFLEET_SANDBOX_MCP_MAX_SESSIONS", "-1"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("sandbox.mcpSessionIdleMs (CLAWFLEET_SANDBOX_MCP_SESSION_IDLE_MS): expected an integer from 100")
                        .contains("sandbox.mcpSessionMaxLifeMs (CLAWFLEET_SANDBOX_MCP_SESSION_MAX_LIFE_MS): expected an integer from 1000")
                        .contains("sandbox.mcpMaxSessions (CLAWFLEET_SANDBOX_MCP_MAX_SESSIONS): expected an integer from 0"));
    }

    @Test
    void theRunQuotaAndCgroupSettingsHaveSafeDefaultsAndBadValuesAreNamed() {
        ClawfleetConfig.Sandbox defaults = ConfigLoader.load(null, Map.of(), Map.of()).sandbox();
        assertThat(defaults.maxWorkspaceBytes()).isEqualTo(256L * 1_048_576);
        assertThat(defaults.maxWorkspaceFiles()).isEqualTo(10_000);
        assertThat(defaults.cgroups()).isEqualTo("auto");
        assertThat(defaults.cgroupMemoryBytes()).isEqualTo(2 * defaults.memoryBytes());
        assertThat(defaults.cgroupCpus()).isEqualTo(1.0);
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_SANDBOX_MAX_WORKSPACE_BYTES", "2097152",
                "CLAWFLEET_SANDBOX_MAX_FILE_BYTES", "4194304", "CLAWFLEET_SANDBOX_CGROUPS", "sometimes",
                "CLAWFLEET_SANDBOX_CGROUP_CPUS", "half"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("sandbox.maxWorkspaceBytes (CLAWFLEET_SANDBOX_MAX_WORKSPACE_BYTES): expected at least "
                                + "sandbox.maxFileBytes and sandbox.maxTransferBytes")
                        .contains("sandbox.cgroups (CLAWFLEET_SANDBOX_CGROUPS): expected auto, required or off, got 'sometimes'")
                        .contains("sandbox.cgroupCpus (CLAWFLEET_SANDBOX_CGROUP_CPUS): expected a number of CPUs"));
    }

    @Test
    void badSandboxValuesNameTheirKeys() {
        Map<String, String> env = Map.of(
                "CLAWFLEET_SANDBOX_ISOLATION", "docker",
                "CLAWFLEET_SANDBOX_EGRESS", "shell,everything",
                "CLAWFLEET_SANDBOX_WEB_ALLOWED_PORTS", "443,99999",
                "CLAWFLEET_SANDBOX_WEB_ALLOWED_PRIVATE_RANGES", "127.0.0.1/32,metadata.internal",
                "CLAWFLEET_SANDBOX_ALLOWED_ENV", "GOOD,bad-name");
        assertThatThrownBy(() -> ConfigLoader.load(null, env, Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("sandbox.isolation (CLAWFLEET_SANDBOX_ISOLATION): expected auto, bubblewrap or process")
                        .contains("sandbox.egress (CLAWFLEET_SANDBOX_EGRESS): expected a comma list of shell, skills")
                        .contains("'99999'")
                        .contains("'metadata.internal'")
                        .contains("'bad-name'")
                        .doesNotContain("'127.0.0.1/32'"));
    }

    @Test
    void envNamesFollowTheKey() {
        assertThat(ConfigReader.envName("http.maxBodyBytes")).isEqualTo("CLAWFLEET_HTTP_MAX_BODY_BYTES");
        assertThat(ConfigReader.envName("llm.baseUrl")).isEqualTo("CLAWFLEET_LLM_BASE_URL");
        assertThat(ConfigReader.envName("adminBootstrapKey")).isEqualTo("CLAWFLEET_ADMIN_BOOTSTRAP_KEY");
        assertThat(ConfigReader.envName("llm.providers.my_claude.apiKey")).isEqualTo("CLAWFLEET_LLM_PROVIDERS_MY_CLAUDE_API_KEY");
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

    @Test
    void namedProvidersAndRolesComeFromTheFileWithKeysFromTheEnvironment() throws IOException {
        // given the providers and roles in YAML and their keys in the environment / when loaded / then both are merged
        Path file = write("""
                llm:
                  timeoutMs: 20000
                  providers:
                    deepseek: {type: openai, baseUrl: https://api.deepseek.com/v1, model: deepseek-chat, maxRetries: 1}
                    claude:
                      type: anthropic
                      model: claude-sonnet-4-5
                      maxTokens: 8192
                  roles:
                    default: [deepseek, claude]
                    architect: [claude, deepseek]
                """);
        ClawfleetConfig config = ConfigLoader.load(file, Map.of(
                "CLAWFLEET_LLM_PROVIDERS_DEEPSEEK_API_KEY", "sk-deep",
                "CLAWFLEET_LLM_PROVIDERS_CLAUDE_API_KEY", "sk-ant-claude",
                "CLAWFLEET_LLM_PROVIDERS_CLAUDE_TIMEOUT_MS", "90000"), Map.of());
        Llm llm = config.llm();
        assertThat(llm.providers()).containsOnlyKeys("deepseek", "claude");
        assertThat(llm.providers().get("deepseek")).isEqualTo(new ModelProvider("deepseek", ProviderType.OPENAI,
                "https://api.deepseek.com/v1", "sk-deep", "deepseek-chat", 20_000, 1, 500, 4_096));
        assertThat(llm.providers().get("claude")).isEqualTo(new ModelProvider("claude", ProviderType.ANTHROPIC,
                "https://api.anthropic.com", "sk-ant-claude", "claude-sonnet-4-5", 90_000, 3, 500, 8_192));
        assertThat(llm.roles()).containsEntry("default", List.of("deepseek", "claude"))
                .containsEntry("architect", List.of("claude", "deepseek"));
        assertThat(llm.defaultProvider()).isNull();
        assertThat(llm.configured()).isTrue();
    }

    @Test
    void providersMayHaveAPriceAndABadOneIsNamed() {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(
                "CLAWFLEET_LLM_BASE_URL", "https://api.openai.com/v1", "CLAWFLEET_LLM_PRICE_INPUT", "0.15",
                "CLAWFLEET_LLM_PRICE_OUTPUT", "0.6", "CLAWFLEET_LLM_PRICE_CACHED_INPUT", "0.075",
                "CLAWFLEET_LLM_PROVIDERS_CHEAP_BASE_URL", "https://api.deepseek.com/v1",
                "CLAWFLEET_LLM_PROVIDERS_CHEAP_MODEL", "deepseek-chat"), Map.of());
        assertThat(config.llm().prices()).containsOnlyKeys("default");
        assertThat(config.llm().prices().get("default"))
                .isEqualTo(new io.clawfleet.shared.provider.BotProviders.Price(0.15, 0.6, 0.075));
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_LLM_BASE_URL", "https://api.openai.com/v1",
                "CLAWFLEET_LLM_PRICE_INPUT", "cheap"), Map.of()))
                .hasMessageContaining("llm.priceInput").hasMessageContaining("US dollars per million tokens");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_LLM_BASE_URL", "https://api.openai.com/v1",
                "CLAWFLEET_LLM_PRICE_INPUT", "1"), Map.of()))
                .hasMessageContaining("llm.priceOutput");
    }

    @Test
    void namedProvidersAndRolesComeFromTheEnvironmentAlone() {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(
                "CLAWFLEET_LLM_PROVIDERS_MY_CLAUDE_TYPE", "anthropic",
                "CLAWFLEET_LLM_PROVIDERS_MY_CLAUDE_MODEL", "claude-haiku-4-5",
                "CLAWFLEET_LLM_PROVIDERS_MY_CLAUDE_API_KEY", "sk-ant-x",
                "CLAWFLEET_LLM_PROVIDERS_LOCAL_BASE_URL", "http://localhost:11434/v1",
                "CLAWFLEET_LLM_PROVIDERS_LOCAL_MODEL", "qwen2.5",
                "CLAWFLEET_LLM_ROLES_DEFAULT", "my_claude, local",
                "CLAWFLEET_LLM_ROLES_CODE_REVIEW", "my_claude"), Map.of());
        Llm llm = config.llm();
        assertThat(llm.providers().get("my_claude").type()).isEqualTo(ProviderType.ANTHROPIC);
        assertThat(llm.providers().get("my_claude").apiKey()).isEqualTo("sk-ant-x");
        assertThat(llm.providers().get("local").baseUrl()).isEqualTo("http://localhost:11434/v1");
        assertThat(llm.roles()).containsEntry("default", List.of("my_claude", "local"))
                .containsEntry("code_review", List.of("my_claude"));
    }

    @Test
    void theDefaultRoleIsTheDefaultProviderOrTheOnlyOneOrNone() {
        Llm none = ConfigLoader.load(null, Map.of(), Map.of()).llm();
        assertThat(none.roles()).containsExactly(Map.entry("default", List.of()));
        assertThat(none.configured()).isFalse();

        Llm single = ConfigLoader.load(null, Map.of("CLAWFLEET_LLM_BASE_URL", "https://api.anthropic.com",
                "CLAWFLEET_LLM_TYPE", "anthropic", "CLAWFLEET_LLM_PROVIDERS_LOCAL_BASE_URL", "http://localhost:1234/v1",
                "CLAWFLEET_LLM_PROVIDERS_LOCAL_MODEL", "m"), Map.of()).llm();
        assertThat(single.roles()).containsEntry("default", List.of("default"));
        assertThat(single.defaultProvider().type()).isEqualTo(ProviderType.ANTHROPIC);

        Llm onlyNamed = ConfigLoader.load(null, Map.of("CLAWFLEET_LLM_PROVIDERS_LOCAL_BASE_URL", "http://localhost:1234/v1",
                "CLAWFLEET_LLM_PROVIDERS_LOCAL_MODEL", "m"), Map.of()).llm();
        assertThat(onlyNamed.roles()).containsEntry("default", List.of("local"));
    }

    @Test
    void providerAndRoleProblemsNameTheirKeys() throws IOException {
        // given a typo in a field, an unknown type, a missing model and a role naming an unknown provider / then each is named
        Path file = write("""
                llm:
                  providers:
                    claude: {type: anthropic, apikey: sk-ant-secret-value, model: claude-sonnet-4-5}
                    gemini: {type: gemini, baseUrl: https://example.com/v1}
                  roles:
                    default: [claude]
                    architect: [claude, gpt5]
                """);
        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of("CLAWFLEET_LLM_PROVIDERS_CLAUDE_APIKEY", "sk-ant-secret-value"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> {
                    assertThat(e.problems()).containsExactlyInAnyOrder(
                            "env CLAWFLEET_LLM_PROVIDERS_CLAUDE_APIKEY: expected CLAWFLEET_LLM_PROVIDERS_<NAME>_<FIELD> with FIELD one of "
                                    + "TYPE, BASE_URL, API_KEY, MODEL, TIMEOUT_MS, MAX_RETRIES, RETRY_BACKOFF_MS, MAX_TOKENS, PRICE_INPUT, PRICE_OUTPUT, PRICE_CACHED_INPUT",
                            "llm.providers.gemini.type (CLAWFLEET_LLM_PROVIDERS_GEMINI_TYPE): expected openai or anthropic, got 'gemini'",
                            "llm.providers.gemini.model (CLAWFLEET_LLM_PROVIDERS_GEMINI_MODEL): expected the model name provider 'gemini' "
                                    + "is asked for, such as deepseek-chat or claude-sonnet-4-5",
                            "llm.roles.architect (CLAWFLEET_LLM_ROLES_ARCHITECT): role 'architect' names unknown provider(s) gpt5; "
                                    + "configured: claude, gemini",
                            "unknown configuration key 'llm.providers.claude.apikey' in the config file (a provider takes type, "
                                    + "baseUrl, apiKey, model, timeoutMs, maxRetries, retryBackoffMs, maxTokens, priceInput, priceOutput, priceCachedInput)");
                    assertThat(e.getMessage()).doesNotContain("sk-ant-secret-value");
                });
    }

    @Test
    void providerNamesAreLowercaseAndDefaultIsTaken() throws IOException {
        Path file = write("""
                llm:
                  providers:
                    DeepSeek: {baseUrl: https://api.deepseek.com/v1, model: deepseek-chat}
                    default: {baseUrl: https://api.deepseek.com/v1, model: deepseek-chat}
                """);
        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of(), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactlyInAnyOrder(
                        "llm.providers.DeepSeek: expected a provider name of 1-32 lowercase letters, digits and '_', "
                                + "starting with a letter, got 'DeepSeek'",
                        "llm.providers.default: the name 'default' belongs to the provider of llm.baseUrl, llm.model, ...; "
                                + "choose another name"));
    }

    @Test
    void severalProvidersWithoutABaseUrlNeedADefaultRole() {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of(
                "CLAWFLEET_LLM_PROVIDERS_A_BASE_URL", "http://a/v1", "CLAWFLEET_LLM_PROVIDERS_A_MODEL", "m",
                "CLAWFLEET_LLM_PROVIDERS_B_BASE_URL", "http://b/v1", "CLAWFLEET_LLM_PROVIDERS_B_MODEL", "m"), Map.of()))
                .hasMessageContaining("llm.roles.default (CLAWFLEET_LLM_ROLES_DEFAULT): expected the providers the default role tries");
    }

    @Test
    void keysNeverShowInTheConfigAsText() {
        Llm llm = ConfigLoader.load(null, Map.of("CLAWFLEET_LLM_BASE_URL", "http://127.0.0.1:1/v1",
                "CLAWFLEET_LLM_API_KEY", "sk-top-secret", "CLAWFLEET_LLM_PROVIDERS_X_BASE_URL", "http://x/v1",
                "CLAWFLEET_LLM_PROVIDERS_X_MODEL", "m", "CLAWFLEET_LLM_PROVIDERS_X_API_KEY", "sk-other-secret"), Map.of()).llm();
        assertThat(llm.toString()).doesNotContain("sk-top-secret").doesNotContain("sk-other-secret");
    }

    @Test
    void egressAllowedHostsTakesNamesAddressesAndBlocksAndNamesWhatIsNeither() {
        assertThat(ConfigLoader.load(null, Map.of(), Map.of("egress.allowedHosts", "Bot-API.internal, 10.1.0.0/16 ,::1"))
                .security().egressAllowedHosts()).containsExactly("bot-api.internal", "10.1.0.0/16", "::1");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of(), Map.of("egress.allowedHosts", "10.0.0.0/99,http://x")))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("'10.0.0.0/99' is not an address block").contains("'http://x' is neither"));
    }

    @Test
    void masterKeysComeFromTheEnvironmentOrAKeyFileAndTheFirstIsCurrent() throws IOException {
        // given a key file with the new key first and the old one second
        String current = io.clawfleet.shared.security.MasterKeys.generate();
        String old = io.clawfleet.shared.security.MasterKeys.generate();
        Path file = write("# comment\n" + current + "\n\n" + old + "\n");

        // when loaded from the file, or from the environment with the old key as previous
        var fromFile = ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY_FILE", file.toString()), Map.of()).security().masterKeys();
        var fromEnv = ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY", current, "CLAWFLEET_MASTER_KEY_PREVIOUS", old), Map.of())
                .security().masterKeys();

        // then both hold the two keys, the same one current, and printing the config shows ids only
        assertThat(fromFile.ids()).isEqualTo(fromEnv.ids()).hasSize(2);
        assertThat(fromFile.current().id()).isEqualTo(fromEnv.current().id()).isEqualTo(fromFile.ids().getFirst());
        assertThat(ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY", current), Map.of()).security().toString())
                .doesNotContain(current).contains(fromEnv.current().id());
        assertThat(ConfigLoader.load(null, Map.of(), Map.of()).security().masterKeys().isEmpty()).isTrue();
    }

    @Test
    void aMasterKeyThatIsNotThirtyTwoBytesOrTwoSourcesAtOnceAreRefusedByName() throws IOException {
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY", "dG9vIHNob3J0"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("CLAWFLEET_MASTER_KEY").contains("32 random bytes").doesNotContain("dG9vIHNob3J0"));
        Path file = write(io.clawfleet.shared.security.MasterKeys.generate() + "\n");
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY", io.clawfleet.shared.security.MasterKeys.generate(),
                "CLAWFLEET_MASTER_KEY_FILE", file.toString()), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("either masterKey or masterKeyFile"));
        assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("CLAWFLEET_MASTER_KEY_FILE", "/nonexistent/master.key"), Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(String.join("\n", e.problems()))
                        .contains("/nonexistent/master.key").contains("cannot be read"));
    }
}
