package io.clawfleet.gateway.reply;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.OutboxStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.Objects;
import java.util.function.Consumer;

/**
 * Waits for the committed reply to one message: woken by the reply notice, backed by a periodic outbox read (notices
 * are best effort, and a caller that moved to another gateway gets none), bounded by the reply timeout. The reply
 * served is always the outbox row, never what the bus carried.
 */
public final class ReplyWait {

    private static final long POLL_MS = 2_000;

    private final Vertx vertx;
    private final ReplyHub hub;
    private final OutboxStore outbox;
    private final long timeoutMs;

    public ReplyWait(Vertx vertx, ReplyHub hub, OutboxStore outbox, long timeoutMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.hub = Objects.requireNonNull(hub);
        this.outbox = Objects.requireNonNull(outbox);
        this.timeoutMs = timeoutMs;
    }

    public long timeoutMs() {
        return timeoutMs;
    }

    /**
     * The reply to {@code inboxId}; failed with 504 {@code reply_timeout} after the timeout. {@code onChunk} (may be null)
     * gets the streamed pieces that reach this gateway. Completing {@code cancel} (may be null) ends the wait early.
     */
    public Future<OutboundReply> await(String tenantId, long inboxId, Consumer<StreamChunk> onChunk, Future<?> cancel) {
        Promise<OutboundReply> promise = Promise.promise();
        long started = System.nanoTime();
        long[] poller = {-1};
        Runnable check = () -> outbox.replyTo(tenantId, inboxId).onSuccess(found -> found.ifPresent(promise::tryComplete));
        hub.onMessageReply(inboxId, notice -> check.run(), onChunk);
        check.run();
        poller[0] = vertx.setPeriodic(POLL_MS, id -> {
            if ((System.nanoTime() - started) / 1_000_000 > timeoutMs) {
                promise.tryFail(new ApiException(504, "reply_timeout", "no reply within " + timeoutMs
                        + " ms; the message (id " + inboxId + ") is stored and will still be answered"));
            } else {
                check.run();
            }
        });
        if (cancel != null) {
            cancel.onComplete(v -> promise.tryFail(new ApiException(499, "client_closed", "client went away")));
        }
        return promise.future().onComplete(r -> {
            hub.cancelMessage(inboxId);
            vertx.cancelTimer(poller[0]);
        });
    }
}
