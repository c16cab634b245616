package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.RecentIds;
import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.Metrics;
import io.vertx.core.Handler;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * Answers the {@link ToolCall}s a sandbox node receives on the event bus: a {@code tool-result-v1}
 * when the node did its job, or a failure with one of the codes of {@link SandboxFailures} when it could
 * not (stopping, full, unable, broken), which is how workers know to go elsewhere.
 *
 * <p>The bus is open to any process that joins the cluster, so a call runs only when a worker signed it
 * with the cluster secret for this node, lately, and it is not one this node took already; anything else
 * is refused unstarted with {@link SandboxFailures#UNTRUSTED}. Results are signed back, bound to the call.
 */
public final class SandboxEndpoint implements Handler<Message<ToolCall>> {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxEndpoint.class);
    /** Call ids remembered against replays; far above what a node runs in two signature windows. */
    private static final int RECENT_CALLS = 100_000;

    private final SandboxService service;
    private final BooleanSupplier serving;
    private final BusSigner signer;
    private final String nodeId;
    private final Metrics metrics;
    private final RecentIds recent;

    /**
     * @param serving false once the node is stopping: calls are then refused unstarted
     * @param nodeId  this node: a call must be signed for it
     */
    public SandboxEndpoint(SandboxService service, BooleanSupplier serving, BusSigner signer, String nodeId, Metrics metrics) {
        this.service = Objects.requireNonNull(service);
        this.serving = Objects.requireNonNull(serving);
        this.signer = Objects.requireNonNull(signer);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.metrics = Objects.requireNonNull(metrics);
        // Remembered for both sides of the window: a signature is accepted from issue time - window to + window.
        this.recent = new RecentIds(RECENT_CALLS, 2 * signer.windowMs() + 1_000, System::currentTimeMillis);
    }

    @Override
    public void handle(Message<ToolCall> message) {
        ToolCall call = message.body();
        BusSigner.Verdict verdict = signer.verify(message.headers(), BusSigner.CALL, nodeId, call, "");
        if (verdict != BusSigner.Verdict.VALID) {
            refuse(message, verdict.id());
            return;
        }
        if (!serving.getAsBoolean()) {
            message.fail(SandboxFailures.STOPPING, "sandbox node stopping");
            return;
        }
        // Only a signed call is remembered: an unsigned one must not be able to block a call id in advance.
        switch (recent.remember(call.callId())) {
            case REPLAY -> {
                refuse(message, "replay");
                return;
            }
            case FULL -> {
                message.fail(SandboxFailures.BUSY, "sandbox node busy: too many calls lately");
                return;
            }
            case NEW -> {
            }
        }
        String callSignature = message.headers().get(BusSigner.SIGNATURE);
        service.execute(call).onComplete(done -> {
            if (done.succeeded()) {
                ToolResult result = done.result();
                message.reply(result, signer.sign(new DeliveryOptions(), BusSigner.RESULT, nodeId, result, callSignature));
            } else {
                SandboxFailure failure = (SandboxFailure) done.cause();
                message.fail(failure.code(), failure.getMessage());
            }
        });
    }

    private void refuse(Message<ToolCall> message, String reason) {
        ToolCall call = message.body();
        // The tenant is what the call claims: for the log only, never a metric tag a stranger could multiply.
        LOG.warn("sandbox call refused, not run [tenant: {}, chat: {}, tool: {}, call: {}, reason: {}]", call.tenantId(),
                call.chatId(), call.tool(), call.callId(), reason);
        metrics.increment("clawfleet.bus.rejected", "message", BusSigner.CALL, "reason", reason);
        message.fail(SandboxFailures.UNTRUSTED, "call refused (" + reason + "): a call runs only when signed for this node "
                + "with the cluster secret (CLAWFLEET_CLUSTER_SECRET) within " + signer.windowMs() / 1000 + " s, once");
    }
}
