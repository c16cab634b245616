package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.workspace.CodeSkill;
import io.clawfleet.shared.workspace.CodeSkillParser;
import io.clawfleet.shared.workspace.SkillParser;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A code-skill tool ({@code <skill>__<tool>}, seed 004) on a sandbox node. The skill's files come with
 * the call; its declaration says which program to run. The program gets the arguments as JSON on
 * stdin and the tool's name as its first argument, runs in the skill's folder with only the
 * variables it declares (and the node allows), and answers with JSON on stdout, wrapped as seed 004
 * §4.5 says: an object with {@code success} as it is, any other value as {@code {"success":true,"data":...}},
 * a failure as {@code {"success":false,"error":...}}.
 */
final class SkillTool {

    private final ClawfleetConfig.Sandbox config;
    private final ProcessSandbox processes;
    private final Map<String, String> nodeEnvironment;
    private final SecretScrubber scrubber;

    SkillTool(ClawfleetConfig.Sandbox config, ProcessSandbox processes, Map<String, String> nodeEnvironment, SecretScrubber scrubber) {
        this.config = Objects.requireNonNull(config);
        this.processes = Objects.requireNonNull(processes);
        this.nodeEnvironment = Map.copyOf(nodeEnvironment);
        this.scrubber = Objects.requireNonNull(scrubber);
    }

    /** Blocking. */
    ToolResult run(ToolCall call) throws IOException, InterruptedException {
        List<WorkspaceFile> files = new ArrayList<>();
        call.files().forEach((path, content) -> files.add(new WorkspaceFile(path, content, 1, Instant.EPOCH)));
        CodeSkillParser.CodeSkillSet set = CodeSkillParser.scan(files);
        CodeSkill skill = set.skills().stream().filter(s -> s.tool(call.tool()) != null).findFirst().orElse(null);
        if (skill == null) {
            String skillName = call.tool().substring(0, Math.max(0, call.tool().indexOf(CodeSkill.SEPARATOR)));
            String problem = set.problems().stream().map(SkillParser.Problem::message)
                    .filter(m -> m.startsWith("skills/" + skillName + "/")).findFirst()
                    .orElse("no skill among the files sent declares the tool " + call.tool());
            return failure(call, ToolResult.INVALID_ARGS, problem);
        }
        CodeSkill.Tool tool = skill.tool(call.tool());
        List<String> argv = command(skill, call.files().get(skill.entry()));
        if (argv == null) {
            return failure(call, ToolResult.INVALID_ARGS, skill.entry() + " has no '#!' line and no known extension "
                    + "(.js, .mjs, .cjs, .py, .sh), so it cannot be run");
        }
        argv.add(tool.name());
        Map<String, String> env = new HashMap<>(RunnerSupport.environment(skill.env(), config.allowedEnv(), nodeEnvironment, call));
        env.put("CLAWFLEET_SKILL", skill.name());
        env.put("CLAWFLEET_TOOL", tool.name());
        long timeout = Math.min(call.timeoutMs(), config.maxTimeoutMs());
        ProcessSandbox.Result run = processes.run(new ProcessSandbox.Spec(argv, call.files(), skill.folder(), env,
                call.arguments().getBytes(StandardCharsets.UTF_8), call.network() && config.egress("skills"), timeout,
                argv.get(0).startsWith("./") ? skill.entry() : null));
        Wrapped wrapped = wrap(run, timeout);
        ToolResult result = RunnerSupport.result(call, wrapped.status, run, wrapped.json.encode(), scrubber);
        List<String> missing = skill.env().stream().filter(name -> !env.containsKey(name)).toList();
        if (missing.isEmpty()) {
            return result;
        }
        String note = "[not given to the skill: " + String.join(", ", missing) + " (not set on this sandbox node, or not in sandbox.allowedEnv)]";
        return new ToolResult(result.callId(), result.status(), result.exitCode(), result.output(), result.truncated(),
                result.changedFiles(), result.stderr().isEmpty() ? note : result.stderr() + "\n" + note, result.deletedFiles());
    }

    /** How to run the entry: its own #! line, or the interpreter its extension names. */
    private static List<String> command(CodeSkill skill, String entry) {
        String relative = skill.entry().substring(skill.folder().length() + 1);
        List<String> argv = new ArrayList<>();
        if (entry.startsWith("#!")) {
            argv.add("./" + relative);
        } else if (relative.endsWith(".js") || relative.endsWith(".mjs") || relative.endsWith(".cjs")) {
            argv.addAll(List.of("node", relative));
        } else if (relative.endsWith(".py")) {
            argv.addAll(List.of("python3", relative));
        } else if (relative.endsWith(".sh")) {
            argv.addAll(List.of("sh", relative));
        } else {
            return null;
        }
        return argv;
    }

    private record Wrapped(String status, JsonObject json) {
    }

    static Wrapped wrap(ProcessSandbox.Result run, long timeoutMs) {
        if (run.timedOut()) {
            return failed(ToolResult.TIMEOUT, "Skill execution timeout (" + timeoutMs + "ms)");
        }
        if (run.outputLimited()) {
            return failed(ToolResult.ERROR, "the skill wrote more output than the sandbox keeps; it was stopped");
        }
        if (run.exitCode() != 0) {
            String stderr = run.stderr().strip();
            return failed(ToolResult.ERROR, "the skill exited with code " + run.exitCode()
                    + (stderr.isEmpty() ? "" : ": " + tail(stderr, 1_000)));
        }
        Object value;
        try {
            value = Json.decodeValue(run.stdout().isBlank() ? "null" : run.stdout());
        } catch (DecodeException e) {
            return failed(ToolResult.ERROR, "the skill did not print JSON: " + tail(run.stdout().strip(), 300));
        }
        if (value instanceof JsonObject object && object.containsKey("success")) {
            return new Wrapped(Boolean.TRUE.equals(object.getValue("success")) ? ToolResult.OK : ToolResult.ERROR, object);
        }
        return new Wrapped(ToolResult.OK, new JsonObject().put("success", true).put("data", value));
    }

    private static Wrapped failed(String status, String error) {
        return new Wrapped(status, new JsonObject().put("success", false).put("error", error));
    }

    private ToolResult failure(ToolCall call, String status, String error) {
        return ToolResult.of(call.callId(), status, new JsonObject().put("success", false).put("error", error).encode());
    }

    private static String tail(String text, int max) {
        return text.length() <= max ? text : "..." + text.substring(text.length() - max);
    }
}
