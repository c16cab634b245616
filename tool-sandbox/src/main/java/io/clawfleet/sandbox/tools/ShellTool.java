package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.CommandLine;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.security.SecretScrubber;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code shell_exec(command)} on a sandbox node (seed 000 §12.4): off unless {@code allowShell}; the
 * command is split into words and run directly, without a shell; only executables on
 * {@code allowedShellCommands} when that list is set; the environment holds PATH and the node
 * variables {@code sandbox.allowedEnv} lists. Working directory: the copy of the files sent.
 */
final class ShellTool {

    private final ClawfleetConfig config;
    private final ProcessSandbox processes;
    private final Map<String, String> nodeEnvironment;
    private final SecretScrubber scrubber;

    ShellTool(ClawfleetConfig config, ProcessSandbox processes, Map<String, String> nodeEnvironment, SecretScrubber scrubber) {
        this.config = Objects.requireNonNull(config);
        this.processes = Objects.requireNonNull(processes);
        this.nodeEnvironment = Map.copyOf(nodeEnvironment);
        this.scrubber = Objects.requireNonNull(scrubber);
    }

    /** Blocking. */
    ToolResult run(ToolCall call, JsonObject arguments) throws IOException, InterruptedException {
        if (!config.security().allowShell()) {
            return ToolResult.of(call.callId(), ToolResult.DENIED,
                    "shell_exec is disabled on this sandbox node (CLAWFLEET_ALLOW_SHELL=false)");
        }
        Object command = arguments.getValue("command");
        if (!(command instanceof String text)) {
            return ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, "missing required argument 'command' (a string)");
        }
        List<String> argv;
        try {
            argv = CommandLine.parse(text);
        } catch (IllegalArgumentException e) {
            return ToolResult.of(call.callId(), ToolResult.INVALID_ARGS, e.getMessage());
        }
        String refusal = allowlistRefusal(argv.get(0));
        if (refusal != null) {
            return ToolResult.of(call.callId(), ToolResult.DENIED, refusal);
        }
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        Map<String, String> env = RunnerSupport.environment(sandbox.allowedEnv(), sandbox.allowedEnv(), nodeEnvironment, call);
        ProcessSandbox.Result run = processes.run(new ProcessSandbox.Spec(argv, call.files(), "", env, null,
                call.network() && sandbox.egress("shell"), Math.min(call.timeoutMs(), sandbox.maxTimeoutMs()), null));
        String status = run.timedOut() ? ToolResult.TIMEOUT : run.exitCode() == 0 ? ToolResult.OK : ToolResult.ERROR;
        String output = run.stdout();
        if (run.exitCode() == 127 && run.stderr().contains("failed to execute")) {
            output = "no program named '" + argv.get(0) + "' on the sandbox host";
        }
        return RunnerSupport.result(call, status, run, output, scrubber);
    }

    private String allowlistRefusal(String program) {
        List<String> allowed = config.security().allowedShellCommands();
        if (allowed.isEmpty()) {
            return null;
        }
        if (program.contains("/")) {
            return "'" + program + "' names a path; with an allowlist of commands, name one of them bare: "
                    + String.join(", ", allowed);
        }
        return allowed.contains(program) ? null
                : "'" + program + "' is not an allowed command; allowed: " + String.join(", ", allowed);
    }
}
