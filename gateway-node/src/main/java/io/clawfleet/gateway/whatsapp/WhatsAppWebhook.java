package io.clawfleet.gateway.whatsapp;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.gateway.telegram.TelegramWebhook;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Objects;

/**
 * {@code /hooks/whatsapp/{id}}: the callback URL of a WhatsApp business number's webhook (Meta's Graph API webhooks).
 * Any gateway serves it.
 *
 * <ul>
 *   <li>{@code GET}, Meta's verification: {@code hub.mode=subscribe}, the verify token given at registration (its
 *       SHA-256 compared in constant time) and {@code hub.challenge}, answered with the challenge; anything else 403.</li>
 *   <li>{@code POST}, notifications: {@code X-Hub-Signature-256} must be {@code sha256=} and the hex HMAC-SHA256 of the raw
 *       body under the Meta app's secret, compared in constant time; an unknown id and a wrong signature get the same
 *       401. Text messages to this number go to the inbox in the order of the post, keyed by their {@code wamid} (Meta
 *       retries a post not answered {@code 200} for days, to any gateway: each message is one turn), then the post is
 *       answered {@code 200}. Status notifications (sent, delivered, read, failed) are counted, and a failed one
 *       logged with its error.</li>
 * </ul>
 */
public final class WhatsAppWebhook {

    public static final String PATH = "/hooks/whatsapp/:id";
    private static final Logger LOG = LoggerFactory.getLogger(WhatsAppWebhook.class);

    private final ChannelBotStore bots;
    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final WhatsAppApi whatsapp;
    private final Metrics metrics;

