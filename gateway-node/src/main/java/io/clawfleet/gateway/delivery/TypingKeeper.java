package io.clawfleet.gateway.delivery;

import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Keeps a platform's "typing…" indicator on through a long turn. Platforms show it for a few seconds (Telegram 5 s,
 * Discord 10 s) or until the bot's next message; the gateway that took a message shows it at once and again every
 * interval until the message's reply is committed (its reply notice) or {@link #MAX_MS} has passed. Best effort: a lost
 * notice ends it at the cap, a failed call costs only the indicator. Bounded, because each one is a call to the platform
 * that counts against the bot's rate: at most {@link #MAX_PER_ACCOUNT} chats of an account and {@link #MAX_KEPT} in all
 * per gateway; beyond, the indicator is shown once.
 */
public final class TypingKeeper {

    private static final Logger LOG = LoggerFactory.getLogger(TypingKeeper.class);
    static final long MAX_MS = 120_000;
    static final int MAX_PER_ACCOUNT = 20;
    static final int MAX_KEPT = 2_000;

    private final Vertx vertx;
    private final ReplyHub hub;
    private final Metrics metrics;
    private final Map<Long, Integer> perAccount = new HashMap<>();
    private final AtomicInteger kept = new AtomicInteger();

    public TypingKeeper(Vertx vertx, ReplyHub hub, Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.hub = Objects.requireNonNull(hub);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /**
     * Shows the indicator now, and again every {@code everyMs} until the reply to {@code inboxId} is committed.
     *
     * @param typing one call showing it (its failure is logged at debug and otherwise ignored)
     */
    public synchronized void keep(ChannelBot account, long inboxId, long everyMs, Supplier<Future<Void>> typing) {
        show(account, typing);
        int ofAccount = perAccount.getOrDefault(account.id(), 0);
        if (ofAccount >= MAX_PER_ACCOUNT || kept.get() >= MAX_KEPT) {
            metrics.increment("clawfleet.typing.not_kept", "tenant", account.tenantId());
            return;
        }
        perAccount.put(account.id(), ofAccount + 1);
        kept.incrementAndGet();
        long started = System.nanoTime();
        long[] timer = {-1};
        boolean[] done = {false};
        Runnable stop = () -> {
            synchronized (this) {
                if (done[0]) {
                    return;
                }
                done[0] = true;
                vertx.cancelTimer(timer[0]);
                hub.cancelMessage(inboxId);
                kept.decrementAndGet();
                perAccount.computeIfPresent(account.id(), (id, n) -> n <= 1 ? null : n - 1);
            }
        };
        hub.onMessageReply(inboxId, reply -> stop.run(), null);
        timer[0] = vertx.setPeriodic(everyMs, id -> {
            if ((System.nanoTime() - started) / 1_000_000 > MAX_MS) {
                stop.run();
            } else {
                show(account, typing);
            }
        });
    }

    private void show(ChannelBot account, Supplier<Future<Void>> typing) {
        typing.get().onFailure(e -> LOG.debug("typing not shown [tenant: {}, account: {}]: {}", account.tenantId(), account.id(),
                e.getMessage()));
    }
}
