package io.clawfleet.gateway.webhooks;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.gateway.delivery.ChannelNotices;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * {@code POST /hooks/inbound/{id}}: the inbound generic webhook channel. The tenant's own systems post a message to a
 * bot, signed per the Standard Webhooks spec with the account's secret: {@code webhook-id}, {@code webhook-timestamp}
 * (within {@link #WINDOW_SECONDS} of now) and {@code webhook-signature} (space-separated {@code v1,<base64>}, one of
 * which must match, in constant time). The body is {@code {"chatId", "text", "senderId"?}}; the {@code webhook-id} is
 * the idempotency key, so a retried post is one message. Any gateway serves it; the answer is {@code 202} once the
 * message is durable. Replies are not pushed anywhere by a channel: they are the bot's {@code reply.sent} events, to its
 * webhook endpoints.
 */
public final class InboundWebhook {

    public static final String PATH = "/hooks/inbound/:id";
    static final long WINDOW_SECONDS = 300;

    private final ChannelBotStore bots;
    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final Metrics metrics;
    private final LongSupplier epochSeconds;

    public InboundWebhook(ChannelBotStore bots, Ingest ingest, Deferral deferral, SenderAccess access, Metrics metrics) {
        this.bots = Objects.requireNonNull(bots);
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.access = Objects.requireNonNull(access);
        this.metrics = Objects.requireNonNull(metrics);
        this.epochSeconds = () -> System.currentTimeMillis() / 1000;
    }

    /** Notices (a pairing code, a quota reached) have nowhere to go on this channel but the bot's webhook events. */
    public static final ChannelNotices NO_NOTICES = (bot, chatId, text) -> Future.succeededFuture();

    public void handle(RoutingContext ctx) {
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            refuse(ctx, "id");
            return;
        }
        String messageId = ctx.request().getHeader("webhook-id");
        String timestamp = ctx.request().getHeader("webhook-timestamp");
        String signatures = ctx.request().getHeader("webhook-signature");
        if (messageId == null || !messageId.matches("[A-Za-z0-9._:=-]{1,128}") || timestamp == null
                || !timestamp.matches("[0-9]{1,12}") || signatures == null || signatures.length() > 1_024) {
            refuse(ctx, "signature");
            return;
        }
        if (Math.abs(epochSeconds.getAsLong() - Long.parseLong(timestamp)) > WINDOW_SECONDS) {
            refuse(ctx, "stale");
            return;
        }
        Buffer body = ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
        bots.webhookTarget(id, Channels.WEBHOOK).onComplete(found -> {
            if (found.failed()) {
                String errorId = ApiException.errorId(found.cause(), found.cause() instanceof SecretException
                        ? "an inbound webhook's secret does not open [channel: " + id + "]" : "an inbound webhook cannot be read [channel: " + id + "]");
                ctx.fail(ApiException.unavailable("the message cannot be taken now (error id " + errorId + "); post it again", 5));
                return;
            }
            if (found.result().isEmpty() || !signed(found.result().get().bot().signingSecret(), messageId, Long.parseLong(timestamp),
                    body.toString(StandardCharsets.UTF_8), signatures)) {
                refuse(ctx, "signature");
                return;
            }
            take(ctx, found.result().get(), messageId, body);
        });
    }

    /** Whether one of the space-separated {@code v1,...} signatures is the message's, compared in constant time. */
    static boolean signed(String secret, String id, long timestamp, String body, String signatures) {
        byte[] expected = StandardWebhooks.sign(secret, id, timestamp, body).getBytes(StandardCharsets.UTF_8);
        boolean any = false;
        for (String given : signatures.split(" ")) {
            any |= MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8));
        }
        return any;
    }

    private void take(RoutingContext ctx, ChannelBotStore.WebhookTarget target, String messageId, Buffer body) {
        JsonObject message;
        try {
            message = body.toJsonObject();
        } catch (RuntimeException e) {
            message = null;
        }
        String chatId = message != null && message.getValue("chatId") instanceof String c && c.matches("[A-Za-z0-9._:@+=-]{1,128}") ? c
                : null;
        String text = message != null && message.getValue("text") instanceof String t && !t.isBlank() ? t : null;
        Object senderValue = message == null ? null : message.getValue("senderId");
        String sender = senderValue == null ? chatId : senderValue instanceof String s && !s.isBlank() && s.length() <= 128 ? s : null;
        if (chatId == null || text == null || sender == null) {
            ctx.fail(ApiException.badRequest("expected {\"chatId\": 1 to 128 of letters, digits and ._:@+=-, \"text\": not blank, "
                    + "\"senderId\"?: 1 to 128 characters}"));
            return;
        }
        if (text.length() > 100_000) {
            ctx.fail(ApiException.badRequest("field 'text' is longer than 100,000 characters"));
            return;
        }
        ChannelBot bot = target.bot();
        if (!target.accepting()) {
            metrics.increment("clawfleet.inbound.webhook.deferred", "tenant", bot.tenantId());
            ctx.fail(ApiException.unavailable("this bot does not take messages now; post it again later", 60));
            return;
        }
        String chatKey = bot.id() + ":" + chatId;
        String idempotencyKey = "h" + messageId;
        access.check(bot, new SenderAccess.Message(sender, chatId, false, false))
                .compose(verdict -> verdict instanceof SenderAccess.Accept
                        ? deferral.deferIfOver(bot, Channels.WEBHOOK, chatKey, idempotencyKey, sender, text, chatId)
                                .compose(deferred -> deferred ? Future.succeededFuture("deferred")
                                        : ingest.accept(bot.owner(), Channels.WEBHOOK, chatKey, idempotencyKey, sender, text, null)
                                                .map("accepted"))
                        : Future.succeededFuture("not_allowed"))
                .onComplete(done -> {
                    if (done.failed()) {
                        ctx.fail(done.cause() instanceof ApiException api ? api
                                : ApiException.unavailable("the message cannot be taken now; post it again", done.cause(), 1));
                        return;
                    }
                    metrics.increment("clawfleet.inbound.webhook.received", "tenant", bot.tenantId(), "outcome", done.result());
                    ctx.response().setStatusCode(202).putHeader("content-type", "application/json")
                            .end(new JsonObject().put("status", done.result()).put("chatId", chatId).encode());
                });
    }

    private void refuse(RoutingContext ctx, String reason) {
        metrics.increment("clawfleet.inbound.webhook.refused", "reason", reason);
        ctx.fail(ApiException.unauthorized("this webhook does not exist or the request is not signed with its secret"));
    }
}
