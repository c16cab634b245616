package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

import java.util.Map;

/**
 * A request to run one tool, sent from a worker to a sandbox node. It carries everything the run
 * needs, so the sandbox holds no database credentials and no model keys.
 *
 * @param arguments the tool's arguments as a JSON object text, exactly as the model produced them
 * @param files     workspace files the run needs, path to content
 * @param env       declared environment for the run (never the node's own)
 * @param timeoutMs wall-clock limit of the run
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
        long timeoutMs) implements Versioned {

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
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException("timeoutMs must be positive, got " + timeoutMs);
        }
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs);
    }
}
