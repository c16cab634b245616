package io.clawfleet.gateway.delivery;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.DeliveryStore;
import io.clawfleet.shared.store.DeliveryStore.Claimed;
import io.clawfleet.shared.tracing.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Sends push-channel replies from the outbox: at once when a worker announces one, and from a
 * sweep every second for retries and for replies whose gateway died. Failed sends are retried with
 * exponential backoff and full jitter (honouring the channel's Retry-After); after
 * {@code delivery.maxAttempts}, or at once for a permanent refusal, the reply becomes a dead
 * letter with its error. A chat's replies go out in order. Runs on its gateway's event loop.
 *
 * <p>Sending is at least once: a gateway that dies after a send and before recording it leaves the
 * claim to run out, and another gateway sends again. The reply id is deterministic, so it is the
 * same reply, but the channel may show it twice. A reply sent in parts records each part as it goes out, so a
 * retry sends only the parts not out yet.
 */
public final class OutboxDelivery {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxDelivery.class);
    private static final long SWEEP_MS = 1_000;
    private static final int SWEEP_BATCH = 100;
    private static final int MAX_SENDING = 256;

    private final Vertx vertx;
    private final String nodeId;
    private final DeliveryStore store;
    private final Map<String, ChannelSender> senders;
    private final ClawfleetConfig.Delivery config;
    private final Metrics metrics;
    private final Tracing tracing;
    private int sending;
    private long sweepTimer = -1;
    private boolean sweeping;

    public OutboxDelivery(Vertx vertx, String nodeId, DeliveryStore store, List<ChannelSender> senders,
                          ClawfleetConfig.Delivery config, Metrics metrics) {
        this(vertx, nodeId, store, senders, config, metrics, Tracing.off());
    }

    /** As above, each send a span {@code clawfleet deliver <channel>} in the trace of the message the reply answers. */
    public OutboxDelivery(Vertx vertx, String nodeId, DeliveryStore store, List<ChannelSender> senders,
                          ClawfleetConfig.Delivery config, Metrics metrics, Tracing tracing) {
        this.tracing = Objects.requireNonNull(tracing);
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.store = Objects.requireNonNull(store);
        this.senders = senders.stream().collect(java.util.stream.Collectors.toMap(ChannelSender::channel, s -> s));
        this.config = Objects.requireNonNull(config);
        this.metrics = Objects.requireNonNull(metrics);
    }

    public Future<Void> start() {
        sweepTimer = vertx.setPeriodic(SWEEP_MS, id -> sweep());
        return Future.succeededFuture();
    }

    /**
     * A reply notice a worker sent (the gateway's {@code ReplyHub} takes them off the bus and checks who sent them):
     * a push channel's reply is claimed and sent at once instead of at the next sweep.
     */
    public void notice(OutboundReply reply) {
        if (Channels.isPush(reply.channel()) && sending < MAX_SENDING) {
            store.claim(nodeId, reply.id(), config.claimMs()).onSuccess(claimed -> claimed.ifPresent(this::send));
        }
    }

    public Future<Void> stop() {
        if (sweepTimer >= 0) {
            vertx.cancelTimer(sweepTimer);
        }
        return Future.succeededFuture();
    }

    private void sweep() {
        if (sweeping || sending >= MAX_SENDING) {
            return;
        }
        sweeping = true;
        store.claimDue(nodeId, config.claimMs(), Math.min(SWEEP_BATCH, MAX_SENDING - sending))
                .onSuccess(claimed -> claimed.forEach(this::send))
                .onFailure(e -> LOG.warn("delivery sweep failed [node: {}]: {}", nodeId, e.getMessage()))
                .onComplete(r -> sweeping = false);
    }

    private void send(Claimed reply) {
        ChannelSender sender = senders.get(reply.channel());
        if (sender == null) {
            store.dead(reply.id(), nodeId, "no sender for channel '" + reply.channel() + "' on this gateway");
            return;
        }
        sending++;
        long started = System.nanoTime();
        // The last step of the message's trace (docs/OPERATIONS.md#traces); a no-op span when tracing is off.
        Span span = tracing.tracer().spanBuilder("clawfleet deliver " + reply.channel()).setSpanKind(SpanKind.CLIENT)
                .setParent(tracing.parent(reply.traceParent()))
                .setAttribute(Tracing.TENANT, reply.tenantId()).setAttribute(Tracing.CHANNEL, reply.channel())
                .setAttribute(Tracing.CHAT, reply.chatKey()).setAttribute(Tracing.NODE, nodeId)
                .setAttribute("clawfleet.reply.attempt", (long) reply.attempts()).startSpan();
        sender.send(reply.tenantId(), reply.chatKey(), reply.text(), reply.partsSent(),
                parts -> store.partsSent(reply.id(), nodeId, parts)).onComplete(result -> {
            sending--;
            if (result.failed()) {
                span.setStatus(StatusCode.ERROR, result.cause().getMessage() == null ? "send failed" : result.cause().getMessage());
            }
            span.end();
            if (result.succeeded()) {
                metrics.recordMillis("clawfleet.delivery.send", (System.nanoTime() - started) / 1e6, "channel", reply.channel());
                metrics.increment("clawfleet.delivery.delivered", "channel", reply.channel());
                store.delivered(reply.id(), nodeId)
                        // The chat's next reply may have waited for this one: send it now.
                        .compose(ok -> store.claimNextInChat(nodeId, reply.chatId(), config.claimMs()))
                        .onSuccess(next -> next.ifPresent(this::send));
                return;
            }
            failed(reply, result.cause());
        });
    }

    private void failed(Claimed reply, Throwable cause) {
        DeliveryException failure = cause instanceof DeliveryException e ? e
                : new DeliveryException("send failed: " + cause.getMessage(), true, -1);
        if (failure.paced()) {
            metrics.increment("clawfleet.delivery.paced", "channel", reply.channel(), "tenant", reply.tenantId());
            store.retryLater(reply.id(), nodeId, failure.retryAfterMs(), failure.getMessage(), false);
            return;
        }
        if (!failure.retryable() || reply.attempts() >= config.maxAttempts()) {
            String error = failure.getMessage() + " (after " + reply.attempts() + " attempt" + (reply.attempts() == 1 ? "" : "s") + ")";
            LOG.warn("reply undeliverable, now a dead letter [tenant: {}, chat: {}, reply: {}]: {}", reply.tenantId(),
                    reply.chatKey(), reply.id(), error);
            metrics.increment("clawfleet.delivery.dead", "channel", reply.channel());
            store.dead(reply.id(), nodeId, error);
            return;
        }
        long delay = Math.max(failure.retryAfterMs(), backoff(reply.attempts()));
        LOG.info("reply send failed, retrying [chat: {}, reply: {}, attempt: {}, delay_ms: {}]: {}", reply.chatKey(),
                reply.id(), reply.attempts(), delay, failure.getMessage());
        metrics.increment("clawfleet.delivery.retried", "channel", reply.channel());
        store.retryLater(reply.id(), nodeId, delay, failure.getMessage(), true);
    }

    /** Exponential backoff with full jitter: uniformly in [ceiling / 2, ceiling]. */
    long backoff(int attempts) {
        long ceiling = Math.min(config.maxBackoffMs(), config.backoffMs() << Math.min(attempts - 1, 30));
        return ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1);
    }
}
