package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Who may talk to a bot through a channel account: its policies ({@code dm_policy}, {@code group_policy}) and its
 * senders ({@code channel_senders}): allowed ones, listed by the tenant or paired, and pending ones, each with a
 * one-time code that the tenant approves. Every call names the bot ({@link BotRef}): one tenant's calls never reach
 * another's senders.
 */
public final class ChannelAccessStore {

    public static final String OPEN = "open";
    public static final String ALLOWLIST = "allowlist";
    public static final String PAIRING = "pairing";
    public static final Set<String> DM_POLICIES = Set.of(OPEN, ALLOWLIST, PAIRING);
    public static final String MENTION = "mention";
    public static final String OFF = "off";
    public static final Set<String> GROUP_POLICIES = Set.of(MENTION, OPEN, OFF);
    /** Letters and digits that cannot be mistaken for one another (no 0/O, 1/I/L, 5/S, 8/B). */
    private static final String CODE_ALPHABET = "ACDEFGHJKMNPQRTUVWXYZ2345679";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What decides whether a message counts: the account's policies and its allowed senders. */
    public record Access(String dmPolicy, String groupPolicy, Set<String> allowed) {
    }

    /**
     * What an unknown sender gets in pairing mode.
     *
     * @param allowed true when the sender was approved meanwhile (the message counts)
     * @param code    the sender's pending code; null when none could be given (too many pending for this account)
     * @param sendCode whether to send the code now (it is new, or was last sent over {@link #RENOTIFY} ago)
     */
    public record Challenge(boolean allowed, String code, boolean sendCode) {
    }

    /** A pending pairing, as the tenant sees it. */
    public record Pending(long channelId, String senderId, String chatId, String code, Instant createdAt, Instant expiresAt) {
    }

    /** An approved pairing: whom to tell. */
    public record Approved(long channelId, String senderId, String chatId) {
    }

    /** How long a code holds. */
    public static final Duration CODE_TTL = Duration.ofHours(1);
    /** How often a sender who keeps writing is sent its code again. */
    public static final Duration RENOTIFY = Duration.ofMinutes(10);
    /** Pending codes an account holds at most: strangers cannot fill the table. */
    public static final int MAX_PENDING = 50;

    private final Pool pool;

