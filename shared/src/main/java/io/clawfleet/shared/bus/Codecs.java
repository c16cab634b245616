package io.clawfleet.shared.bus;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.PartitionReleased;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.message.Versioned;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.message.WorkerReady;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.vertx.core.eventbus.EventBus;

/** Registers the codec of every versioned record, so they can be sent as they are. */
public final class Codecs {

    private Codecs() {
    }

    public static void registerAll(EventBus bus) {
        register(bus, InboundMessage.class, InboundMessage.TYPE);
        register(bus, OutboundReply.class, OutboundReply.TYPE);
        register(bus, WakeUp.class, WakeUp.TYPE);
        register(bus, TurnRequest.class, TurnRequest.TYPE);
        register(bus, ToolCall.class, ToolCall.TYPE);
        register(bus, ToolResult.class, ToolResult.TYPE);
        register(bus, PartitionReleased.class, PartitionReleased.TYPE);
        register(bus, StreamChunk.class, StreamChunk.TYPE);
        register(bus, WorkerReady.class, WorkerReady.TYPE);
        register(bus, TenantChanged.class, TenantChanged.TYPE);
        register(bus, WorkspaceChanged.class, WorkspaceChanged.TYPE);
        register(bus, io.clawfleet.shared.message.McpListChanged.class, io.clawfleet.shared.message.McpListChanged.TYPE);
    }

    private static <T extends Versioned> void register(EventBus bus, Class<T> type, String name) {
        bus.registerDefaultCodec(type, new JsonCodec<>(type, name));
    }
}
