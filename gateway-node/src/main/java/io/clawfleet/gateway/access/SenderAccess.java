package io.clawfleet.gateway.access;

import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelAccessStore.Access;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Whether a channel message counts, by its account's policies ({@code dmPolicy}, {@code groupPolicy}) and its allowed
 * senders. Policies are read from PostgreSQL at most every {@link #TTL_NANOS} per account (a change made on another
 * gateway counts within that; on this one at once, {@link #forget}); an open account in a private chat costs nothing
 * more than that read.
 */
public final class SenderAccess {

    /** How long an account's access is kept in memory. */
    static final long TTL_NANOS = 5_000_000_000L;
    private static final int CACHE_LIMIT = 100_000;

    /** What to do with a message. */
    public sealed interface Verdict {
    }

    /** It counts: into the inbox. */
    public record Accept() implements Verdict {
    }

    /** It does not count, and nobody is told ({@code reason} names why, for the metrics). */
    public record Ignore(String reason) implements Verdict {
    }

    /** An unknown sender of an account in pairing mode: it gets a code (sent when {@code challenge.sendCode()}). */
    public record Challenge(ChannelAccessStore.Challenge challenge) implements Verdict {
    }

    /**
     * A message as the access rules see it.
     *
     * @param group     whether it was written in a group chat (not a private one)
     * @param mentioned whether it names the bot or answers one of its messages (group chats)
     */
    public record Message(String senderId, String chatId, boolean group, boolean mentioned) {
    }

    private record Cached(Access access, long until) {
    }

    private final ChannelAccessStore store;
    private final Map<Long, Cached> cache = new ConcurrentHashMap<>();

    public SenderAccess(ChannelAccessStore store) {
        this.store = Objects.requireNonNull(store);
    }

    /** What an unknown sender is told in pairing mode: its code, and what to do with it. */
    public static String codeNotice(ChannelAccessStore.Challenge challenge) {
        return "This bot answers only people its owner has approved. Your pairing code is " + challenge.code()
                + " (valid for " + ChannelAccessStore.CODE_TTL.toMinutes() + " minutes): send it to the bot's owner, then "
                + "write again once they have approved it.";
    }

    public Future<Verdict> check(ChannelBot bot, Message message) {
        return access(bot.id()).compose(access -> {
            if (access == null) {
                return Future.succeededFuture(new Ignore("no_channel")); // removed meanwhile
            }
            boolean known = access.allowed().contains(message.senderId());
            if (message.group()) {
                if (ChannelAccessStore.OFF.equals(access.groupPolicy())) {
                    return Future.succeededFuture(new Ignore("group_off"));
                }
                if (!ChannelAccessStore.OPEN.equals(access.dmPolicy()) && !known) {
                    return Future.succeededFuture(new Ignore("not_allowed")); // no codes in groups: no noise there
                }
                if (ChannelAccessStore.MENTION.equals(access.groupPolicy()) && !message.mentioned()) {
                    return Future.succeededFuture(new Ignore("not_mentioned"));
                }
                return Future.succeededFuture(new Accept());
            }
            if (ChannelAccessStore.OPEN.equals(access.dmPolicy()) || known) {
                return Future.succeededFuture(new Accept());
            }
            if (ChannelAccessStore.ALLOWLIST.equals(access.dmPolicy())) {
                return Future.succeededFuture(new Ignore("not_allowed"));
            }
            return store.challenge(bot, message.senderId(), message.chatId()).map(challenge -> {
                if (challenge.allowed()) {
                    forget(bot.id()); // approved on another gateway since this one read the list
                    return (Verdict) new Accept();
                }
                return new Challenge(challenge);
            });
        });
    }

    /** Reads an account's access again at its next message (after a change on this gateway). */
    public void forget(long channelId) {
        cache.remove(channelId);
    }

    private Future<Access> access(long channelId) {
        Cached cached = cache.get(channelId);
        long now = System.nanoTime();
        if (cached != null && now - cached.until() < 0) {
            return Future.succeededFuture(cached.access());
        }
        return store.access(channelId).map(found -> {
            Access access = found.orElse(null);
            if (cache.size() >= CACHE_LIMIT) {
                cache.clear();
            }
            cache.put(channelId, new Cached(access, System.nanoTime() + TTL_NANOS));
            return access;
        });
    }
}
