package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.vertx.core.Handler;
import io.vertx.core.eventbus.Message;

import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * Answers the {@link ToolCall}s a sandbox node receives on the event bus: a {@code tool-result-v1}
 * when the node did its job, or a failure with one of the codes of {@link SandboxFailures} when it could
 * not (stopping, full, unable, broken), which is how workers know to go elsewhere.
 */
public final class SandboxEndpoint implements Handler<Message<ToolCall>> {

    private final SandboxService service;
    private final BooleanSupplier serving;

    /** @param serving false once the node is stopping: calls are then refused unstarted */
    public SandboxEndpoint(SandboxService service, BooleanSupplier serving) {
        this.service = Objects.requireNonNull(service);
        this.serving = Objects.requireNonNull(serving);
    }

    @Override
    public void handle(Message<ToolCall> message) {
        if (!serving.getAsBoolean()) {
            message.fail(SandboxFailures.STOPPING, "sandbox node stopping");
            return;
        }
        service.execute(message.body()).onComplete(done -> {
            if (done.succeeded()) {
                message.reply(done.result());
            } else {
                SandboxFailure failure = (SandboxFailure) done.cause();
                message.fail(failure.code(), failure.getMessage());
            }
        });
    }
}
