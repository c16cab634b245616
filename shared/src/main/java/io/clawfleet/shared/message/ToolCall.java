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
 * @param queueTimeoutMs the longest the call may wait on a node for a free slot, counted from its arrival there;
 *                  past it the node drops it unstarted ({@link SandboxFailures#EXPIRED}). The worker waits for a reply
 *                  this long plus the run's limit plus a margin, so when it gives up on a node and asks another, the
 *                  first has either run the call or dropped it, never kept it waiting to run later. Absent in older
 *                  senders: {@link #DEFAULT_QUEUE_TIMEOUT_MS}.
 * @param botId     the bot whose call it is; a sandbox keeps warm MCP sessions per tenant and bot, never sharing one
 *                  between bots. Absent in older senders: {@code main}.
 * @param traceParent the W3C {@code traceparent} of the worker's tool-call span, so the sandbox run joins the message's
 *                  trace; null when the worker does not trace (and in older senders)
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
        Boolean network,
        Long queueTimeoutMs,
        String botId,
        String traceParent) implements Versioned {

    public static final String TYPE = "tool-call-v1";
    public static final long DEFAULT_QUEUE_TIMEOUT_MS = 10_000;

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
        queueTimeoutMs = queueTimeoutMs == null ? DEFAULT_QUEUE_TIMEOUT_MS : queueTimeoutMs;
        if (queueTimeoutMs < 0) {
            throw new IllegalArgumentException("queueTimeoutMs must not be negative, got " + queueTimeoutMs);
        }
        botId = botId == null || botId.isEmpty() ? "main" : botId;
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, false, null, null, null);
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs, boolean network) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, network, null, null, null);
    }

    public ToolCall(String callId, String tenantId, long chatId, String tool, String arguments,
                    Map<String, String> files, Map<String, String> env, long timeoutMs, boolean network, long queueTimeoutMs) {
        this(TYPE, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, network, queueTimeoutMs, null, null);
    }

    /** This call for another bot of the tenant. */
    public ToolCall forBot(String bot) {
        return new ToolCall(type, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, network, queueTimeoutMs, bot,
                traceParent);
    }

    /** This call as part of the trace {@code parent} names (null: none). */
    public ToolCall withTraceParent(String parent) {
        return new ToolCall(type, callId, tenantId, chatId, tool, arguments, files, env, timeoutMs, network, queueTimeoutMs, botId,
                parent);
    }
}
