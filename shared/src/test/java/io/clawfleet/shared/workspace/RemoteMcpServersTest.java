package io.clawfleet.shared.workspace;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RemoteMcpServersTest {

    private static final String TOKEN = "tok-0123456789abcdef-wxyz";

    @Test
    void aBearerTokenBecomesAnAuthorizationHeaderStoredApartFromTheConfig() {
        RemoteMcpServers servers = RemoteMcpServers.parse(new JsonObject().put("servers", new JsonObject()
                .put("search", new JsonObject().put("url", "https://mcp.example.com/mcp").put("bearerToken", TOKEN))), null);
        McpServers.Remote search = servers.servers().get("search");
        assertThat(search.headers()).containsEntry("Authorization", "Bearer " + TOKEN);
        assertThat(search.toString()).doesNotContain(TOKEN);
        assertThat(servers.config().encode()).doesNotContain(TOKEN).contains("Bearer tok…wxyz");
        assertThat(servers.secrets().getJsonObject("search").getString("Authorization")).isEqualTo("Bearer " + TOKEN);
        assertThat(servers.secretValues()).contains(TOKEN, "Bearer " + TOKEN);

        // stored and read back, it is the same
        RemoteMcpServers back = RemoteMcpServers.stored(servers.config(), servers.secrets());
        assertThat(back.servers().get("search").headers()).isEqualTo(search.headers());
        assertThat(back.servers().get("search").rules()).isEqualTo(McpServers.Rules.ADMIN_ONLY);
    }

    @Test
    void headersLeftOutAreKeptOnTheSameOriginOnly() {
        RemoteMcpServers before = RemoteMcpServers.parse(new JsonObject().put("servers", new JsonObject()
                .put("s", new JsonObject().put("url", "https://mcp.example.com/mcp").put("headers",
                        new JsonObject().put("X-Api-Key", TOKEN)))), null);
        RemoteMcpServers samePlace = RemoteMcpServers.parse(new JsonObject().put("servers", new JsonObject()
                .put("s", new JsonObject().put("url", "https://MCP.example.com:443/v2/mcp"))), before);
        assertThat(samePlace.servers().get("s").headers()).containsEntry("X-Api-Key", TOKEN);
        assertThatThrownBy(() -> RemoteMcpServers.parse(new JsonObject().put("servers", new JsonObject()
                .put("s", new JsonObject().put("url", "http://mcp.example.com/mcp"))), before))
                .hasMessageContaining("another origin").hasMessageNotContaining(TOKEN);
        RemoteMcpServers cleared = RemoteMcpServers.parse(new JsonObject().put("servers", new JsonObject()
                .put("s", new JsonObject().put("url", "http://mcp.example.com/mcp").put("headers", new JsonObject()))), before);
        assertThat(cleared.servers().get("s").headers()).isEmpty();
    }
}
