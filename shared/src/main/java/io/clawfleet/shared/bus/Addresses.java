package io.clawfleet.shared.bus;

/** Every event-bus address in Clawfleet, {@code clawfleet.<area>.<verb>[.<key>]}, defined once. */
public final class Addresses {

    /** Prefix of the per-partition wake-up address; published, so a lingering old owner does no harm. */
    public static final String PARTITION_WAKE_PREFIX = "clawfleet.partition.wake.";

    /** {@link io.clawfleet.shared.message.PartitionReleased} notices, published to every worker. */
    public static final String PARTITION_RELEASED = "clawfleet.partition.released";

    /** {@link io.clawfleet.shared.message.WorkerReady} notices, published by every worker on every lease tick. */
    public static final String WORKER_READY = "clawfleet.worker.ready";

    /** {@link io.clawfleet.shared.message.OutboundReply} notices, published to every gateway. */
    public static final String REPLY_READY = "clawfleet.reply.ready";

    /** Prefix of a gateway's stream address; {@link io.clawfleet.shared.message.StreamChunk}s are sent there. */
    public static final String STREAM_PREFIX = "clawfleet.stream.";

    /** {@link io.clawfleet.shared.message.TenantChanged} notices, published to every worker. */
    public static final String TENANT_CHANGED = "clawfleet.tenant.changed";

    /** {@link io.clawfleet.shared.message.WorkspaceChanged} notices, published to every node that caches workspaces. */
    public static final String WORKSPACE_CHANGED = "clawfleet.workspace.changed";

    /** {@link io.clawfleet.shared.message.McpListChanged} notices, published to every worker. */
    public static final String MCP_LIST_CHANGED = "clawfleet.mcp.list-changed";

    /** Request-reply: {@link io.clawfleet.shared.message.ToolCall} to any live sandbox node. */
    public static final String SANDBOX_EXECUTE = "clawfleet.sandbox.execute";

    /** Prefix of one sandbox node's own execute address, so a worker can retry on another node. */
    public static final String SANDBOX_EXECUTE_PREFIX = SANDBOX_EXECUTE + ".";

    /** A node's hello to every member, its id the body ({@link BusWarmup}); nothing is done on it but an answer. */
    public static final String NODE_HELLO = "clawfleet.node.hello";

    /** Prefix of a node's own hello address, where the others answer its hello. */
    public static final String NODE_HELLO_PREFIX = NODE_HELLO + ".";

    private Addresses() {
    }

    public static String partitionWake(int partition) {
        return PARTITION_WAKE_PREFIX + partition;
    }

    /** The execute address of one sandbox node: {@code clawfleet.sandbox.execute.<nodeId>}. */
    public static String sandboxExecute(String nodeId) {
        return SANDBOX_EXECUTE_PREFIX + nodeId;
    }

    public static String stream(String gatewayNodeId) {
        return STREAM_PREFIX + gatewayNodeId;
    }

    /** The address where the others answer a node's hello: {@code clawfleet.node.hello.<nodeId>}. */
    public static String nodeHello(String nodeId) {
        return NODE_HELLO_PREFIX + nodeId;
    }
}
