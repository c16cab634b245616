package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

import java.util.Map;

/**
 * The outcome of a {@link ToolCall}: status, capped output and the workspace files the run changed.
 *
 * @param status   {@code ok}, {@code error}, {@code denied}, {@code timeout} or {@code invalid_args}
 * @param exitCode process exit code where the tool ran a process, else -1
 */
public record ToolResult(
        String type,
        String callId,
        String status,
        int exitCode,
        String output,
        boolean truncated,
        Map<String, String> changedFiles) implements Versioned {

    public static final String TYPE = "tool-result-v1";

    @JsonCreator
    public ToolResult {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(callId, "callId");
        Versioned.require(status, "status");
        output = output == null ? "" : output;
        changedFiles = changedFiles == null ? Map.of() : Map.copyOf(changedFiles);
    }

    public ToolResult(String callId, String status, int exitCode, String output, boolean truncated,
                      Map<String, String> changedFiles) {
        this(TYPE, callId, status, exitCode, output, truncated, changedFiles);
    }

    public boolean ok() {
        return "ok".equals(status);
    }
}
