package io.clawfleet.sandbox.mcp;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.vertx.core.json.JsonObject;

/**
 * How one MCP request on a sandbox node ended, whether a warm session ({@link WarmSessions}) or a server
 * started for this call alone ({@link McpSession}) answered it.
 *
 * @param result        the request's result, or null when it has none
 * @param stage         what the exchange was doing when it ended: {@code initialize}, or the request's method
 * @param failure       why there is no result (null when the time or output limit explains it); with
 *                      {@code timedOut}, a complete explanation of a call that was never sent
 * @param timedOut      the call's time limit passed
 * @param outputLimited the answer went past {@code sandbox.maxOutputBytes}
 * @param exitCode      the server's exit code when it exited (137 when killed), or -1 while it runs on
 * @param stderr        what the server wrote on stderr: during this call when it answered, else its tail
 */
public record McpAnswer(JsonObject result, String stage, String failure, boolean timedOut, boolean outputLimited, int exitCode,
                        String stderr) {

    /** What a call that ran its server on its own found out. */
    public static McpAnswer of(McpSession session, ProcessSandbox.Result run) {
        return new McpAnswer(session.result(), session.stage(), session.failure(), run.timedOut(), run.outputLimited(), run.exitCode(),
                run.stderr());
    }

    /** Whether the request was answered with a result within the output cap. */
    public boolean answered() {
        return result != null && !outputLimited;
    }
}
