package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Takes Telegram updates into the inbox. Exactly one gateway polls a bot at a time (a lease in the
 * database); updates are accepted one by one in update order, and the bot's offset moves past them
 * only after they are committed, so a crash re-reads them and the idempotency key (the update id)
 * makes the second read a no-op. A refused update (rate limit, backlog) is retried later, in order.
 * Runs on its gateway's event loop.
 */
public final class TelegramPoller {

    private static final Logger LOG = LoggerFactory.getLogger(TelegramPoller.class);
    private static final long CLAIM_EVERY_MS = 2_000;
    private static final long LEASE_MS = 15_000;
    private static final int LONG_POLL_SECONDS = 20;
    /** Pause after an empty answer, for servers that do not long-poll. */
    private static final long EMPTY_PAUSE_MS = 300;
    private static final long MAX_BACKOFF_MS = 30_000;

    private final Vertx vertx;
    private final String nodeId;
    private final ChannelBotStore bots;
    private final TelegramApi api;
    private final TelegramUpdates intake;
    private final Set<Long> polling = new HashSet<>();
    private long claimTimer = -1;
    private boolean stopped;

    public TelegramPoller(Vertx vertx, String nodeId, ChannelBotStore bots, TelegramApi api, TelegramUpdates updates) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.bots = Objects.requireNonNull(bots);
        this.api = Objects.requireNonNull(api);
        this.intake = Objects.requireNonNull(updates);
    }

    public void start() {
        claimTimer = vertx.setPeriodic(CLAIM_EVERY_MS, id -> claim());
        claim();
    }

    public Future<Void> stop() {
        stopped = true;
        if (claimTimer >= 0) {
            vertx.cancelTimer(claimTimer);
        }
        List<Future<Void>> released = polling.stream().map(id -> bots.release(id, nodeId)).toList();
        polling.clear();
        return Future.join(released).mapEmpty();
    }

    private void claim() {
        if (stopped) {
            return;
        }
        bots.claimPolling(nodeId, LEASE_MS, 1_000).onSuccess(claimed -> {
            for (ChannelBot bot : claimed) {
                if (polling.add(bot.id())) {
                    LOG.info("polling telegram bot [bot: {}, tenant: {}, node: {}]", bot.name(), bot.tenantId(), nodeId);
                    poll(bot, bot.updateOffset(), 0);
                }
            }
        }).onFailure(e -> LOG.warn("cannot claim telegram bots to poll [node: {}]: {}", nodeId, e.getMessage()));
    }

    private void poll(ChannelBot bot, long offset, int failures) {
        if (stopped || !polling.contains(bot.id())) {
            return;
        }
        api.getUpdates(bot.apiUrl(), bot.token(), offset, LONG_POLL_SECONDS)
                .compose(updates -> take(bot, updates, offset))
                .compose(next -> bots.advance(bot.id(), nodeId, next.offset(), LEASE_MS).map(held -> {
                    if (!held) {
                        throw new LeaseLost();
                    }
                    return next;
                }))
                .onSuccess(next -> {
                    if (next.pauseMs() > 0) {
                        vertx.setTimer(next.pauseMs(), id -> poll(bot, next.offset(), 0));
                    } else {
                        vertx.runOnContext(v -> poll(bot, next.offset(), 0));
                    }
                })
                .onFailure(failure -> {
                    if (failure instanceof LeaseLost) {
                        LOG.info("telegram bot {} is polled by another gateway now, is in webhook mode, or its tenant was "
                                + "suspended [node: {}]",
                                bot.name(), nodeId);
                        polling.remove(bot.id());
                        return;
                    }
                    long delay = failure instanceof DeliveryException d && d.retryAfterMs() > 0 ? d.retryAfterMs()
                            : Math.min(MAX_BACKOFF_MS, 500L << Math.min(failures, 6));
                    LOG.warn("telegram poll failed, retrying in {} ms [bot: {}]: {}", delay, bot.name(), failure.getMessage());
                    if (stopped || !polling.contains(bot.id())) {
                        return; // let go on shutdown: renewing now would hold the lease from the next gateway
                    }
                    // Still ours? A bot switched to webhook mode makes Telegram refuse getUpdates (409): stop then, rather
                    // than retry for ever. The renewal also keeps the lease through a long Telegram outage.
                    bots.advance(bot.id(), nodeId, offset, LEASE_MS).onComplete(held -> {
                        if (held.succeeded() && !held.result()) {
                            LOG.info("telegram bot {} is not polled by this gateway any more (webhook mode, another gateway, "
                                    + "or its tenant suspended) [node: {}]", bot.name(), nodeId);
                            polling.remove(bot.id());
                            return;
                        }
                        vertx.setTimer(delay, id -> poll(bot, offset, failures + 1));
                    });
                });
    }

    /** Where the next poll starts and how long to wait before it. */
    private record Next(long offset, long pauseMs) {
    }

    /**
     * Accepts the updates in order. At the first refusal (rate limit, backlog) it stops, and the
     * next poll starts at the refused update after its Retry-After: order is kept, nothing skipped.
     */
    private Future<Next> take(ChannelBot bot, JsonArray updates, long offset) {
        long[] next = {offset};
        Future<Void> chain = Future.succeededFuture();
        for (int i = 0; i < updates.size(); i++) {
            JsonObject update = updates.getJsonObject(i);
            chain = chain.compose(v -> intake.accept(bot, update, "poll")).onSuccess(v ->
                    next[0] = Math.max(next[0], update.getLong("update_id") + 1));
        }
        return chain.map(v -> new Next(next[0], updates.isEmpty() ? EMPTY_PAUSE_MS : 0)).recover(failure -> {
            if (failure instanceof ApiException refused && refused.retryAfterSeconds() > 0) {
                return Future.succeededFuture(new Next(next[0], refused.retryAfterSeconds() * 1000));
            }
            return Future.failedFuture(failure);
        });
    }

    /** The poll lease moved to another gateway. */
    private static final class LeaseLost extends RuntimeException {
        LeaseLost() {
            super(null, null, false, false);
        }
    }
}
