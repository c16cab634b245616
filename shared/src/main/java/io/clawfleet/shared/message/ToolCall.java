package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

import java.util.Map;

/**
 * A request to run one tool, sent from a worker to a sandbox node ({@code clawfleet.sandbox.execute}
 * or a node's own {@code clawfleet.sandbox.execute.<nodeId>}); the reply is a {@link ToolResult}.
 * It carries everything the run needs, so the sandbox holds no database credentials and no model keys.
 *
 * @param arguments the tool's arguments as a JSON object text, exactly as the model produced them
 * @param files     workspace files the run needs, path to content; a run sees them under its working tree
 * @param env       environment values the worker sets for the run (never the worker's own environment)
 * @param timeoutMs wall-clock limit of the run; the sandbox caps it at its own maximum
 * @param network   whether the run asks for network egress (shell and skills; granted only where the sandbox's
 *                  policy allows it). A call without it has no effect outside its private copy of the files, so a
 *                  worker may run it again on another node when the first one died. Absent in older senders: false.
 */
public record ToolCall(
        String type,
        String callId,
        String tenantId,
        long chatId,
        String tool,
        String arguments,
        Map<String, String> files,
        Map<String, String> env,
        long timeoutMs,
        Boolean network) implements Versioned {

    public static final String TYPE = "tool-call-v1";

    @JsonCreator
    public ToolCall {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(callId, "callId");
        Versioned.require(tenantId, "tenantId");
        Versioned.require(tool, "tool");
        arguments = arguments == null ? "{}" : arguments;
        files = files == null ? Map.of() : Map.copyOf(files);
        env = env == null ? Map.of() : Map.copyOf(env);
        // Boxed so that a payload without it (an older sender) decodes; never null once built.
        network = Boolean.TRUE.equals(network);
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException("timeoutMs must be positive, got " + timeoutMs);
        }
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, false);
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs, boolean network) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, network);
    }
}
