package io.clawfleet.shared.message;

/**
 * The failure codes a sandbox node answers a {@link ToolCall} with instead of a {@link ToolResult}
 * (event-bus {@code ReplyException.failureCode()}). A result, whatever its status, means the node did
 * its job: a command that exited non-zero, timed out or was refused by a policy is a result. A failure
 * means the node could not do its job, so the worker may ask another node and counts it against the
 * node and the tool's circuit.
 */
public final class SandboxFailures {

    /** Every slot running and the queue full. Not started. */
    public static final int BUSY = 429;
    /** This node cannot run this kind of tool (it cannot isolate programs). Not started. */
    public static final int UNSUPPORTED = 501;
    /** The node broke before the run started (its disk, its sandbox program). Not started. */
    public static final int BROKEN_BEFORE_START = 502;
    /** The node is stopping. Not started. */
    public static final int STOPPING = 503;
    /** The call waited for a slot longer than its {@link ToolCall#queueTimeoutMs()} and was dropped. Not started. */
    public static final int EXPIRED = 504;
    /**
     * The call was not signed with the cluster secret for this node, its signature is too old or too new,
     * or the node ran a call with its id lately (a replay). Not started.
     */
    public static final int UNTRUSTED = 401;
    /** The node broke while the run was in progress or after it: the run may have had its effects. */
    public static final int BROKEN = 500;

    private SandboxFailures() {
    }

    /** Whether a failure with {@code code} says the run never started, so another node may take it whatever it does. */
    public static boolean notStarted(int code) {
        return code == BUSY || code == UNSUPPORTED || code == BROKEN_BEFORE_START || code == STOPPING || code == EXPIRED
                || code == UNTRUSTED;
    }
}
