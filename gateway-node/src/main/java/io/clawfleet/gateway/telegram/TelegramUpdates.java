package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * Takes one Telegram update into the inbox (or aside, while the bot's tenant is over a quota), whichever way it came:
 * polled or posted to the webhook. The idempotency key is the update's own id, so an update that comes twice (a
 * poll re-read after a crash, a webhook retried by Telegram or to another gateway, a switch between polling and
 * webhook) is one message. A refusal (rate limit, backlog) fails the future with an
 * {@link io.clawfleet.shared.http.ApiException} that says when to come back.
 */
public final class TelegramUpdates {

    private final Ingest ingest;
    private final Deferral deferral;
    private final Metrics metrics;

    /** @param deferral keeps a message aside, instead of the inbox, while its tenant is over a quota */
    public TelegramUpdates(Ingest ingest, Deferral deferral, Metrics metrics) {
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** @param via how the update came ("poll" or "webhook"), for the metrics */
    public Future<Void> accept(ChannelBot bot, JsonObject update, String via) {
        JsonObject message = update.getJsonObject("message");
        if (message == null || !(message.getValue("text") instanceof String text) || text.isBlank()) {
            metrics.increment("clawfleet.telegram.skipped", "reason", "not_text");
            return Future.succeededFuture();
        }
        JsonObject chat = message.getJsonObject("chat", new JsonObject());
        JsonObject from = message.getJsonObject("from", new JsonObject());
        String chatKey = bot.id() + ":" + chat.getValue("id");
        String sender = String.valueOf(from.getValue("id", chat.getValue("id")));
        String idempotencyKey = "u" + update.getLong("update_id");
        return deferral.deferIfOver(bot, Channels.TELEGRAM, chatKey, idempotencyKey, sender, text, String.valueOf(chat.getValue("id")))
                .compose(deferred -> deferred ? Future.<Void>succeededFuture()
                        : ingest.accept(bot.owner(), Channels.TELEGRAM, chatKey, idempotencyKey, sender, text, null)
                                .onSuccess(accepted -> metrics.increment("clawfleet.telegram.received", "tenant", bot.tenantId(),
                                        "via", via))
                                .mapEmpty());
    }
}
