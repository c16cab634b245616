package io.clawfleet.sandbox;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.vertx.core.Future;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Wiring of the sandbox role: serves {@link ToolCall}s from workers over the event bus, with a
 * bulkhead of at most {@value #MAX_CONCURRENT} runs at once, and reports this host's isolation level.
 *
 * <p>FOUNDATION SKELETON: no tool is served yet. Every call is answered with a clear
 * {@code unavailable} result naming the tool; {@code shell_exec}, {@code web_fetch} and code skills
 * arrive with the sandbox work (issue 5). Workers do not route any tool here until then.
 */
public final class SandboxRole implements NodeRole {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxRole.class);
    static final int MAX_CONCURRENT = 4;

    private final AtomicBoolean serving = new AtomicBoolean();
    private final AtomicInteger running = new AtomicInteger();
    private MessageConsumer<ToolCall> consumer;

    @Override
    public String name() {
        return "sandbox";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        Isolation isolation = Isolation.detect();
        if (isolation == Isolation.PROCESS) {
            LOG.warn("bubblewrap (bwrap) not found: tool runs get rlimits, timeouts and env filtering but no namespaces. "
                    + "Install bubblewrap on sandbox hosts (apt-get install bubblewrap)");
        }
        ctx.readiness().detail("sandbox", () -> new JsonObject().put("isolation", isolation.id())
                .put("running", running.get()).put("maxConcurrent", MAX_CONCURRENT));
        ctx.readiness().register("sandbox", serving::get);
        return Consumers.<ToolCall>register(ctx.vertx(), Addresses.SANDBOX_EXECUTE, this::execute).onSuccess(registered -> {
            consumer = registered;
            serving.set(true);
        }).mapEmpty();
    }

    private void execute(Message<ToolCall> message) {
        ToolCall call = message.body();
        if (running.incrementAndGet() > MAX_CONCURRENT) {
            running.decrementAndGet();
            message.fail(429, "sandbox node busy: " + MAX_CONCURRENT + " runs in progress");
            return;
        }
        try {
            message.reply(new ToolResult(call.callId(), "unavailable", -1,
                    "tool '" + call.tool() + "' is not available on this sandbox node yet", false, Map.of()));
        } finally {
            running.decrementAndGet();
        }
    }

    @Override
    public Future<Void> stop() {
        serving.set(false);
        return consumer == null ? Future.succeededFuture() : consumer.unregister();
    }
}
