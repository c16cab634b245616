package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.mcp.McpAnswer;
import io.clawfleet.sandbox.mcp.McpSession;
import io.clawfleet.sandbox.mcp.SessionKey;
import io.clawfleet.sandbox.mcp.WarmSessions;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.workspace.McpServers;
import io.clawfleet.shared.workspace.SkillParser;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A stdio MCP server's tool list or one of its tools on a sandbox node. The call carries the tenant's
 * {@code .mcp.json} and names the server ({@code mcp__<server>}: list its tools) or the server and the
 * tool's own name ({@code mcp__<server>__<tool>}: call it, with the call's arguments). The server runs in
 * an empty run directory under the same isolation as every run, with only the variables it declares and
 * the node allows, and network only when it asks and {@code sandbox.egress} has {@code mcp}. It is a warm
 * session of the call's tenant, bot and server ({@link WarmSessions}), started once and kept between calls;
 * when warm sessions are off or the node has no room for one, it is started for this call alone and stopped
 * after the one exchange ({@link McpSession}).
 */
final class McpTool {

    private final ClawfleetConfig.Sandbox config;
    private final ProcessSandbox processes;
    private final WarmSessions sessions;
    private final Map<String, String> nodeEnvironment;
    private final SecretScrubber scrubber;

    McpTool(ClawfleetConfig.Sandbox config, ProcessSandbox processes, WarmSessions sessions, Map<String, String> nodeEnvironment,
            SecretScrubber scrubber) {
        this.config = Objects.requireNonNull(config);
        this.processes = Objects.requireNonNull(processes);
        this.sessions = Objects.requireNonNull(sessions);
        this.nodeEnvironment = Map.copyOf(nodeEnvironment);
        this.scrubber = Objects.requireNonNull(scrubber);
    }

    /** Blocking. */
    ToolResult run(ToolCall call) throws IOException, InterruptedException {
        String name = McpServers.serverOf(call.tool());
        McpServers.ServerSet set = McpServers.parse(call.files().get(WorkspacePaths.MCP), config.maxTimeoutMs());
        McpServers.Server server = set.server(name);
        if (server == null) {
            String problem = set.problems().stream().map(SkillParser.Problem::message)
                    .filter(m -> m.startsWith("server '" + name + "'") || !m.startsWith("server '")).findFirst()
                    .orElse("no MCP server named '" + name + "' in " + WorkspacePaths.MCP);
            return ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, problem);
        }
        int toolStart = McpServers.PREFIX.length() + name.length() + McpServers.SEPARATOR.length();
        boolean list = toolStart >= call.tool().length();
        String method = list ? McpSession.LIST : McpSession.CALL;
        JsonObject params = list ? new JsonObject()
                : new JsonObject().put("name", call.tool().substring(toolStart)).put("arguments", new JsonObject(call.arguments()));
        List<String> argv = new ArrayList<>();
        argv.add(server.command());
        argv.addAll(server.args());
        Map<String, String> env = RunnerSupport.environment(server.env(), config.allowedEnv(), nodeEnvironment, call);
        boolean network = call.network() && config.egress("mcp");
        long timeout = Math.min(call.timeoutMs(), config.maxTimeoutMs());
        ProcessSandbox.Spec spec = new ProcessSandbox.Spec(argv, Map.of(), "", env, null, network, timeout, null);
        McpAnswer answer = sessions.call(SessionKey.of(call.tenantId(), call.botId(), name, argv, env, network), spec, method, params,
                timeout);
        if (answer == null) {
            McpSession session = new McpSession(method, params);
            answer = McpAnswer.of(session, processes.run(spec, session));
        }
        List<String> missing = server.env().stream().filter(v -> !env.containsKey(v)).toList();
        return outcome(call, server, answer, timeout, missing);
    }

    private ToolResult outcome(ToolCall call, McpServers.Server server, McpAnswer answer, long timeoutMs, List<String> missing) {
        ProcessSandbox.Result run = new ProcessSandbox.Result(answer.exitCode(), answer.timedOut(), answer.outputLimited(), "",
                answer.stderr(), Map.of(), List.of(), List.of(), 0);
        String who = "the MCP server '" + server.name() + "'";
        if (answer.answered()) {
            if (answer.stage().equals(McpSession.LIST)) {
                return RunnerSupport.result(call, ToolResult.OK, run, answer.result().encode(), scrubber);
            }
            boolean failed = Boolean.TRUE.equals(answer.result().getValue("isError"));
            return RunnerSupport.result(call, failed ? ToolResult.ERROR : ToolResult.OK, run, McpSession.text(answer.result()), scrubber);
        }
        String problem;
        String status = ToolResult.ERROR;
        if (answer.timedOut()) {
            status = ToolResult.TIMEOUT;
            problem = answer.failure() != null ? who + " " + answer.failure()
                    : who + " did not answer " + answer.stage() + " within " + timeoutMs + " ms; it was stopped";
        } else if (answer.outputLimited()) {
            problem = who + " wrote more than " + config.maxOutputBytes() + " bytes (sandbox.maxOutputBytes); it was stopped";
        } else {
            problem = who + ": " + answer.failure() + (answer.exitCode() == 137 || answer.exitCode() < 0 ? ""
                    : " (it exited with code " + answer.exitCode() + ")");
        }
        String stderr = answer.stderr().strip();
        if (!stderr.isEmpty()) {
            problem += "; its stderr ends: " + (stderr.length() <= 1_000 ? stderr : "..." + stderr.substring(stderr.length() - 1_000));
        }
        if (!missing.isEmpty()) {
            problem += " [not given to the server: " + String.join(", ", missing)
                    + " (not set on this sandbox node, or not in sandbox.allowedEnv)]";
        }
        return RunnerSupport.result(call, status, run, problem, scrubber);
    }
}