    public ChannelAccessStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    public Future<Optional<Access>> access(long channelId) {
        return pool.preparedQuery("""
                        SELECT b.dm_policy, b.group_policy,
                               ARRAY(SELECT s.sender_id FROM channel_senders s
                                      WHERE s.channel_bot_id = b.id AND s.status = 'allowed') AS allowed
                          FROM channel_bots b WHERE b.id = $1""")
                .execute(Tuple.of(channelId))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.empty();
                    }
                    Row row = rows.iterator().next();
                    return Optional.of(new Access(row.getString("dm_policy"), row.getString("group_policy"),
                            Set.of(row.getArrayOfStrings("allowed"))));
                });
    }

    /** Sets the policies given (null = keep); false when the bot has no such account. */
    public Future<Boolean> setPolicies(BotRef owner, long channelId, String dmPolicy, String groupPolicy) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET dm_policy = coalesce($4, dm_policy), group_policy = coalesce($5, group_policy)
                         WHERE tenant_id = $1 AND bot_id = $2 AND id = $3""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), channelId, dmPolicy, groupPolicy))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * Makes exactly these senders the allowed ones of an account (paired ones included: a list replaces them); a
     * pending sender listed is allowed at once. False when the bot has no such account.
     */
    public Future<Boolean> setAllowed(BotRef owner, long channelId, List<String> senders) {
        return pool.withTransaction(conn -> conn.preparedQuery(
                        "SELECT 1 FROM channel_bots WHERE tenant_id = $1 AND bot_id = $2 AND id = $3 FOR UPDATE")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), channelId))
                .compose(found -> {
                    if (found.size() == 0) {
                        return Future.succeededFuture(false);
                    }
                    String[] ids = senders.toArray(String[]::new);
                    return conn.preparedQuery("""
                                    DELETE FROM channel_senders WHERE channel_bot_id = $1 AND status = 'allowed'
                                       AND NOT (sender_id = ANY($2))""")
                            .execute(Tuple.of(channelId, (Object) ids))
                            .compose(v -> conn.preparedQuery("""
                                            INSERT INTO channel_senders (channel_bot_id, tenant_id, bot_id, sender_id, status, approved_at)
                                            SELECT $1, $2, $3, s, 'allowed', now() FROM unnest($4::text[]) s
                                            ON CONFLICT (channel_bot_id, sender_id) DO UPDATE SET status = 'allowed', code = NULL,
                                                   code_expires_at = NULL, approved_at = coalesce(channel_senders.approved_at, now())""")
                                    .execute(Tuple.of(channelId, owner.tenantId(), owner.botId(), ids)))
                            .map(v -> true);
                }));
    }

    /** The senders of an account: allowed ones and live pending ones (their codes are shown only by {@link #pending}). */
    public Future<Optional<List<Sender>>> senders(BotRef owner, long channelId) {
        return pool.preparedQuery("""
                        SELECT b.id AS channel, s.sender_id, s.status, s.created_at, s.approved_at
                          FROM channel_bots b
                          LEFT JOIN channel_senders s ON s.channel_bot_id = b.id
                               AND (s.status = 'allowed' OR s.code_expires_at > now())
                         WHERE b.tenant_id = $1 AND b.bot_id = $2 AND b.id = $3
                         ORDER BY s.sender_id""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), channelId))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.empty();
                    }
                    List<Sender> out = new ArrayList<>();
                    for (Row row : rows) {
                        if (row.getString("sender_id") != null) {
                            out.add(new Sender(row.getString("sender_id"), row.getString("status"),
                                    instant(row.getOffsetDateTime("created_at")), instant(row.getOffsetDateTime("approved_at"))));
                        }
                    }
                    return Optional.of(out);
                });
    }

    /** A sender of an account, as the API shows it. */
    public record Sender(String senderId, String status, Instant createdAt, Instant approvedAt) {
    }

    /**
     * The code of an unknown sender in pairing mode: the live one it has, or a new one (unless the account already has
     * {@link #MAX_PENDING} live codes).
     */
    public Future<Challenge> challenge(ChannelBot bot, String senderId, String chatId) {
        return pool.withTransaction(conn -> conn.preparedQuery("""
                        SELECT status, code, code_expires_at > now() AS live,
                               notified_at < now() - $3 * interval '1 millisecond' AS stale
                          FROM channel_senders WHERE channel_bot_id = $1 AND sender_id = $2 FOR UPDATE""")
                .execute(Tuple.of(bot.id(), senderId, RENOTIFY.toMillis()))
                .compose(rows -> {
                    Row row = rows.size() == 0 ? null : rows.iterator().next();
                    if (row != null && "allowed".equals(row.getString("status"))) {
                        return Future.succeededFuture(new Challenge(true, null, false));
                    }
                    if (row != null && Boolean.TRUE.equals(row.getBoolean("live"))) {
                        boolean notify = Boolean.TRUE.equals(row.getBoolean("stale"));
                        Future<?> touched = notify ? conn.preparedQuery("""
                                        UPDATE channel_senders SET notified_at = now(), chat_id = $3
                                         WHERE channel_bot_id = $1 AND sender_id = $2""")
                                .execute(Tuple.of(bot.id(), senderId, chatId)) : Future.succeededFuture();
                        return touched.map(v -> new Challenge(false, row.getString("code"), notify));
                    }
                    return conn.preparedQuery("""
                                    SELECT count(*) FROM channel_senders
                                     WHERE channel_bot_id = $1 AND status = 'pending' AND code_expires_at > now()""")
                            .execute(Tuple.of(bot.id()))
                            .compose(count -> {
                                if (count.iterator().next().getLong(0) >= MAX_PENDING) {
                                    return Future.succeededFuture(new Challenge(false, null, false));
                                }
                                String code = newCode();
                                return conn.preparedQuery("""
                                                INSERT INTO channel_senders (channel_bot_id, tenant_id, bot_id, sender_id, status, code,
                                                                             code_expires_at, chat_id, notified_at)
                                                VALUES ($1, $2, $3, $4, 'pending', $5, now() + $6 * interval '1 millisecond', $7, now())
                                                ON CONFLICT (channel_bot_id, sender_id) DO UPDATE SET status = 'pending',
                                                       code = EXCLUDED.code, code_expires_at = EXCLUDED.code_expires_at,
                                                       chat_id = EXCLUDED.chat_id, notified_at = now(), created_at = now()""")
                                        .execute(Tuple.of(bot.id(), bot.tenantId(), bot.botId(), senderId, code, CODE_TTL.toMillis(),
                                                chatId))
                                        .map(v -> new Challenge(false, code, true));
                            });
                }));
    }

    /** The live pending pairings of a bot, oldest first. */
    public Future<List<Pending>> pending(BotRef owner) {
        return pool.preparedQuery("""
                        SELECT channel_bot_id, sender_id, chat_id, code, created_at, code_expires_at FROM channel_senders
                         WHERE tenant_id = $1 AND bot_id = $2 AND status = 'pending' AND code_expires_at > now()
                         ORDER BY created_at, sender_id LIMIT 1000""")
                .execute(Tuple.of(owner.tenantId(), owner.botId()))
                .map(rows -> {
                    List<Pending> out = new ArrayList<>(rows.size());
                    for (Row row : rows) {
                        out.add(new Pending(row.getLong("channel_bot_id"), row.getString("sender_id"), row.getString("chat_id"),
                                row.getString("code"), instant(row.getOffsetDateTime("created_at")),
                                instant(row.getOffsetDateTime("code_expires_at"))));
                    }
                    return out;
                });
    }

    /** Approves a live code of this bot: its sender is allowed from now on. Empty when there is no such code. */
    public Future<Optional<Approved>> approve(BotRef owner, String code) {
        return pool.preparedQuery("""
                        UPDATE channel_senders SET status = 'allowed', code = NULL, code_expires_at = NULL, approved_at = now()
                         WHERE tenant_id = $1 AND bot_id = $2 AND code = $3 AND status = 'pending' AND code_expires_at > now()
                        RETURNING channel_bot_id, sender_id, chat_id""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), normalize(code)))
                .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(rows.iterator().next()).map(row ->
                        new Approved(row.getLong("channel_bot_id"), row.getString("sender_id"), row.getString("chat_id"))));
    }

    /** A code as people type it: any case, with or without the dash. */
    public static String normalize(String code) {
        String bare = code.strip().toUpperCase(java.util.Locale.ROOT).replace("-", "");
        return bare.length() == 8 ? bare.substring(0, 4) + "-" + bare.substring(4) : bare;
    }

    /** A new code: 8 characters of {@link #CODE_ALPHABET} (about 38 bits), shown as {@code ABCD-EFGH}. */
    static String newCode() {
        StringBuilder code = new StringBuilder(9);
        for (int i = 0; i < 8; i++) {
            if (i == 4) {
                code.append('-');
            }
            code.append(CODE_ALPHABET.charAt(RANDOM.nextInt(CODE_ALPHABET.length())));
        }
        return code.toString();
    }

    private static Instant instant(OffsetDateTime time) {
        return time == null ? null : time.toInstant();
    }
}
