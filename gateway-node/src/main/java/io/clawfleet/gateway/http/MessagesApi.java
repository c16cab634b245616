package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.Set;

/**
 * The native API: {@code POST /api/v1/messages} (idempotent on messageId) and
 * {@code GET /api/v1/chats/{chatId}/replies} (long poll on the outbox).
 */
public final class MessagesApi {

    public static final String CHANNEL = "api";
    private static final Set<String> FIELDS = Set.of("chatId", "senderId", "messageId", "text");
    private static final int MAX_ID = 256;
    private static final int MAX_REPLIES = 500;

    /** How often a long poll reads the outbox itself while reply notices cannot reach this gateway. */
    public static final long BACKSTOP_MS = 2_000;

    private final Ingest ingest;
    private final OutboxStore outbox;
    private final ReplyHub hub;
    private final int maxWaitSeconds;
    private final BooleanSupplier noticesCannotArrive;
    /** The long polls parked now, for {@link #backstopTick}. */
    private final Set<LongPoll> parked = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * @param noticesCannotArrive whether this gateway can get no reply notice now (it sees no worker: it is cut off
     *                            from them, or none is up); long polls then read the outbox at each
     *                            {@link #backstopTick}
     */
    public MessagesApi(Ingest ingest, OutboxStore outbox, ReplyHub hub, int maxWaitSeconds, BooleanSupplier noticesCannotArrive) {
        this.ingest = Objects.requireNonNull(ingest);
        this.outbox = Objects.requireNonNull(outbox);
        this.hub = Objects.requireNonNull(hub);
        this.maxWaitSeconds = maxWaitSeconds;
        this.noticesCannotArrive = Objects.requireNonNull(noticesCannotArrive);
    }

    public void post(RoutingContext ctx) {
        JsonRequest body = JsonRequest.parse(ctx, FIELDS);
        String chatId = body.requiredString("chatId", MAX_ID);
        String senderId = body.requiredString("senderId", MAX_ID);
        String messageId = body.requiredString("messageId", MAX_ID);
        String text = body.requiredString("text", Integer.MAX_VALUE);
        ingest.accept(BotScope.bot(ctx), CHANNEL, chatId, messageId, senderId, text, null, null, ApiKeyAuth.key(ctx).keyId())
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(result.cause());
                        return;
                    }
                    var accepted = result.result();
                    ctx.response().setStatusCode(accepted.created() ? 202 : 200)
                            .putHeader("content-type", "application/json")
                            .end(new JsonObject()
                                    .put("id", Long.toString(accepted.message().id()))
                                    .put("partition", accepted.message().partition())
                                    .put("seq", accepted.message().seq())
                                    .encode());
                });
    }

    public void replies(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        String chatId = ctx.pathParam("chatId");
        if (chatId == null || chatId.isBlank() || chatId.length() > MAX_ID) {
            throw ApiException.badRequest("chatId in the path must be 1 to " + MAX_ID + " characters");
        }
        long after = queryLong(ctx, "after", 0, 0, Long.MAX_VALUE);
        int wait = (int) queryLong(ctx, "wait", 0, 0, maxWaitSeconds);
        int limit = (int) queryLong(ctx, "limit", 100, 1, MAX_REPLIES);
        if (wait == 0) {
            outbox.repliesAfter(bot, CHANNEL, chatId, after, limit).onComplete(r -> respond(ctx, r));
            return;
        }
        if (hub.full()) {
            throw ApiException.unavailable("too many requests are waiting for replies on this gateway", 1);
        }
        new LongPoll(ctx, bot, chatId, after, limit).start(wait);
    }

    /**
     * The backstop of long polls, called every {@link #BACKSTOP_MS} by the gateway (one timer for all polls): while no
     * reply notice can reach this gateway (cut off from every worker, or none is up), each parked poll reads the outbox
     * itself, on its own event loop; without it a reply found by a worker's sweep and committed would wait for the
     * poll's deadline (up to maxWaitSeconds). Otherwise it costs one check.
     */
    public void backstopTick() {
        if (parked.isEmpty() || !noticesCannotArrive.getAsBoolean()) {
            return;
        }
        for (LongPoll poll : parked) {
            poll.context.runOnContext(v -> poll.readBackstop());
        }
    }

    /**
     * One long poll. It subscribes before it reads, so a reply committed in between wakes it instead
     * of being missed; then it answers on the first reply notice or at the deadline, whichever is
     * first: from the outbox, or with the notice itself when it is the chat's next reply and notices are authentic
     * ({@link ReplyHub#noticesAreAuthentic}). It skips the first read when the client already has the last reply
     * this gateway heard of ({@link ReplyHub#heardLast}). All its callbacks run on the request's event loop.
     */
    private final class LongPoll {
        private final RoutingContext ctx;
        private final BotRef bot;
        private final String chatId;
        private final long after;
        private final int limit;
        private final String chatRef;
        private final io.vertx.core.Context context;
        private boolean done;
        private boolean reading;
        private ReplyHub.Waiter<OutboundReply> waiter;
        private long timer = -1;

        LongPoll(RoutingContext ctx, BotRef bot, String chatId, long after, int limit) {
            this.ctx = ctx;
            this.bot = bot;
            this.chatId = chatId;
            this.after = after;
            this.limit = limit;
            this.chatRef = ReplyHub.chatRef(bot, CHANNEL, chatId);
            this.context = ctx.vertx().getOrCreateContext();
        }

        void start(int waitSeconds) {
            waiter = hub.onChatReply(chatRef, reply -> {
                if (reply.seq() == after + 1 && hub.noticesAreAuthentic()) {
                    // The next reply of this very chat (the waiter is keyed by tenant, bot, channel and chat), sent by
                    // the worker that committed it: served as it came, the read spared. Later replies already in the
                    // outbox are the client's next poll.
                    answer(reply);
                } else if (reply.seq() > after) {
                    // Otherwise a notice is a wake-up, never the answer: with --insecure-cluster anything on the
                    // cluster network can publish one, so what the client gets is read from the outbox (issue 22,
                    // attack 4; SECURITY.md rule 5).
                    finish();
                }
            });
            ctx.response().closeHandler(v -> cancel());
            if (hub.heardLast(chatRef, after) && !noticesCannotArrive.getAsBoolean()) {
                // The client has the last reply this gateway heard of: the next one's notice wakes the poll, so the
                // read that would find nothing is spared (one statement per message in a chat's usual rhythm).
                park(waitSeconds);
                return;
            }
            outbox.repliesAfter(bot, CHANNEL, chatId, after, limit).onComplete(result -> {
                if (result.failed() || !result.result().isEmpty()) {
                    if (cancel()) {
                        respond(ctx, result);
                    }
                } else if (!done) {
                    park(waitSeconds);
                }
            });
        }

        private void park(int waitSeconds) {
            timer = ctx.vertx().setTimer(waitSeconds * 1000L, id -> finish());
            parked.add(this);
        }

        /** One read of the outbox by the backstop (one at a time); answers if it found a reply. */
        private void readBackstop() {
            if (done || reading) {
                return;
            }
            reading = true;
            outbox.repliesAfter(bot, CHANNEL, chatId, after, limit).onComplete(result -> {
                reading = false;
                if (result.succeeded() && !result.result().isEmpty() && cancel()) {
                    respond(ctx, result);
                }
            });
        }

        private void answer(OutboundReply reply) {
            if (cancel()) {
                hub.servedFromNotice(reply);
                respond(ctx, Future.succeededFuture(List.of(reply)));
            }
        }

        private void finish() {
            if (cancel()) {
                outbox.repliesAfter(bot, CHANNEL, chatId, after, limit).onComplete(r -> respond(ctx, r));
            }
        }

        /** Ends the wait; true only for the first caller. */
        private boolean cancel() {
            if (done) {
                return false;
            }
            done = true;
            hub.cancelChat(chatRef, waiter);
            parked.remove(this);
            if (timer >= 0) {
                ctx.vertx().cancelTimer(timer);
            }
            return true;
        }
    }

    private static void respond(RoutingContext ctx, io.vertx.core.AsyncResult<List<OutboundReply>> result) {
        if (ctx.response().ended() || ctx.response().closed()) {
            return;
        }
        if (result.failed()) {
            ctx.fail(ApiException.unavailable("replies cannot be read right now (database unavailable)", 1));
            return;
        }
        JsonArray items = new JsonArray();
        for (OutboundReply reply : result.result()) {
            items.add(new JsonObject().put("seq", reply.seq()).put("inReplyTo", Long.toString(reply.inReplyTo()))
                    .put("text", reply.text()).put("at", reply.at().toString()));
        }
        ctx.response().putHeader("content-type", "application/json")
                .end(new JsonObject().put("replies", items).encode());
    }

    static long queryLong(RoutingContext ctx, String name, long defaultValue, long min, long max) {
        String raw = ctx.request().getParam(name);
        if (raw == null || raw.isEmpty()) {
            return defaultValue;
        }
        try {
            long value = Long.parseLong(raw);
            if (value < min || value > max) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("query parameter '" + name + "' must be an integer from " + min + " to " + max + ", got '" + raw + "'");
        }
    }
}