    public WhatsAppWebhook(ChannelBotStore bots, Ingest ingest, Deferral deferral, SenderAccess access, WhatsAppApi whatsapp,
                           Metrics metrics) {
        this.bots = Objects.requireNonNull(bots);
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.access = Objects.requireNonNull(access);
        this.whatsapp = Objects.requireNonNull(whatsapp);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** Meta's {@code X-Hub-Signature-256} of a body: {@code sha256=} and the hex HMAC-SHA256 under the app secret. */
    public static String signature(String appSecret, Buffer body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(appSecret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return "sha256=" + HexFormat.of().formatHex(mac.doFinal(body.getBytes()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }

    /** {@code GET}: Meta's check of the callback URL, when the webhook is configured. */
    public void verify(RoutingContext ctx) {
        long id = id(ctx);
        String token = ctx.request().getParam("hub.verify_token");
        String challenge = ctx.request().getParam("hub.challenge");
        if (id < 0 || token == null || token.length() > 256 || challenge == null || challenge.length() > 256
                || !"subscribe".equals(ctx.request().getParam("hub.mode"))) {
            forbid(ctx);
            return;
        }
        byte[] given = TelegramWebhook.digest(token);
        bots.webhookTarget(id, Channels.WHATSAPP).onComplete(found -> {
            if (found.failed()) {
                ctx.fail(ApiException.unavailable("the webhook cannot be checked now; try again", 5));
            } else if (found.result().isEmpty() || !MessageDigest.isEqual(given, found.result().get().secretHash())) {
                forbid(ctx);
            } else {
                ctx.response().setStatusCode(200).putHeader("content-type", "text/plain").end(challenge);
            }
        });
    }

    public void handle(RoutingContext ctx) {
        long id = id(ctx);
        String signature = ctx.request().getHeader("X-Hub-Signature-256");
        if (id < 0 || signature == null || signature.length() > 128) {
            refuse(ctx, id < 0 ? "id" : "signature");
            return;
        }
        Buffer body = ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
        bots.webhookTarget(id, Channels.WHATSAPP).onComplete(found -> {
            if (found.failed()) {
                String errorId = ApiException.errorId(found.cause(), found.cause() instanceof SecretException
                        ? "a WhatsApp number's secrets do not open [channel: " + id + "]" : "a WhatsApp number cannot be read [channel: " + id + "]");
                ctx.fail(ApiException.unavailable("the notification cannot be taken now (error id " + errorId + "); Meta sends it again", 5));
                return;
            }
            if (found.result().isEmpty() || !MessageDigest.isEqual(signature(found.result().get().bot().signingSecret(), body)
                    .getBytes(StandardCharsets.UTF_8), signature.getBytes(StandardCharsets.UTF_8))) {
                refuse(ctx, "signature");
                return;
            }
            ChannelBotStore.WebhookTarget target = found.result().get();
            JsonObject notification;
            try {
                notification = body.toJsonObject();
            } catch (RuntimeException e) {
                notification = null;
            }
            if (notification == null || !(notification.getValue("entry") instanceof JsonArray entries)) {
                ctx.fail(ApiException.badRequest("expected a WhatsApp webhook notification: a JSON object with 'entry'"));
                return;
            }
            if (!target.accepting()) {
                metrics.increment("clawfleet.whatsapp.webhook.deferred", "tenant", target.bot().tenantId());
                ctx.fail(ApiException.unavailable("this bot does not take messages now; Meta sends them again", 60));
                return;
            }
            Future<Void> taken;
            try {
                taken = take(target.bot(), entries);
            } catch (RuntimeException e) {
                taken = Future.failedFuture(e);
            }
            taken.onComplete(done -> {
                if (done.succeeded()) {
                    ctx.response().setStatusCode(200).end();
                } else if (done.cause() instanceof ApiException refused) {
                    ctx.fail(refused);
                } else {
                    LOG.warn("whatsapp notification not taken, Meta will send it again [tenant: {}, channel: {}]: {}",
                            target.bot().tenantId(), target.bot().id(), done.cause().getMessage());
                    ctx.fail(ApiException.unavailable("the notification cannot be taken now; Meta sends it again", 1));
                }
            });
        });
    }

    /** Every message and status of the notification, in its order: the next only once the one before is taken. */
    private Future<Void> take(ChannelBot bot, JsonArray entries) {
        Future<Void> chain = Future.succeededFuture();
        for (Object entry : entries) {
            JsonArray changes = entry instanceof JsonObject e && e.getValue("changes") instanceof JsonArray c ? c : new JsonArray();
            for (Object change : changes) {
                if (!(change instanceof JsonObject c) || !"messages".equals(c.getString("field"))
                        || !(c.getValue("value") instanceof JsonObject value)) {
                    continue;
                }
                JsonObject metadata = value.getValue("metadata") instanceof JsonObject m ? m : new JsonObject();
                if (!bot.accountUserId().equals(metadata.getValue("phone_number_id"))) {
                    chain = chain.compose(v -> skip(bot, "other_number"));
                    continue;
                }
                if (value.getValue("statuses") instanceof JsonArray statuses) {
                    statuses.forEach(status -> status(bot, status));
                }
                if (value.getValue("messages") instanceof JsonArray messages) {
                    for (Object message : messages) {
                        chain = chain.compose(v -> message instanceof JsonObject m ? message(bot, m) : skip(bot, "not_text"));
                    }
                }
            }
        }
        return chain;
    }

    private Future<Void> message(ChannelBot bot, JsonObject message) {
        String from = message.getValue("from") instanceof String f && f.matches("[0-9]{5,20}") ? f : null;
        String id = message.getValue("id") instanceof String i && i.matches("[A-Za-z0-9._=+/-]{1,256}") ? i : null;
        JsonObject text = message.getValue("text") instanceof JsonObject t ? t : null;
        String body = text != null && text.getValue("body") instanceof String b && !b.isBlank() ? b : null;
        if (from == null || id == null || !"text".equals(message.getString("type")) || body == null) {
            return skip(bot, "not_text"); // images, voice notes, reactions, buttons: not taken yet
        }
        return access.check(bot, new SenderAccess.Message(from, from, false, false)).compose(verdict -> switch (verdict) {
            case SenderAccess.Accept accept -> take(bot, from, id, body);
            case SenderAccess.Ignore ignore -> skip(bot, ignore.reason());
            case SenderAccess.Challenge challenge -> {
                if (challenge.challenge().sendCode()) {
                    whatsapp.sendText(bot.apiUrl(), bot.token(), bot.accountUserId(), from, SenderAccess.codeNotice(challenge.challenge()))
                            .onFailure(e -> LOG.warn("a pairing code was not sent [tenant: {}, channel: {}]: {}", bot.tenantId(),
                                    bot.id(), e.getMessage()));
                }
                yield skip(bot, "pairing");
            }
        });
    }

    private Future<Void> take(ChannelBot bot, String from, String messageId, String text) {
        String chatKey = bot.id() + ":" + from;
        String idempotencyKey = "w" + messageId;
        return deferral.deferIfOver(bot, Channels.WHATSAPP, chatKey, idempotencyKey, from, text, from)
                .compose(deferred -> deferred ? Future.<Void>succeededFuture()
                        : ingest.accept(bot.owner(), Channels.WHATSAPP, chatKey, idempotencyKey, from, text, null)
                                .onSuccess(accepted -> {
                                    metrics.increment("clawfleet.whatsapp.received", "tenant", bot.tenantId());
                                    // read receipts and "typing…": best effort, not waited for
                                    whatsapp.readAndTyping(bot.apiUrl(), bot.token(), bot.accountUserId(), messageId).onFailure(e ->
                                            LOG.debug("typing not shown [tenant: {}, channel: {}]: {}", bot.tenantId(), bot.id(),
                                                    e.getMessage()));
                                })
                                .mapEmpty());
    }

    /** What became of a message the bot sent; a failure is logged with WhatsApp's reason (the reply itself was sent). */
    private void status(ChannelBot bot, Object status) {
        if (!(status instanceof JsonObject s) || !(s.getValue("status") instanceof String state)
                || !state.matches("sent|delivered|read|failed|deleted")) {
            return;
        }
        metrics.increment("clawfleet.whatsapp.status", "status", state, "tenant", bot.tenantId());
        if ("failed".equals(state)) {
            JsonObject error = s.getValue("errors") instanceof JsonArray errors && !errors.isEmpty()
                    && errors.getValue(0) instanceof JsonObject e ? e : new JsonObject();
            LOG.warn("a whatsapp message was not delivered [tenant: {}, channel: {}, message: {}]: {} {}", bot.tenantId(), bot.id(),
                    s.getValue("id"), error.getValue("code"), error.getValue("title"));
        }
    }

    private Future<Void> skip(ChannelBot bot, String reason) {
        metrics.increment("clawfleet.whatsapp.skipped", "reason", reason, "tenant", bot.tenantId());
        return Future.succeededFuture();
    }

    private static long id(RoutingContext ctx) {
        try {
            return Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private void forbid(RoutingContext ctx) {
        metrics.increment("clawfleet.whatsapp.webhook.refused", "reason", "verify_token");
        ctx.fail(new ApiException(403, "forbidden", "the verify token does not match this webhook"));
    }

    private void refuse(RoutingContext ctx, String reason) {
        metrics.increment("clawfleet.whatsapp.webhook.refused", "reason", reason);
        ctx.fail(ApiException.unauthorized("this webhook does not exist or the request is not signed by its Meta app"));
    }
}
