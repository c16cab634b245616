package io.clawfleet.gateway.mcp;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.admission.TenantRates;
import io.clawfleet.gateway.admission.TokenQuotas;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.reply.ReplyWait;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.McpSessionStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.security.SecureRandom;
import java.time.Clock;
import java.util.Base64;
import java.util.Objects;

/**
 * The {@code send_message} tool: a message to the bot through the same intake as every channel (rates, token quotas,
 * the durable inbox), then its reply. Over SSE (when the client accepts it) the reply's pieces come as progress
 * notifications and the stream can be resumed on any gateway: an event id {@code <stream>:<n>} says the client has
 * the first n characters of the reply, {@code <stream>:end} that it has the result. The reply is the outbox row; a
 * resumed stream sends what the client lacks of it, then the result, and nothing twice.
 */
final class McpTurns {

    static final String CHANNEL = "mcp";
    private static final int MAX_TEXT = 100_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Ingest ingest;
    private final TenantRates rates;
    private final TokenQuotas quotas;
    private final ReplyWait replies;
    private final McpSessionStore sessions;
    private final String nodeId;

    McpTurns(Ingest ingest, TenantRates rates, TokenQuotas quotas, ReplyWait replies,
             McpSessionStore sessions, String nodeId) {
        this.ingest = Objects.requireNonNull(ingest);
        this.rates = Objects.requireNonNull(rates);
        this.quotas = Objects.requireNonNull(quotas);
        this.replies = Objects.requireNonNull(replies);
        this.sessions = Objects.requireNonNull(sessions);
        this.nodeId = Objects.requireNonNull(nodeId);
    }

    /** The chat a session talks in when a call names none. */
    static String defaultChat(McpSessionStore.Session session) {
        return "session-" + session.hash().substring(0, 16);
    }

    /** Runs a send_message call and answers it, as JSON or as a resumable SSE stream. */
    void send(RoutingContext ctx, McpSessionStore.Session session, String sessionId, Object requestId, JsonObject params,
              boolean sse) {
        BotRef bot = session.bot();
        JsonObject args = params.getValue("arguments") instanceof JsonObject a ? a : new JsonObject();
        String text = BotMcp.stringArg(args, "text", MAX_TEXT);
        String chat = args.getValue("chat") == null ? defaultChat(session) : BotMcp.stringArg(args, "chat", 256);
        String messageId = args.getValue("messageId") == null
                ? "mcp:" + session.hash().substring(0, 16) + ":" + Json.encode(requestId)
                : BotMcp.stringArg(args, "messageId", 256);
        Object progressToken = params.getValue("_meta") instanceof JsonObject meta ? meta.getValue("progressToken") : null;
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        // the request's own context: the intake may complete on another event loop
        io.vertx.core.Context context = ctx.vertx().getOrCreateContext();
        Future<Void> admitted = quotas.check(bot.tenantId())
                .recover(unreadable -> Future.succeededFuture(null)) // a quota is soft: its read failing lets the message in
                .compose(over -> over == null ? rates.admit(ctx)
                        : Future.failedFuture(TokenQuotas.refusal(over, Clock.systemUTC().instant())));
        admitted.compose(v -> ingest.accept(bot, CHANNEL, chat, messageId, "mcp:" + key.keyName(), text, sse ? nodeId : null,
                        null, key.keyId()))
                .onComplete(accepted -> context.runOnContext(x -> {
                    if (accepted.failed()) {
                        McpEndpoint.respond(ctx, JsonRpc.result(requestId, refusal(accepted.cause())));
                        return;
                    }
                    long inboxId = accepted.result().message().id();
                    if (!sse) {
                        Promise<Void> closed = Promise.promise();
                        ctx.response().closeHandler(c -> closed.tryComplete());
                        replies.await(bot.tenantId(), inboxId, null, closed.future()).onComplete(reply ->
                                McpEndpoint.respond(ctx, JsonRpc.result(requestId, finalResult(reply, inboxId))));
                        return;
                    }
                    String streamId = randomId();
                    sessions.openStream(new McpSessionStore.Stream(streamId, session.hash(), requestId, progressToken, inboxId), bot)
                            .onComplete(opened -> {
                                if (opened.failed()) {
                                    McpEndpoint.fail(ctx, requestId, new JsonRpc.Failure(JsonRpc.INTERNAL_ERROR,
                                            "the message (id " + inboxId + ") is stored and will be answered, but its stream "
                                                    + "could not be opened; read the reply with read_history"), 503);
                                    return;
                                }
                                Sse stream = Sse.start(ctx.vertx(), ctx.response(), sessionId);
                                stream.prime(streamId + ":0");
                                if (BotMcp.logs(session.logLevel(), "info")) {
                                    stream.send(null, JsonRpc.notification("notifications/message", new JsonObject()
                                            .put("level", "info").put("logger", "clawfleet")
                                            .put("data", "message " + inboxId + " accepted in chat " + chat)));
                                }
                                deliver(ctx, stream, bot, new McpSessionStore.Stream(streamId, session.hash(), requestId,
                                        progressToken, inboxId), 0, true);
                            });
                }));
    }

