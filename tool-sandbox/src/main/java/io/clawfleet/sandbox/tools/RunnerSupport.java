package io.clawfleet.sandbox.tools;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.security.SecretScrubber;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** What the process-running tools share: the environment a run gets, and how its result is sent back. */
final class RunnerSupport {

    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

    private RunnerSupport() {
    }

    /**
     * The environment of a run: the node variables {@code names} lists that {@code allowed} permits and that
     * are set, then the values the worker put in the call.
     */
    static Map<String, String> environment(List<String> names, List<String> allowed, Map<String, String> node, ToolCall call) {
        Map<String, String> env = new LinkedHashMap<>();
        for (String name : names) {
            if (allowed.contains(name) && node.get(name) != null) {
                env.put(name, node.get(name));
            }
        }
        for (Map.Entry<String, String> entry : call.env().entrySet()) {
            if (!ENV_NAME.matcher(entry.getKey()).matches()) {
                throw new IllegalArgumentException("'" + entry.getKey() + "' is not an environment variable name");
            }
            env.put(entry.getKey(), entry.getValue());
        }
        return env;
    }

    /** The result of a process run, scrubbed of the node's secrets, with notes about files left out. */
    static ToolResult result(ToolCall call, String status, ProcessSandbox.Result run, String output, SecretScrubber scrubber) {
        Map<String, String> changed = new LinkedHashMap<>();
        run.changed().forEach((path, content) -> changed.put(path, scrubber.scrub(content)));
        List<String> stderr = new ArrayList<>();
        if (!run.stderr().isEmpty()) {
            stderr.add(run.stderr());
        }
        if (!run.notes().isEmpty()) {
            stderr.add("[files not sent back: " + String.join("; ", run.notes()) + "]");
        }
        return new ToolResult(call.callId(), status, run.exitCode(), scrubber.scrub(output), run.outputLimited(), changed,
                scrubber.scrub(String.join("\n", stderr)), run.deleted());
    }
}
