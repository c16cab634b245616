package io.clawfleet.gateway.delivery;

import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.SendPacingStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.concurrent.atomic.AtomicLong;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Keeps a gateway's sends to a platform within its published limits ({@link Rates}), ahead of its {@code 429}s. Each is a
 * token bucket; a send reserves a token from its chat's and its bot's and waits until both are due. A wait longer than
 * its limit (at most {@link #MAX_WAIT_NANOS}, and well inside the delivery claim, so another gateway never takes a
 * reply over while this one waits to send it) is not taken: the token goes back and the caller retries later. Per gateway: a chat's replies go out one after another, usually through the gateway that sent the last one.
 */
public final class SendPacer {

    /**
     * A platform's published send rates.
     *
     * @param chatBurst      sends a chat may take at once
     * @param chatPerSecond  a private chat's steady rate
     * @param groupPerSecond a group chat's steady rate (Telegram's groups have negative ids)
     * @param accountBurst   sends an account (a bot, an app, a phone number) may take at once
     * @param accountPerSecond the account's steady rate across its chats
     */
    public record Rates(int chatBurst, double chatPerSecond, double groupPerSecond, int accountBurst, double accountPerSecond) {

        /** Telegram: about one a second in a chat after a burst, 20 a minute in a group, 30 a second per bot. */
        public static final Rates TELEGRAM = new Rates(CHAT_BURST, CHAT_PER_SECOND, GROUP_PER_SECOND, BOT_BURST, BOT_PER_SECOND);
        /** Slack's {@code chat.postMessage}: one a second in a conversation, short bursts allowed. */
        public static final Rates SLACK = new Rates(3, 1.0, 1.0, 30, 30.0);
        /**
         * WhatsApp Cloud API: to one user, a burst of up to 45 then one every 6 seconds (the pair rate limit); 80 a second
         * per business phone number (its default throughput).
         */
        public static final Rates WHATSAPP = new Rates(45, 1.0 / 6, 1.0 / 6, 80, 80.0);
    }

    private static final Logger LOG = LoggerFactory.getLogger(SendPacer.class);
    static final int CHAT_BURST = 3;
    static final double CHAT_PER_SECOND = 1.0;
    static final double GROUP_PER_SECOND = 20.0 / 60;
    static final int BOT_BURST = 30;
    static final double BOT_PER_SECOND = 30.0;
    static final long MAX_WAIT_NANOS = 5_000_000_000L;
    private static final int MAX_BUCKETS = 50_000;

    private static final class Bucket {
        final double capacity;
        final double perNano;
        double tokens;
        long at;

        Bucket(double capacity, double perSecond, long now) {
            this.capacity = capacity;
            this.perNano = perSecond / 1e9;
            this.tokens = capacity;
            this.at = now;
        }

        /** Takes a token (perhaps one not there yet); how long until it is. */
        long take(long now) {
            tokens = Math.min(capacity, tokens + (now - at) * perNano);
            at = now;
            tokens -= 1;
            return tokens >= 0 ? 0 : (long) Math.ceil(-tokens / perNano);
        }

        void giveBack() {
            tokens += 1;
        }

        boolean full(long now) {
            return tokens + (now - at) * perNano >= capacity;
        }
    }

    private final Map<Long, Bucket> bots = new HashMap<>();
    private final Map<String, Bucket> chats = new HashMap<>();
    private final long maxWaitNanos;
    /** The cluster's shared pacing; null: this gateway's buckets alone. */
    private final SendPacingStore shared;
    private final AtomicLong sharedFailures = new AtomicLong();

    /** @param claimMs how long a delivery claim holds ({@code delivery.claimMs}): a wait stays under a third of it */
    public SendPacer(long claimMs) {
        this(claimMs, null);
    }

    /**
     * Pacing shared by the cluster's gateways through {@code shared} (one statement a send); when the database does not
     * answer, this gateway's own buckets pace the send instead (the platform's {@code 429} covers the rest).
     */
    public SendPacer(long claimMs, SendPacingStore shared) {
        this.maxWaitNanos = Math.min(MAX_WAIT_NANOS, claimMs * 1_000_000 / 3);
        this.shared = shared;
    }

    /** The longest wait {@link #reserve} takes. */
    public long maxWaitNanos() {
        return maxWaitNanos;
    }

    /**
     * Reserves a send to a chat of a bot.
     *
     * @return nanoseconds to wait before sending; -1 when that would be longer than {@link #maxWaitNanos()} (nothing
     *         is reserved then)
     */
    public long reserve(long botId, String chatId, long now) {
        return reserve(botId, chatId, Rates.TELEGRAM, now);
    }

    /** Reserves a send to a chat of an account, at a platform's rates. */
    public synchronized long reserve(long botId, String chatId, Rates rates, long now) {
        if (chats.size() > MAX_BUCKETS) {
            chats.values().removeIf(bucket -> bucket.full(now));
            bots.values().removeIf(bucket -> bucket.full(now));
        }
        boolean group = chatId.startsWith("-"); // Telegram's groups, supergroups and channels have negative ids
        Bucket chat = chats.computeIfAbsent(botId + ":" + chatId,
                key -> new Bucket(rates.chatBurst(), group ? rates.groupPerSecond() : rates.chatPerSecond(), now));
        Bucket bot = bots.computeIfAbsent(botId, key -> new Bucket(rates.accountBurst(), rates.accountPerSecond(), now));
        long wait = Math.max(chat.take(now), bot.take(now));
        if (wait > maxWaitNanos) {
            chat.giveBack();
            bot.giveBack();
            return -1;
        }
        return wait;
    }

    /**
     * Sends once this chat's and account's buckets allow it: at once, after a timer, or not at all (a paced failure the
     * delivery retries without counting an attempt) when the wait would be too long.
     *
     * @param platform names the platform in the failure ("Telegram")
     */
    public Future<Void> pace(Vertx vertx, ChannelBot account, String chatId, Rates rates, String platform, Supplier<Future<Void>> send) {
        if (shared == null) {
            return paced(vertx, reserve(account.id(), chatId, rates, System.nanoTime()), platform, send);
        }
        boolean group = chatId.startsWith("-");
        return shared.reserve(account.id(), account.tenantId(), chatId, group ? rates.groupPerSecond() : rates.chatPerSecond(),
                        rates.chatBurst(), rates.accountPerSecond(), rates.accountBurst(), maxWaitNanos / 1_000_000)
                .map(waitMs -> waitMs < 0 ? -1L : waitMs * 1_000_000)
                .recover(unanswered -> {
                    if (sharedFailures.getAndIncrement() % 100 == 0) {
                        LOG.warn("shared send pacing unavailable, this gateway paces alone [account: {}]: {}", account.id(),
                                unanswered.getMessage());
                    }
                    return Future.succeededFuture(reserve(account.id(), chatId, rates, System.nanoTime()));
                })
                .compose(wait -> paced(vertx, wait, platform, send));
    }

    private Future<Void> paced(Vertx vertx, long wait, String platform, Supplier<Future<Void>> send) {
        if (wait < 0) {
            return Future.failedFuture(DeliveryException.paced("held back: this chat or account is at " + platform + "'s send rate",
                    maxWaitNanos / 1_000_000));
        }
        if (wait == 0) {
            return send.get();
        }
        Promise<Void> due = Promise.promise();
        vertx.setTimer(Math.max(1, wait / 1_000_000), id -> due.complete());
        return due.future().compose(v -> send.get());
    }
}
