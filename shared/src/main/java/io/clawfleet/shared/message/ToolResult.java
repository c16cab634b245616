package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

import java.util.List;
import java.util.Map;

/**
 * The outcome of a {@link ToolCall}: status, capped output and the workspace files the run changed.
 *
 * @param status       {@code ok}; {@code error} (it ran and failed: a non-zero exit, a page that could not be
 *                     fetched); {@code denied} (a policy refused it); {@code invalid_args}; {@code timeout} (killed at
 *                     its wall-clock limit); {@code unavailable} (the sandbox could not run it at all)
 * @param exitCode     process exit code where the tool ran a process, else -1
 * @param output       the tool's output (stdout of a process), capped
 * @param truncated    whether output was cut at the cap (the run was then stopped)
 * @param changedFiles files the run created or changed, path to content (text files only)
 * @param stderr       what a process wrote to stderr, capped (absent in older senders)
 * @param deletedFiles paths of files sent with the call that the run removed (absent in older senders)
 */
public record ToolResult(
        String type,
        String callId,
        String status,
        int exitCode,
        String output,
        boolean truncated,
        Map<String, String> changedFiles,
        String stderr,
        List<String> deletedFiles) implements Versioned {

    public static final String TYPE = "tool-result-v1";

    public static final String OK = "ok";
    public static final String ERROR = "error";
    public static final String DENIED = "denied";
    public static final String INVALID_ARGS = "invalid_args";
    public static final String TIMEOUT = "timeout";
    public static final String UNAVAILABLE = "unavailable";

    @JsonCreator
    public ToolResult {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(callId, "callId");
        Versioned.require(status, "status");
        output = output == null ? "" : output;
        changedFiles = changedFiles == null ? Map.of() : Map.copyOf(changedFiles);
        stderr = stderr == null ? "" : stderr;
        deletedFiles = deletedFiles == null ? List.of() : List.copyOf(deletedFiles);
    }

    public ToolResult(String callId, String status, int exitCode, String output, boolean truncated,
                      Map<String, String> changedFiles) {
        this(TYPE, callId, status, exitCode, output, truncated, changedFiles, "", List.of());
    }

    public ToolResult(String callId, String status, int exitCode, String output, boolean truncated,
                      Map<String, String> changedFiles, String stderr, List<String> deletedFiles) {
        this(TYPE, callId, status, exitCode, output, truncated, changedFiles, stderr, deletedFiles);
    }

    /** A result without a process: {@code status} and a message for the model. */
    public static ToolResult of(String callId, String status, String output) {
        return new ToolResult(callId, status, -1, output, false, Map.of());
    }

    public boolean ok() {
        return OK.equals(status);
    }
}
