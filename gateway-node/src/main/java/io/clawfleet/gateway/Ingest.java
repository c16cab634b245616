package io.clawfleet.gateway;

import io.clawfleet.shared.tracing.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.admission.Admission;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.InboxStore;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;

import java.util.Objects;

/**
 * Idempotent intake, the same for every channel: derive the partition, commit the message to the
 * inbox (with others that arrive meanwhile, {@link IntakeBatcher}), then wake the partition's owner.
 * The channel acknowledges only after the commit.
 */
public final class Ingest {

    private final IntakeBatcher inbox;
    private final Partitioner partitioner;
    private final EventBus bus;
    private final Admission admission;
    private final int maxUnansweredPerChat;
    private final Metrics metrics;
    private final Tracing tracing;
    private final String nodeId;

    public Ingest(IntakeBatcher inbox, Partitioner partitioner, EventBus bus, Admission admission, int maxUnansweredPerChat,
                  Metrics metrics, Tracing tracing, String nodeId) {
        this.tracing = Objects.requireNonNull(tracing);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.inbox = Objects.requireNonNull(inbox);
        this.partitioner = Objects.requireNonNull(partitioner);
        this.bus = Objects.requireNonNull(bus);
        this.admission = Objects.requireNonNull(admission);
        this.maxUnansweredPerChat = maxUnansweredPerChat;
        this.metrics = Objects.requireNonNull(metrics);
    }

    /**
     * Admits and stores a message. Fails with an {@link ApiException} when refused (429 rate or
     * backlog, 503 overload or database trouble, all with Retry-After); nothing is stored then.
     *
     * @param idempotencyKey the channel's own message id; the same key in the same chat is the same message
     * @param replyNode      node id of the gateway holding the caller's connection, for streaming; may be null
     */
    public Future<InboxStore.Accepted> accept(BotRef bot, String channel, String chatKey, String idempotencyKey,
                                         String senderId, String text, String replyNode) {
        return accept(bot, channel, chatKey, idempotencyKey, senderId, text, replyNode, null);
    }

    /** As {@link #accept(BotRef, String, String, String, String, String, String)}, for a given model role. */
    public Future<InboxStore.Accepted> accept(BotRef bot, String channel, String chatKey, String idempotencyKey,
                                         String senderId, String text, String replyNode, String modelRole) {
        return accept(bot, channel, chatKey, idempotencyKey, senderId, text, replyNode, modelRole, null);
    }

    /**
     * As {@link #accept(BotRef, String, String, String, String, String, String, String)}, sent with the API key
     * {@code apiKeyId} (its public id): stored on the message, in the same insert, for usage per key.
     */
    public Future<InboxStore.Accepted> accept(BotRef bot, String channel, String chatKey, String idempotencyKey,
                                         String senderId, String text, String replyNode, String modelRole, String apiKeyId) {
        String tenantId = bot.tenantId();
        int partition = partitioner.partitionOf(bot, channel, chatKey);
        // The root of the message's trace: the turn on a worker, its model and tool calls and the sandbox run hang
        // under it, through the traceparent kept with the inbox row. A no-op span when tracing is off.
        Span span = tracing.tracer().spanBuilder("clawfleet ingest").setSpanKind(SpanKind.SERVER)
                .setAttribute(Tracing.TENANT, tenantId).setAttribute(Tracing.BOT, bot.botId())
                .setAttribute(Tracing.CHANNEL, channel).setAttribute(Tracing.CHAT, chatKey)
                .setAttribute(Tracing.PARTITION, (long) partition).setAttribute(Tracing.NODE, nodeId).startSpan();
        Admission.Ticket ticket;
        try {
            ticket = admission.admit(tenantId, channel, bot.isMain() ? chatKey : bot.botId() + '\u0000' + chatKey);
        } catch (ApiException refused) {
            span.setStatus(StatusCode.ERROR, refused.code()).end();
            return Future.failedFuture(refused);
        }
        long started = System.nanoTime();
        return inbox.accept(new InboxStore.Intake(tenantId, bot.botId(), channel, chatKey, partition, idempotencyKey, senderId,
                        InboundMessage.KIND_USER, text, replyNode, maxUnansweredPerChat, modelRole, null, apiKeyId,
                        tracing.traceparent(span)))
                .eventually(() -> {
                    ticket.close();
                    return Future.succeededFuture();
                })
                .recover(failure -> Future.failedFuture(ApiException.unavailable(
                        "the message was not accepted (database unavailable); retry with the same message id", 1)))
                .compose(accepted -> {
                    if (accepted.outcome() == InboxStore.Outcome.BACKLOG_FULL) {
                        metrics.increment("clawfleet.gateway.rejected", "reason", "chat_backlog");
                        return Future.failedFuture(new ApiException(429, "chat_backlog", "this chat already has "
                                + maxUnansweredPerChat + " unanswered messages; retry when some are answered", 5));
                    }
                    return Future.succeededFuture(accepted);
                })
                .onSuccess(accepted -> {
                    metrics.recordMillis("clawfleet.ingest.commit", (System.nanoTime() - started) / 1e6);
                    metrics.increment(accepted.created() ? "clawfleet.ingest.accepted" : "clawfleet.ingest.duplicates",
                            "tenant", tenantId, "bot", bot.botId(), "channel", channel);
                    // Also for a duplicate: if the first wake-up was lost, this one costs nothing and may help.
                    bus.publish(Addresses.partitionWake(partition), new WakeUp(accepted.message()));
                })
                .andThen(result -> {
                    if (result.succeeded()) {
                        span.setAttribute(Tracing.INBOX, result.result().message().id())
                                .setAttribute("clawfleet.duplicate", !result.result().created());
                    } else {
                        span.setStatus(StatusCode.ERROR, result.cause() instanceof ApiException e ? e.code() : "failed");
                    }
                    span.end();
                });
    }
}
