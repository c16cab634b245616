package io.clawfleet.gateway.reply;

import io.clawfleet.shared.db.GroupCommit;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Waits for the committed reply to one message: woken by the reply notice, backed by a periodic outbox read (notices
 * are best effort, and a caller that moved to another gateway gets none), bounded by the reply timeout. The notice
 * itself is served, without a read, only when it is authentic ({@link ReplyHub#noticesAreAuthentic}) and names this
 * wait's tenant and message; any other notice only wakes the wait, which then serves the outbox row.
 */
public final class ReplyWait {

    private static final long POLL_MS = 2_000;
    /** Most replies one delivered mark commits. */
    private static final int MAX_MARKS = 512;

    private final Vertx vertx;
    private final ReplyHub hub;
    private final OutboxStore outbox;
    private final long timeoutMs;
    private final java.util.function.BooleanSupplier noticesCanArrive;
    private final GroupCommit<String, Void> marks;

    /**
     * @param noticesCanArrive whether reply notices can reach this gateway now (it sees a worker); only then may a wait
     *                         for a message just put in the inbox skip its first read
     */
    public ReplyWait(Vertx vertx, ReplyHub hub, OutboxStore outbox, long timeoutMs, java.util.function.BooleanSupplier noticesCanArrive) {
        this.vertx = Objects.requireNonNull(vertx);
        this.hub = Objects.requireNonNull(hub);
        this.outbox = Objects.requireNonNull(outbox);
        this.timeoutMs = timeoutMs;
        this.noticesCanArrive = Objects.requireNonNull(noticesCanArrive);
        this.marks = new GroupCommit<>(vertx, outbox::markDelivered,
                ids -> outbox.markAllDelivered(ids).map(v -> ids.stream().map(id -> Future.<Void>succeededFuture()).toList()),
                id -> id, id -> "delivered", MAX_MARKS, 1);
    }

    /**
     * Marks a reply delivered: the caller got it. Marks that arrive while one is being committed are committed together
     * ({@link GroupCommit}), one write instead of one per reply under load. Best effort, as before: a mark that fails
     * leaves the reply pending, which only the undelivered-reply alert and retention see.
     */
    public void delivered(String replyId) {
        marks.submit(replyId);
    }

    public long timeoutMs() {
        return timeoutMs;
    }

    /**
     * The reply to {@code inboxId}; failed with 504 {@code reply_timeout} after the timeout. {@code onChunk} (may be null)
     * gets the streamed pieces that reach this gateway. Completing {@code cancel} (may be null) ends the wait early.
     */
    public Future<OutboundReply> await(String tenantId, long inboxId, Consumer<StreamChunk> onChunk, Future<?> cancel) {
        return await(tenantId, inboxId, false, onChunk, cancel);
    }

    /**
     * As {@link #await(String, long, Consumer, Future)}; {@code fresh} says the message was put in the inbox by this very
     * request (not a repeat of one already there). Its reply cannot be in the outbox before its notice is sent, so,
     * when notices can arrive and this gateway has not heard that one yet, the first read (which would find nothing)
     * is spared: the notice wakes the wait, or, if it is lost, the periodic read finds the reply.
     */
    public Future<OutboundReply> await(String tenantId, long inboxId, boolean fresh, Consumer<StreamChunk> onChunk, Future<?> cancel) {
        return wait(tenantId, inboxId, fresh, onChunk, cancel, () -> outbox.replyTo(tenantId, inboxId), notice -> notice);
    }

    /**
     * As {@link #await(String, long, boolean, Consumer, Future)}, with the tokens the turn used: those its notice carries
     * when it may be served, else read with the reply. A notice without them (a worker older than the field) is a
     * wake-up only.
     */
    public Future<Map.Entry<OutboundReply, UsageStore.TurnTokens>> awaitWithTokens(String tenantId, long inboxId, boolean fresh,
                                                                                   Consumer<StreamChunk> onChunk, Future<?> cancel) {
        return wait(tenantId, inboxId, fresh, onChunk, cancel, () -> outbox.replyWithTokens(tenantId, inboxId),
                notice -> notice.tokens() == null ? null : Map.entry(notice, notice.tokens()));
    }

    /**
     * @param served what the wait completes with when woken by a notice it may serve ({@link #servable}), or null when
     *               that notice lacks what the wait needs; the wait then reads
     */
    private <T> Future<T> wait(String tenantId, long inboxId, boolean fresh, Consumer<StreamChunk> onChunk, Future<?> cancel,
                               Supplier<Future<Optional<T>>> read, Function<OutboundReply, T> served) {
        Promise<T> promise = Promise.promise();
        long started = System.nanoTime();
        long[] poller = {-1};
        Runnable check = () -> read.get().onSuccess(found -> found.ifPresent(promise::tryComplete));
        hub.onMessageReply(inboxId, notice -> {
            T value = servable(notice, hub.noticesAreAuthentic(), tenantId, inboxId) ? served.apply(notice) : null;
            if (value != null) {
                if (promise.tryComplete(value)) {
                    hub.servedFromNotice(notice);
                }
            } else {
                check.run();
            }
        }, onChunk);
        // Registered before asking: a notice that came earlier is in heardReplyTo, a later one wakes the waiter.
        if (!fresh || hub.heardReplyTo(inboxId) || !noticesCanArrive.getAsBoolean()) {
            check.run();
        }
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

    /**
     * Whether {@code notice} may be served as the reply to message {@code inboxId} of {@code tenantId} without reading
     * the outbox: it is authentic (a worker sent it with the row it committed) and it answers exactly that message of
     * that tenant. Anything else is a wake-up only.
     */
    static boolean servable(OutboundReply notice, boolean authentic, String tenantId, long inboxId) {
        return authentic && notice.inReplyTo() == inboxId && notice.tenantId().equals(tenantId);
    }
}
