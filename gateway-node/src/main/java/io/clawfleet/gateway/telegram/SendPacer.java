package io.clawfleet.gateway.telegram;

import java.util.HashMap;
import java.util.Map;

/**
 * Keeps a gateway's sends to Telegram within Telegram's published limits, ahead of its {@code 429}s: about one message
 * a second in a chat (bursts of {@link #CHAT_BURST} allowed), 20 a minute in a group, 30 a second per bot. Each is a
 * token bucket; a send reserves a token from its chat's and its bot's and waits until both are due. A wait longer than
 * its limit (at most {@link #MAX_WAIT_NANOS}, and well inside the delivery claim, so another gateway never takes a
 * reply over while this one waits to send it) is not taken: the token goes back and the caller retries later. Per gateway: a chat's replies go out one after another, usually through the gateway that sent the last one.
 */
final class SendPacer {

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

    /** @param claimMs how long a delivery claim holds ({@code delivery.claimMs}): a wait stays under a third of it */
    SendPacer(long claimMs) {
        this.maxWaitNanos = Math.min(MAX_WAIT_NANOS, claimMs * 1_000_000 / 3);
    }

    /** The longest wait {@link #reserve} takes. */
    long maxWaitNanos() {
        return maxWaitNanos;
    }

    /**
     * Reserves a send to a chat of a bot.
     *
     * @return nanoseconds to wait before sending; -1 when that would be longer than {@link #maxWaitNanos()} (nothing
     *         is reserved then)
     */
    synchronized long reserve(long botId, String chatId, long now) {
        if (chats.size() > MAX_BUCKETS) {
            chats.values().removeIf(bucket -> bucket.full(now));
            bots.values().removeIf(bucket -> bucket.full(now));
        }
        boolean group = chatId.startsWith("-"); // Telegram's groups, supergroups and channels have negative ids
        Bucket chat = chats.computeIfAbsent(botId + ":" + chatId,
                key -> new Bucket(CHAT_BURST, group ? GROUP_PER_SECOND : CHAT_PER_SECOND, now));
        Bucket bot = bots.computeIfAbsent(botId, key -> new Bucket(BOT_BURST, BOT_PER_SECOND, now));
        long wait = Math.max(chat.take(now), bot.take(now));
        if (wait > maxWaitNanos) {
            chat.giveBack();
            bot.giveBack();
            return -1;
        }
        return wait;
    }
}
