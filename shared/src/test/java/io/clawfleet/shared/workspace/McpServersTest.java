package io.clawfleet.shared.workspace;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class McpServersTest {

    @Test
    void theClaudeDesktopFormIsReadWithClawfleetsOwnKeys() {
        McpServers.ServerSet set = McpServers.parse("""
                {"mcpServers": {
                  "everything": {"command": "node", "args": ["server.js", "stdio"], "env": {"API_TOKEN": "${API_TOKEN}"},
                                 "timeoutMs": 5000, "network": true, "type": "stdio"},
                  "plain": {"command": "mcp-plain"}}}""", 45_000);
        assertThat(set.problems()).isEmpty();
        assertThat(set.servers()).containsExactly(
                new McpServers.Server("everything", "node", List.of("server.js", "stdio"), List.of("API_TOKEN"), 5_000, true),
                new McpServers.Server("plain", "mcp-plain", List.of(), List.of(), 0, false));
    }

    @Test
    void aMalformedFileIsOneProblemNamingTheFile() {
        assertThat(McpServers.parse("{not json", 45_000).problems()).singleElement()
                .satisfies(p -> assertThat(p.message()).startsWith(".mcp.json is not a JSON object"));
        assertThat(McpServers.parse("{\"servers\": {}}", 45_000).problems()).singleElement()
                .satisfies(p -> assertThat(p.message()).contains("needs an object \"mcpServers\""));
        assertThat(McpServers.parse("", 45_000).servers()).isEmpty();
    }

    @Test
    void aBadEntryIsLeftOutWithItsReasonAndTheOthersStand() {
        McpServers.ServerSet set = McpServers.parse("""
                {"mcpServers": {
                  "good": {"command": "ok"},
                  "no_command": {"args": []},
                  "bad__name": {"command": "x"},
                  "literal": {"command": "x", "env": {"OPENAI_API_KEY": "sk-live-123"}},
                  "remote": {"type": "sse", "url": "https://example.com/sse", "command": "x"},
                  "extra": {"command": "x", "cwd": "/tmp"},
                  "slow": {"command": "x", "timeoutMs": -1}}}""", 45_000);
        assertThat(set.servers()).extracting(McpServers.Server::name).containsExactly("good");
        assertThat(set.problems()).extracting(SkillParser.Problem::message).containsExactlyInAnyOrder(
                "server 'no_command': \"command\" must be a non-empty string: the program to start",
                "server 'bad__name': a server name is 1 to 32 letters and digits, single '-' or '_' between them "
                        + "(it becomes part of the tool names mcp__<server>__<tool>)",
                "server 'literal': \"env\": OPENAI_API_KEY must be \"${OPENAI_API_KEY}\": values come from the sandbox node's "
                        + "environment (where sandbox.allowedEnv allows them), never from this file",
                "server 'remote': \"command\" and \"url\" exclude each other: a server runs on a sandbox node (command) "
                        + "or is reached over HTTP (url)",
                "server 'extra': unknown key \"cwd\"; allowed: command, args, env, timeoutMs, network, type, access, tools "
                        + "(or url, headers for a remote server)",
                "server 'slow': \"timeoutMs\" must be a positive whole number of milliseconds");
    }

    @Test
    void remoteServersAreReadWithTheirRulesAndNeverWithCredentials() {
        McpServers.ServerSet set = McpServers.parse("""
                {"mcpServers": {
                  "docs": {"type": "http", "url": "https://mcp.example.com/mcp", "timeoutMs": 8000,
                           "access": "everyone", "tools": {"delete_page": "off", "publish": "admin"}},
                  "plain": {"url": "http://mcp.example.org/mcp"},
                  "local": {"command": "mcp-files", "access": "everyone"},
                  "leaky": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer sk-live-123"}},
                  "old": {"type": "sse", "url": "https://mcp.example.com/sse"},
                  "creds": {"url": "https://user:pw@mcp.example.com/mcp"},
                  "ftp": {"url": "ftp://mcp.example.com"},
                  "loose": {"url": "https://mcp.example.com/mcp", "access": "sometimes"}}}""", 45_000);
        assertThat(set.remote()).extracting(McpServers.Remote::name).containsExactly("docs", "plain");
        McpServers.Remote docs = set.remote().getFirst();
        assertThat(docs.url()).isEqualTo("https://mcp.example.com/mcp");
        assertThat(docs.timeoutMs()).isEqualTo(8_000);
        assertThat(docs.headers()).isEmpty();
        assertThat(docs.rules().of("search")).isEqualTo(McpServers.Access.EVERYONE);
        assertThat(docs.rules().of("delete_page")).isEqualTo(McpServers.Access.OFF);
        assertThat(docs.rules().of("publish")).isEqualTo(McpServers.Access.ADMIN);
        assertThat(set.remote().get(1).rules()).isEqualTo(McpServers.Rules.ADMIN_ONLY);
        assertThat(set.servers()).singleElement().satisfies(local -> assertThat(local.rules().server()).isEqualTo(McpServers.Access.EVERYONE));
        assertThat(set.problems()).extracting(SkillParser.Problem::message).satisfiesExactlyInAnyOrder(
                leaky -> assertThat(leaky).startsWith("server 'leaky': \"headers\" are not read from .mcp.json")
                        .contains("PUT /api/v1/bots/{botId}/mcp-servers").doesNotContain("sk-live-123"),
                old -> assertThat(old).contains("old HTTP+SSE transport"),
                creds -> assertThat(creds).contains("may not carry a user name or password").doesNotContain("pw"),
                ftp -> assertThat(ftp).contains("must start with https://"),
                loose -> assertThat(loose).contains("\"access\" must be \"admin\", \"everyone\" or \"off\""));
    }

    @Test
    void accessRulesSayWhichChatsMayUseWhichTools() {
        McpServers.Rules adminOnly = McpServers.Rules.ADMIN_ONLY;
        assertThat(adminOnly.anyFor(true)).isTrue();
        assertThat(adminOnly.anyFor(false)).isFalse();
        McpServers.Rules oneForAll = new McpServers.Rules(McpServers.Access.ADMIN, java.util.Map.of("search", McpServers.Access.EVERYONE));
        assertThat(oneForAll.anyFor(false)).isTrue();
        assertThat(oneForAll.of("search").allows(false)).isTrue();
        assertThat(oneForAll.of("write").allows(false)).isFalse();
        assertThat(McpServers.Access.OFF.allows(true)).isFalse();
    }

    @Test
    void aTimeoutOverTheSandboxsLongestIsCutAndSaidSo() {
        McpServers.ServerSet set = McpServers.parse("{\"mcpServers\": {\"s\": {\"command\": \"x\", \"timeoutMs\": 90000}}}", 45_000);
        assertThat(set.servers().getFirst().timeoutMs()).isEqualTo(45_000);
        assertThat(set.notes()).singleElement().satisfies(n -> assertThat(n.message()).contains("cut to the sandbox's longest run"));
    }

    @Test
    void wireNamesAreValidFunctionNamesAndLongOnesStayApart() {
        assertThat(McpServers.wireName("everything", "get-tiny-image")).isEqualTo("mcp__everything__get-tiny-image");
        assertThat(McpServers.wireName("fs", "files.read/all")).isEqualTo("mcp__fs__files_read_all");
        String a = McpServers.wireName("everything", "a".repeat(80) + "1");
        String b = McpServers.wireName("everything", "a".repeat(80) + "2");
        assertThat(a).hasSize(64).matches("[A-Za-z0-9_-]+").isNotEqualTo(b);
        assertThat(McpServers.serverOf("mcp__my-server__do__it")).isEqualTo("my-server");
        assertThat(McpServers.serverOf("mcp__my-server")).isEqualTo("my-server");
        assertThat(McpServers.serverOf("skill__tool")).isNull();
    }
}