    /**
     * Resumes a stream (GET with Last-Event-ID) after the client's last event: {@code offset} characters of the reply
     * had reached it, or all of it when {@code done}.
     */
    void resume(RoutingContext ctx, McpSessionStore.Session session, String sessionId, McpSessionStore.Stream stream, int offset,
                boolean done) {
        Sse sse = Sse.start(ctx.vertx(), ctx.response(), sessionId);
        if (done) {
            sse.end();
            return;
        }
        deliver(ctx, sse, session.bot(), stream, offset, false);
    }

    /** Streams the reply's pieces (live ones only on the gateway that took the message) and then the result. */
    private void deliver(RoutingContext ctx, Sse sse, BotRef bot, McpSessionStore.Stream stream, int offset, boolean live) {
        int[] sent = {offset};
        Promise<Void> closed = Promise.promise();
        sse.onClose(closed::tryComplete);
        replies.await(bot.tenantId(), stream.inboxId(), !live || stream.progressToken() == null ? null : piece -> {
            if (!piece.delta().isEmpty()) {
                sent[0] += piece.delta().length();
                sse.send(stream.id() + ":" + sent[0], progress(stream.progressToken(), sent[0], piece.delta()));
            }
        }, closed.future()).onComplete(reply -> {
            if (!sse.open()) {
                return;
            }
            if (reply.succeeded()) {
                String text = reply.result().text();
                if (stream.progressToken() != null && sent[0] < text.length()) {
                    String rest = text.substring(sent[0]);
                    sent[0] = text.length();
                    sse.send(stream.id() + ":" + sent[0], progress(stream.progressToken(), sent[0], rest));
                }
            }
            sse.send(stream.id() + ":end", JsonRpc.result(stream.requestId(), finalResult(reply, stream.inboxId())));
            sse.end();
        });
    }

    private static JsonObject progress(Object token, int progress, String piece) {
        return JsonRpc.notification("notifications/progress", new JsonObject().put("progressToken", token)
                .put("progress", progress).put("message", piece));
    }

    /** The tool result of a finished wait: the reply, or why there is none yet (as a tool error the model can read). */
    private JsonObject finalResult(io.vertx.core.AsyncResult<OutboundReply> reply, long inboxId) {
        if (reply.succeeded()) {
            replies.delivered(reply.result().id());
            return BotMcp.toolResult(reply.result().text(), null);
        }
        String why = reply.cause() instanceof ApiException api ? api.getMessage() : "the reply could not be read";
        return BotMcp.toolError(why + " (message id " + inboxId + "; its reply will be in read_history)");
    }

    /** A message refused at intake: a tool error saying why and when to retry. */
    private static JsonObject refusal(Throwable cause) {
        if (cause instanceof ApiException api) {
            String retry = api.retryAfterSeconds() > 0 && !api.getMessage().toLowerCase(java.util.Locale.ROOT).contains("retry")
                    ? " Retry in " + api.retryAfterSeconds() + " s." : "";
            return BotMcp.toolError("The message was not accepted (" + api.code() + "): " + api.getMessage() + "." + retry);
        }
        return BotMcp.toolError("The message was not accepted (error id "
                + ApiException.errorId(cause, "an MCP message was not accepted") + "); send it again with the same messageId.");
    }

    static String randomId() {
        byte[] bytes = new byte[18];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }
}
