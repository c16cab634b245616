package io.clawfleet.gateway.reply;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.bus.ReplyNotices;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.metrics.Metrics;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Wakes the requests waiting on this gateway when a reply is committed: long polls (by chat) and
 * callers holding a connection (by message id, with streamed chunks). Notices are best effort;
 * waiters re-read the outbox, which is the record. Thread-safe: HTTP handlers on any event loop
 * register waiters; each callback runs back on the waiter's own context.
 *
 * <p>A stream chunk is shown to a caller only when a worker of this cluster signed it for this gateway
 * ({@link BusSigner}), and, with bus certificates, tagged it with the key that worker and this gateway share
 * ({@link io.clawfleet.shared.bus.PeerTags}): a gateway or scheduler holds the cluster secret but cannot make that tag.
 * Reply notices are taken from workers alone the same way ({@link ReplyNotices}); anything else is dropped and
 * counted. A waiter may serve a notice it was woken by as the reply only when {@link #noticesAreAuthentic}; otherwise a
 * notice is a wake-up and the waiter reads the outbox (SECURITY.md rule 5).
 */
public final class ReplyHub {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ReplyHub.class);
    /** Chats whose last heard reply is kept; beyond it all is forgotten at once (a poll then reads, as without it). */
    static final int MAX_HEARD = 100_000;

    /** Something waiting; it is called at most once per notice, on its own context. */
    public static final class Waiter<T> {
        private final Context context;
        private final Consumer<T> callback;

        Waiter(Context context, Consumer<T> callback) {
            this.context = context;
            this.callback = callback;
        }

        void fire(T value) {
            context.runOnContext(v -> callback.accept(value));
        }
    }

    private final Vertx vertx;
    private final String nodeId;
    private final int maxWaiters;
    private final BusSigner signer;
    private final Metrics metrics;
    private final boolean noticesAreAuthentic;
    private final AtomicInteger waiting = new AtomicInteger();
    private final Map<String, Set<Waiter<OutboundReply>>> byChat = new ConcurrentHashMap<>();
    private final Map<Long, Waiter<OutboundReply>> byMessage = new ConcurrentHashMap<>();
    private final Map<Long, Waiter<StreamChunk>> chunks = new ConcurrentHashMap<>();
    /**
     * Per chat ({@link #chatRef}), the seq of the last reply this gateway heard a notice of since it last forgot
     * ({@link #forgetHeard}). It only ever spares a read: a long poll past exactly that seq knows nothing newer is in
     * the outbox (a newer reply's notice would come after it) and waits for the notice instead of reading first.
     */
    private final Map<String, Long> heard = new ConcurrentHashMap<>();
    /** The messages ({@code inReplyTo}) whose reply notice this gateway heard lately; see {@link #heardReplyTo}. */
    private final Map<Long, Boolean> heardReplyTo = new ConcurrentHashMap<>();
    private final List<Consumer<OutboundReply>> noticeListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private MessageConsumer<OutboundReply> replies;
    private MessageConsumer<StreamChunk> streams;

    public ReplyHub(Vertx vertx, String nodeId, int maxWaiters, BusSigner signer, Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.maxWaiters = maxWaiters;
        this.signer = Objects.requireNonNull(signer);
        this.metrics = Objects.requireNonNull(metrics);
        this.noticesAreAuthentic = !vertx.isClustered() || signer.peers().on();
    }

    /**
     * Whether every reply notice that reaches a waiter was sent by a worker with the reply it committed, so that a waiter
     * may serve it without reading the outbox: on a bus no other process can reach (a node that runs alone), or on one
     * where each notice carries a worker's tag for this gateway ({@link ReplyNotices}; anything else is dropped before
     * waiters see it). Not with {@code --insecure-cluster}: anything on the cluster network can publish a notice there,
     * and a notice only wakes its waiter, which reads the reply from the outbox.
     */
    public boolean noticesAreAuthentic() {
        return noticesAreAuthentic;
    }

    /** Counts a reply served from its notice, without a read ({@code clawfleet_gateway_replies_pushed_total}). */
    public void servedFromNotice(OutboundReply reply) {
        metrics.increment("clawfleet.gateway.replies.pushed", "tenant", reply.tenantId());
    }

    public Future<Void> start() {
        Future<MessageConsumer<OutboundReply>> repliesReady = Consumers.register(vertx, Addresses.REPLY_READY, this::notice);
        Future<MessageConsumer<StreamChunk>> streamsReady = Consumers.register(vertx, Addresses.stream(nodeId), this::chunk);
        return Future.all(repliesReady, streamsReady).onSuccess(all -> {
            replies = repliesReady.result();
            streams = streamsReady.result();
        }).mapEmpty();
    }

    /** A reply notice off the bus: taken only from a worker ({@link ReplyNotices}), then told to waiters and listeners. */
    void notice(Message<OutboundReply> message) {
        OutboundReply reply = message.body();
        BusSigner.Verdict verdict = ReplyNotices.verify(signer, message);
        if (verdict != BusSigner.Verdict.VALID) {
            LOG.warn("reply notice dropped, not shown to come from a worker [reply: {}, reason: {}]", reply.id(), verdict.id());
            metrics.increment("clawfleet.bus.rejected", "message", BusSigner.REPLY, "reason", verdict.id());
            return;
        }
        notify(reply);
        noticeListeners.forEach(listener -> listener.accept(reply));
    }

    /** Also tells {@code listener} of every reply notice taken (the push channels' delivery claims on it). */
    public void onNotice(Consumer<OutboundReply> listener) {
        noticeListeners.add(Objects.requireNonNull(listener));
    }

    void chunk(Message<StreamChunk> message) {
        StreamChunk chunk = message.body();
        BusSigner.Verdict verdict = signer.verifyFrom(message.headers(), BusSigner.CHUNK, nodeId, chunk,
                io.clawfleet.shared.config.ClawfleetConfig.Role.WORKER);
        if (verdict != BusSigner.Verdict.VALID) {
            LOG.warn("stream chunk dropped [message: {}, index: {}, reason: {}]", chunk.inboxId(), chunk.index(), verdict.id());
            metrics.increment("clawfleet.bus.rejected", "message", BusSigner.CHUNK, "reason", verdict.id());
            return;
        }
        Waiter<StreamChunk> waiter = chunks.get(chunk.inboxId());
        if (waiter != null) {
            waiter.fire(chunk);
        }
    }

    public Future<Void> stop() {
        return Future.all(replies == null ? Future.succeededFuture() : replies.unregister(),
                streams == null ? Future.succeededFuture() : streams.unregister()).mapEmpty();
    }

    public static String chatRef(BotRef bot, String channel, String chatKey) {
        return bot.tenantId() + '\u0000' + bot.botId() + '\u0000' + channel + '\u0000' + chatKey;
    }

    /** Whether another waiter fits; beyond the cap the caller answers 503 rather than queue without bound. */
    public boolean full() {
        return waiting.get() >= maxWaiters;
    }

    public int waiting() {
        return waiting.get();
    }

    /** Waits for any new reply in a chat; returns the handle to {@link #cancelChat}. */
    public Waiter<OutboundReply> onChatReply(String chatRef, Consumer<OutboundReply> callback) {
        Waiter<OutboundReply> waiter = new Waiter<>(vertx.getOrCreateContext(), callback);
        byChat.computeIfAbsent(chatRef, k -> ConcurrentHashMap.newKeySet()).add(waiter);
        waiting.incrementAndGet();
        return waiter;
    }

    public void cancelChat(String chatRef, Waiter<OutboundReply> waiter) {
        byChat.computeIfPresent(chatRef, (k, set) -> {
            if (set.remove(waiter)) {
                waiting.decrementAndGet();
            }
            return set.isEmpty() ? null : set;
        });
    }

    /** Waits for the reply to one message, and for its streamed chunks if {@code onChunk} is given. */
    public void onMessageReply(long inboxId, Consumer<OutboundReply> onReply, Consumer<StreamChunk> onChunk) {
        Context context = vertx.getOrCreateContext();
        if (byMessage.put(inboxId, new Waiter<>(context, onReply)) == null) {
            waiting.incrementAndGet();
        }
        if (onChunk != null) {
            chunks.put(inboxId, new Waiter<>(context, onChunk));
        }
    }

    public void cancelMessage(long inboxId) {
        if (byMessage.remove(inboxId) != null) {
            waiting.decrementAndGet();
        }
        chunks.remove(inboxId);
    }

    /**
     * Whether this gateway heard the notice of the chat's reply {@code after} and of none past it, so nothing newer is in
     * the outbox unless a notice was lost (the poll's deadline read, and the backstop, cover that). A notice is only
     * ever a reason to read: a forged one can make a poll read, never skip a read it needs.
     */
    public boolean heardLast(String chatRef, long after) {
        Long seq = heard.get(chatRef);
        return seq != null && seq == after;
    }

    /**
     * Whether this gateway heard the notice of the reply to message {@code inboxId} lately (the last
     * {@value #MAX_HEARD} or so). A caller waiting for the reply to a message it has just put in the inbox registers
     * first, then asks: if the notice came before it registered, it reads; if not, the notice (or the wait's periodic
     * read, when a notice is lost) wakes it.
     */
    public boolean heardReplyTo(long inboxId) {
        return heardReplyTo.containsKey(inboxId);
    }

    /** Forgets what was heard: notices may have been missed (a member came or went, a bus connection with it). */
    public void forgetHeard() {
        heard.clear();
    }

    void notify(OutboundReply reply) {
        String ref = chatRef(reply.bot(), reply.channel(), reply.chatKey());
        // Before the waiters fire: a poll that registers after they were looked up then sees this seq and reads.
        heard.merge(ref, reply.seq(), Math::max);
        if (heard.size() > MAX_HEARD) {
            heard.clear();
        }
        heardReplyTo.put(reply.inReplyTo(), Boolean.TRUE);
        if (heardReplyTo.size() > MAX_HEARD) {
            heardReplyTo.clear();
        }
        Set<Waiter<OutboundReply>> waiters = byChat.get(ref);
        if (waiters != null) {
            waiters.forEach(w -> w.fire(reply));
        }
        Waiter<OutboundReply> waiter = byMessage.get(reply.inReplyTo());
        if (waiter != null) {
            waiter.fire(reply);
        }
    }
}
