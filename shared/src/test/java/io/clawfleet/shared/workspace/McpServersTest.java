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
                "server 'remote': unknown key \"url\"; allowed: command, args, env, timeoutMs, network, type",
                "server 'extra': unknown key \"cwd\"; allowed: command, args, env, timeoutMs, network, type",
                "server 'slow': \"timeoutMs\" must be a positive whole number of milliseconds");
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
