package io.clawfleet.gateway.admission;

import io.clawfleet.gateway.delivery.ChannelNotices;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.DeferredStore;
import io.vertx.core.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;

/**
 * A channel message whose tenant is over a token quota (issue 14) is not refused (a chat cannot retry) and not sent
 * to a model: it is kept in {@code deferred_messages} until the tenant replays it or it expires, and the chat is told
 * once per quota period with a short notice ({@code telegram.quotaNotice}), not once per message.
 */
public final class Deferral {

    private static final Logger LOG = LoggerFactory.getLogger(Deferral.class);

    private final TokenQuotas quotas;
    private final DeferredStore deferred;
    private final ChannelNotices notices;
    private final String notice;
    private final Metrics metrics;

    public Deferral(TokenQuotas quotas, DeferredStore deferred, ChannelNotices notices, String notice, Metrics metrics) {
        this.quotas = Objects.requireNonNull(quotas);
        this.deferred = Objects.requireNonNull(deferred);
        this.notices = Objects.requireNonNull(notices);
        this.notice = Objects.requireNonNull(notice);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /**
     * Keeps a channel message aside when its tenant is over a quota (true), telling the chat the first time in the
     * period; false when it may go to the inbox.
     *
     * @param chatId the chat on the platform the notice goes to
     */
    public Future<Boolean> deferIfOver(ChannelBot bot, String channel, String chatKey, String idempotencyKey, String senderId,
                                       String text, String chatId) {
        return quotas.check(bot.tenantId()).compose(over -> {
            if (over == null) {
                return Future.succeededFuture(false);
            }
            return deferred.defer(bot.owner(), channel, chatKey, idempotencyKey, senderId, text, over.limit())
                    .compose(kept -> {
                        if (kept) {
                            metrics.increment("clawfleet.messages.deferred", "tenant", bot.tenantId(), "bot", bot.botId(),
                                    "reason", over.limit());
                        }
                        return deferred.noticeOnce(bot.owner(), channel, chatKey, over.resetsAt());
                    })
                    .compose(first -> {
                        if (first) {
                            // Best effort: the message is kept whether or not the chat hears of it.
                            notices.tell(bot, chatId, notice).onFailure(e -> LOG.warn(
                                    "over-quota notice not sent [tenant: {}, bot: {}, chat: {}]: {}", bot.tenantId(),
                                    bot.botId(), chatKey, e.getMessage()));
                        }
                        return Future.succeededFuture(true);
                    });
        });
    }
}
