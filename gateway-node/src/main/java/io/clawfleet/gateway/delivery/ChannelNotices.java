package io.clawfleet.gateway.delivery;

import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;

/**
 * Tells a chat of a channel account a short notice of Clawfleet's own (a pairing code, an approval, a quota reached),
 * outside the outbox: best effort, not retried, plain text.
 */
public interface ChannelNotices {

    /** @param chatId the chat on the account's platform, as its access rules name it ({@code SenderAccess.Message}) */
    Future<Void> tell(ChannelBot bot, String chatId, String text);
}
