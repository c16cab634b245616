package io.clawfleet.sandbox.mcp;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** What makes two calls share a warm MCP session: everything that defines the server's process, for one tenant's bot. */
class SessionKeyTest {

    private static final List<String> ARGV = List.of("node", "/opt/server.js", "stdio");
    private static final Map<String, String> ENV = Map.of("API_TOKEN", "t-1", "MODE", "fast");

    private static SessionKey key(String tenant, String bot, List<String> argv, Map<String, String> env, boolean network) {
        return SessionKey.of(tenant, bot, "search", argv, env, network);
    }

    @Test
    void theSameProcessOfTheSameBotIsTheSameKey() {
        assertThat(key("acme", "main", ARGV, ENV, false))
                .isEqualTo(key("acme", "main", List.copyOf(ARGV), Map.of("MODE", "fast", "API_TOKEN", "t-1"), false));
    }

    @Test
    void anotherTenantBotOrServerIsAnotherKey() {
        SessionKey base = key("acme", "main", ARGV, ENV, false);
        assertThat(key("globex", "main", ARGV, ENV, false)).isNotEqualTo(base);
        assertThat(key("acme", "helper", ARGV, ENV, false)).isNotEqualTo(base);
        assertThat(SessionKey.of("acme", "main", "other", ARGV, ENV, false)).isNotEqualTo(base);
    }

    @Test
    void anythingThatChangesTheProcessIsAnotherKey() {
        String base = key("acme", "main", ARGV, ENV, false).fingerprint();
        // the command line, including where one argument ends and the next begins
        assertThat(key("acme", "main", List.of("node", "/opt/server.js", "stdio", "--debug"), ENV, false).fingerprint()).isNotEqualTo(base);
        assertThat(key("acme", "main", List.of("node", "/opt/server.js stdio"), ENV, false).fingerprint()).isNotEqualTo(base);
        // a value, a name, a variable more, and egress
        assertThat(key("acme", "main", ARGV, Map.of("API_TOKEN", "t-2", "MODE", "fast"), false).fingerprint()).isNotEqualTo(base);
        assertThat(key("acme", "main", ARGV, Map.of("API_KEY", "t-1", "MODE", "fast"), false).fingerprint()).isNotEqualTo(base);
        assertThat(key("acme", "main", ARGV, Map.of("API_TOKEN", "t-1", "MODE", "fast", "X", ""), false).fingerprint()).isNotEqualTo(base);
        assertThat(key("acme", "main", ARGV, ENV, true).fingerprint()).isNotEqualTo(base);
    }

    @Test
    void theKeyNeverShowsTheValuesItWasMadeFrom() {
        SessionKey key = key("acme", "main", ARGV, Map.of("API_TOKEN", "secret-token-value"), false);
        assertThat(key.fingerprint()).hasSize(64).doesNotContain("secret");
        assertThat(key.toString()).isEqualTo("[tenant: acme, bot: main, server: search]");
    }
}
