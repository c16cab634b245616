package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.cluster.LocalMembership;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * How a worker turns a tenant's MCP servers into tools, with a stand-in sandbox node: lists are kept per
 * content of .mcp.json, a failed list leaves that server out and is asked again later, and a call reaches
 * the server under the tool's real name.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class McpToolsTest {

    private static final String TWO = "{\"mcpServers\": {\"tides\": {\"command\": \"tides\"}, \"broken\": {\"command\": \"broken\"}}}";
    private static final JsonArray LISTED = new JsonArray()
            .add(new JsonObject().put("name", "gauge.read").put("description", "Read a gauge.")
                    .put("inputSchema", new JsonObject().put("$schema", "http://json-schema.org/draft-07/schema#").put("type", "object")
                            .put("properties", new JsonObject().put("id", new JsonObject().put("type", "string"))))
                    .put("annotations", new JsonObject().put("readOnlyHint", true)))
            .add(new JsonObject().put("name", "gauge-reset"));

    private Vertx vertx;
    private final AtomicLong clock = new AtomicLong(1_000_000);
    /** The sandbox tool names the stand-in node was asked for, in order. */
    private final List<String> asked = new CopyOnWriteArrayList<>();
    /** Whether the server "broken" lists its tools by now. */
    private final AtomicBoolean fixed = new AtomicBoolean();
    private final ClawfleetConfig.Sandbox config = ConfigLoader.load(null, Map.of(), Map.of()).sandbox();
    private McpTools mcp;
    private final BusSigner signer = new BusSigner("0123456789abcdef0123456789abcdef", System::currentTimeMillis, 60_000);

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        LocalMembership membership = new LocalMembership(new Member("sb-1", Set.of("sandbox"), "http://localhost:1"));
        result(vertx.eventBus().<ToolCall>consumer(Addresses.sandboxExecute("sb-1"), message -> {
            ToolCall call = message.body();
            asked.add(call.tool());
            ToolResult answer = switch (call.tool()) {
                case "mcp__broken" -> fixed.get() ? ToolResult.of(call.callId(), ToolResult.OK, new JsonObject().put("tools", LISTED).encode())
                        : ToolResult.of(call.callId(), ToolResult.ERROR, "the MCP server 'broken': it crashed");
                case "mcp__tides" -> ToolResult.of(call.callId(), ToolResult.OK, new JsonObject().put("tools", LISTED).encode());
                case "mcp__tides__gauge.read" -> ToolResult.of(call.callId(), ToolResult.OK, "gauge " + new JsonObject(call.arguments()).getString("id") + ": 2.1 m");
                case "mcp__tides__gauge-reset" -> ToolResult.of(call.callId(), ToolResult.ERROR, "the gauge is offline");
                default -> ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, "no such tool in this test");
            };
            message.reply(answer, signer.sign(new io.vertx.core.eventbus.DeliveryOptions(), BusSigner.RESULT, "sb-1", answer,
                    message.headers().get(BusSigner.SIGNATURE)));
        }).completion());
        SandboxClient client = new SandboxClient(vertx, membership, new MicrometerMetrics("test"), signer, 5, 10_000, 300, clock::get);
        mcp = new McpTools(client, new io.clawfleet.worker.mcp.RemoteMcpTools(vertx, new io.clawfleet.shared.security.EgressGuard(List.of(),
                host -> Future.succeededFuture(List.of())), bot -> Future.succeededFuture(Map.of()), 30_000, 5, 10_000, clock::get, new MicrometerMetrics("test")),
                config, clock::get);
    }

    @AfterEach
    void stop() {
        result(vertx.close());
    }

    private List<Tool> tools(String content) {
        return tools(content, true);
    }

    private List<Tool> tools(String content, boolean admin) {
        return result(mcp.tools(new io.clawfleet.shared.store.BotRef("t1", "main"), content, McpServers.parse(content, config.maxTimeoutMs()), admin));
    }

    @Test
    void aServersToolsBecomeFunctionToolsWithItsSchemaAndHints() {
        List<Tool> tools = tools(TWO);
        assertThat(tools).extracting(Tool::name).containsExactly("mcp__tides__gauge_read", "mcp__tides__gauge-reset");
        Tool read = tools.getFirst();
        assertThat(read.definition().description()).isEqualTo("Read a gauge.");
        assertThat(read.definition().parameters().containsKey("$schema")).isFalse();
        assertThat(read.definition().parameters().getJsonObject("properties").containsKey("id")).isTrue();
        // the server's readOnlyHint makes a reading tool; without it a tool may change things
        assertThat(read.mutating()).isFalse();
        assertThat(tools.get(1).mutating()).isTrue();
    }

    @Test
    void accessRulesDecideWhichChatsGetWhichToolsAndAToolSwitchedOffIsNotOffered() {
        String ruled = "{\"mcpServers\": {\"tides\": {\"command\": \"tides\", \"access\": \"everyone\", "
                + "\"tools\": {\"gauge-reset\": \"admin\"}}, \"broken\": {\"command\": \"broken\", "
                + "\"tools\": {\"gauge.read\": \"off\"}}}}";
        fixed.set(true);
        // an admin chat gets every tool but the one switched off, each with its access
        List<Tool> admin = tools(ruled, true);
        assertThat(admin).extracting(Tool::name).containsExactlyInAnyOrder("mcp__tides__gauge_read", "mcp__tides__gauge-reset",
                "mcp__broken__gauge-reset");
        assertThat(admin).allSatisfy(tool -> assertThat(tool).isInstanceOf(io.clawfleet.worker.tools.RuledTool.class));
        assertThat(admin).filteredOn(tool -> tool.name().equals("mcp__tides__gauge_read"))
                .singleElement().satisfies(tool -> {
                    assertThat(((io.clawfleet.worker.tools.RuledTool) tool).access()).isEqualTo(McpServers.Access.EVERYONE);
                    assertThat(tool.mutating()).isFalse();
                });
        // a normal chat is not even given the admin-only server's list; the policy then offers it the tools for everyone
        asked.clear();
        List<Tool> normal = tools(ruled.replace("}}}}", "}}}} "), false);
        assertThat(asked).containsExactly("mcp__tides");
        io.clawfleet.worker.tools.ToolPolicy policy = new io.clawfleet.worker.tools.ToolPolicy(false);
        assertThat(normal.stream().filter(tool -> policy.offers(tool, false)).map(Tool::name))
                .containsExactly("mcp__tides__gauge_read");
        ToolCallContext user = new ToolCallContext("t1", "main", 1, "api", "u1", "u", false, 1, 0, null);
        Tool reset = normal.stream().filter(tool -> tool.name().equals("mcp__tides__gauge-reset")).findFirst().orElseThrow();
        assertThat(policy.refusal(reset, new JsonObject(), user, io.clawfleet.worker.tools.Autonomy.FULL))
                .hasValue("using this MCP tool is only allowed in an admin chat");
        Tool read = normal.stream().filter(tool -> tool.name().equals("mcp__tides__gauge_read")).findFirst().orElseThrow();
        assertThat(policy.refusal(read, new JsonObject().put("id", "x"), user, io.clawfleet.worker.tools.Autonomy.FULL)).isEmpty();
    }

    @Test
    void listsAreKeptPerContentOfMcpJson() {
        tools(TWO);
        tools(TWO);
        assertThat(asked).containsExactlyInAnyOrder("mcp__tides", "mcp__broken");
        // a changed file is listed again
        tools(TWO + "\n");
        assertThat(asked).hasSize(4);
    }

    @Test
    void aFailedListLeavesThatServerOutAndIsAskedAgainAfterAMinuteWithoutHoldingUpTheTurn() {
        assertThat(tools(TWO)).extracting(Tool::name).allMatch(name -> name.startsWith("mcp__tides__"));
        tools(TWO);
        assertThat(asked.stream().filter("mcp__broken"::equals)).hasSize(1);
        // a minute later the broken server is listed again, and this time it works
        fixed.set(true);
        clock.addAndGet(McpTools.RETRY_FAILED_MS + 1);
        // the turn that asks again does not wait for the answer
        assertThat(tools(TWO)).extracting(Tool::name).noneMatch(name -> name.startsWith("mcp__broken__"));
        Await.until("the broken server listed again", java.time.Duration.ofSeconds(5),
                () -> asked.stream().filter("mcp__broken"::equals).count() == 2);
        assertThat(tools(TWO)).extracting(Tool::name).contains("mcp__broken__gauge_read");
        assertThat(asked.stream().filter("mcp__tides"::equals)).hasSize(1);
    }

    @Test
    void aCallReachesTheServerUnderTheToolsRealNameAndAnErrorResultIsAToolError() {
        List<Tool> tools = tools(TWO);
        ToolCallContext ctx = new ToolCallContext("t1", "main", 1, "api", "admin", "u", true, 1, 0, null);
        assertThat(result(tools.getFirst().execute(ctx, new JsonObject().put("id", "north")))).isEqualTo("gauge north: 2.1 m");
        Future<String> reset = tools.get(1).execute(ctx, new JsonObject());
        assertThat(result(reset.recover(e -> Future.succeededFuture(e instanceof ToolException t ? "tool error: " + t.getMessage() : "other"))))
                .isEqualTo("tool error: the gauge is offline");
        assertThat(asked).contains("mcp__tides__gauge.read", "mcp__tides__gauge-reset");
    }
}
