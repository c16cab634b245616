package io.clawfleet.gateway.telegram;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Objects;

/**
 * {@code POST /hooks/telegram/{id}}: where Telegram posts the updates of a bot in webhook mode. Any gateway serves it
 * (nothing is held in memory). The request must carry the secret given to {@code setWebhook} in
 * {@code X-Telegram-Bot-Api-Secret-Token}; its SHA-256 is compared, in constant time, with the digest kept for the
 * bot. An unknown id, a bot not in webhook mode and a wrong secret get the same 401. The answer is 200 only once the
 * message is in the inbox (or kept aside, over a quota): on anything else Telegram keeps the update and posts it
 * again, and the update id makes a second post (to this gateway or another) a no-op.
 */
public final class TelegramWebhook {

    public static final String PATH = "/hooks/telegram/:id";
    public static final String SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token";
    private static final Logger LOG = LoggerFactory.getLogger(TelegramWebhook.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final ChannelBotStore bots;
    private final TelegramUpdates updates;
    private final Metrics metrics;

    public TelegramWebhook(ChannelBotStore bots, TelegramUpdates updates, Metrics metrics) {
        this.bots = Objects.requireNonNull(bots);
        this.updates = Objects.requireNonNull(updates);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** A new webhook secret: 256 random bits in the characters Telegram allows ({@code A-Z a-z 0-9 _ -}). */
    public static String newSecret() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    public static byte[] digest(String secret) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    public void handle(RoutingContext ctx) {
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            refuse(ctx, "id");
            return;
        }
        String secret = ctx.request().getHeader(SECRET_HEADER);
        if (secret == null || secret.isEmpty() || secret.length() > 256) {
            refuse(ctx, "secret");
            return;
        }
        byte[] given = digest(secret);
        bots.webhookTarget(id, Channels.TELEGRAM).onComplete(found -> {
            if (found.failed()) {
                String errorId = ApiException.errorId(found.cause(), found.cause() instanceof SecretException
                        ? "a webhook bot's token does not open [channel: " + id + "]" : "a webhook bot cannot be read [channel: " + id + "]");
                ctx.fail(ApiException.unavailable("the update cannot be taken now (error id " + errorId + "); Telegram posts it again", 5));
                return;
            }
            if (found.result().isEmpty() || !MessageDigest.isEqual(given, found.result().get().secretHash())) {
                refuse(ctx, "secret");
                return;
            }
            ChannelBotStore.WebhookTarget target = found.result().get();
            if (!target.accepting()) {
                // A suspended tenant, a bot being deleted, a disabled account: Telegram keeps the update and retries.
                metrics.increment("clawfleet.telegram.webhook.deferred", "tenant", target.bot().tenantId());
                ctx.fail(ApiException.unavailable("this bot does not take updates now; Telegram keeps them and posts them again", 60));
                return;
            }
            JsonObject update;
            try {
                update = ctx.body().asJsonObject();
            } catch (RuntimeException e) {
                update = null;
            }
            if (update == null || !(update.getValue("update_id") instanceof Number)) {
                ctx.fail(ApiException.badRequest("expected a Telegram Update: a JSON object with a numeric update_id"));
                return;
            }
            updates.accept(target.bot(), update, "webhook").onComplete(accepted -> {
                if (accepted.succeeded()) {
                    ctx.response().setStatusCode(200).putHeader("content-type", "application/json").end("{}");
                } else if (accepted.cause() instanceof ApiException refused) {
                    ctx.fail(refused); // rate limit or backlog: 429/503 with Retry-After, Telegram retries
                } else {
                    LOG.warn("telegram update not taken, Telegram will post it again [tenant: {}, bot: {}]: {}",
                            target.bot().tenantId(), target.bot().name(), accepted.cause().getMessage());
                    ctx.fail(ApiException.unavailable("the update cannot be taken now; Telegram posts it again", 1));
                }
            });
        });
    }

    private void refuse(RoutingContext ctx, String reason) {
        metrics.increment("clawfleet.telegram.webhook.refused", "reason", reason);
        ctx.fail(ApiException.unauthorized("this webhook does not exist or the secret token does not match"));
    }
}
