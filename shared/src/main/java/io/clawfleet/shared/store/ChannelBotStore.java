package io.clawfleet.shared.store;

import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.security.TenantKeys;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Push-channel bots, and the lease under which exactly one gateway polls each for updates. The
 * update offset only moves forward, and only by the lease holder, after the updates are in the inbox.
 * A bot's token is stored sealed with its tenant's data key ({@link TenantKeys}); it is opened once per bot
 * and kept in memory.
 */
public final class ChannelBotStore {

    /** The purpose a token is sealed for: a sealed token moved to another field or tenant does not open. */
    static final String TOKEN_PURPOSE = "channel_bots.token";
    /** The purpose a Slack app's signing secret is sealed for. */
    static final String SIGNING_SECRET_PURPOSE = "channel_bots.signing_secret";
    private static final String BOT_COLUMNS = "b.id, b.tenant_id, b.bot_id, b.channel, b.name, b.token, b.token_enc, b.token_key_id, "
            + "b.token_hint, b.api_url, b.enabled, b.update_offset, b.mode, b.webhook_url, b.dm_policy, b.group_policy, "
            + "b.signing_secret_enc, b.account_user_id, b.allowed_origins, b.anonymous_users, b.interactions_key";
    private static final String KEY_JOIN = " LEFT JOIN tenant_data_keys k ON k.tenant_id = b.tenant_id AND k.key_id = b.token_key_id";
    private static final String SELECT = "SELECT " + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM channel_bots b" + KEY_JOIN;
    private static final int TOKEN_CACHE_LIMIT = 100_000;

    private record Opened(byte[] sealed, String token) {
    }

    private static final Logger LOG = LoggerFactory.getLogger(ChannelBotStore.class);

    private final Pool pool;
    private final TenantKeys keys;
    private final Map<Long, Opened> tokens = new ConcurrentHashMap<>();
    private final Map<Long, Opened> signingSecrets = new ConcurrentHashMap<>();

    public ChannelBotStore(Pool pool, TenantKeys keys) {
        this.pool = Objects.requireNonNull(pool);
        this.keys = Objects.requireNonNull(keys);
    }

    /**
     * Registers a channel account for a bot, or returns the one already registered with this token for this bot.
     * The token is sealed before it leaves this JVM; without a master key this fails ({@link SecretException}).
     */
    public Future<ChannelBot> register(BotRef owner, String channel, String name, String token, String apiUrl) {
        return register(owner, channel, name, null, token, apiUrl);
    }

    /**
     * As {@link #register(BotRef, String, String, String, String)}, for an account whose platform gives it a user id of
     * its own (a Discord bot's).
     */
    public Future<ChannelBot> register(BotRef owner, String channel, String name, String accountUserId, String token, String apiUrl) {
        String tenantId = owner.tenantId();
        return keys.current(tenantId).compose(key -> pool.withTransaction(conn -> TenantLimits.check(conn, tenantId,
                        TenantLimits.CHANNELS).compose(v -> conn.preparedQuery("""
                        WITH b AS (
                          INSERT INTO channel_bots (tenant_id, channel, name, token_enc, token_key_id, token_hint, token_hash, api_url,
                                                    bot_id, account_user_id)
                          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                          ON CONFLICT (token_hash) DO UPDATE SET name = EXCLUDED.name, api_url = EXCLUDED.api_url, enabled = true,
                                 token = NULL, token_enc = EXCLUDED.token_enc, token_key_id = EXCLUDED.token_key_id,
                                 token_hint = EXCLUDED.token_hint, account_user_id = EXCLUDED.account_user_id
                            WHERE channel_bots.tenant_id = EXCLUDED.tenant_id AND channel_bots.bot_id = EXCLUDED.bot_id
                          RETURNING *)
                        SELECT\s""" + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM b" + KEY_JOIN)
                .execute(Tuple.of(tenantId, channel, name, Buffer.buffer(keys.seal(key, TOKEN_PURPOSE, token)), key.keyId(),
                        hint(token), TenantStore.hashKey(token), apiUrl, owner.botId(), accountUserId)))
                .map(rows -> {
                    if (rows.size() == 0) {
                        throw new IllegalArgumentException("this bot token is already registered, by another tenant or for"
                                + " another bot; remove it there first");
                    }
                    return bot(rows.iterator().next());
                })));
    }

    /**
     * Registers a Slack app for a bot (events by webhook, at {@code hookBase} followed by the account's id), or updates
     * the one already registered with this bot token for this bot (a new signing secret, a new name). The token and
     * the signing secret are sealed before they leave this JVM.
     *
     * @param accountUserId the app's bot user ({@code U...}), from {@code auth.test}
     */
    public Future<ChannelBot> registerSlack(BotRef owner, String name, String accountUserId, String token, String signingSecret,
                                            String apiUrl, String hookBase) {
        return registerSigned(owner, "slack", name, accountUserId, token, token, signingSecret, null, apiUrl, hookBase, null, false);
    }

    /**
     * Registers a WhatsApp business phone number for a bot, or updates the one already registered for this bot (a new
     * token, app secret or verify token). A number is registered once: another bot or tenant gets a conflict.
     *
     * @param verifyTokenHash SHA-256 of the token Meta sends back when the webhook is set up
     */
    public Future<ChannelBot> registerWhatsApp(BotRef owner, String name, String phoneNumberId, String token, String appSecret,
                                               byte[] verifyTokenHash, String apiUrl, String hookBase) {
        return registerSigned(owner, "whatsapp", name, phoneNumberId, token, "whatsapp:" + phoneNumberId, appSecret,
                verifyTokenHash, apiUrl, hookBase, null, false);
    }

    /**
     * Registers an inbound webhook account for a bot: the tenant's systems post messages to {@code hookBase} followed by
     * its id, signed with {@code secret} (Standard Webhooks).
     */
    public Future<ChannelBot> registerInboundWebhook(BotRef owner, String name, String secret, String hookBase) {
        return registerSigned(owner, "webhook", name, null, secret, secret, secret, null, "none", hookBase, null, false);
    }

    /**
     * Registers a web chat account for a bot: its publishable key is {@code pk_<id>_<publicPart>}; {@code secret} signs
     * the end-user tokens the tenant's backend mints.
     */
    public Future<ChannelBot> registerWebChat(BotRef owner, String name, String publicPart, String secret,
                                              List<String> allowedOrigins, boolean anonymousUsers) {
        return registerSigned(owner, "webchat", name, publicPart, secret, secret, secret, null, "none", "/webchat/v1/channels/",
                allowedOrigins.toArray(String[]::new), anonymousUsers);
    }

    /** Changes which origins may open a web chat account's connections, and whether anonymous visitors may; false if none. */
    public Future<Boolean> updateWebChat(BotRef owner, long id, List<String> allowedOrigins, Boolean anonymousUsers) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET allowed_origins = coalesce($4, allowed_origins),
                               anonymous_users = coalesce($5, anonymous_users)
                         WHERE tenant_id = $1 AND bot_id = $2 AND id = $3 AND channel = 'webchat'""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id,
                        allowedOrigins == null ? null : allowedOrigins.toArray(String[]::new), anonymousUsers))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * An account whose platform signs its posts with a secret the gateway keeps sealed, taking events by webhook at
     * {@code hookBase} followed by its id.
     *
     * @param uniqueKey what makes the account registered once (its token, or its number)
     */
    private Future<ChannelBot> registerSigned(BotRef owner, String channel, String name, String accountUserId, String token,
                                              String uniqueKey, String signingSecret, byte[] secretHash, String apiUrl,
                                              String hookBase, String[] allowedOrigins, boolean anonymousUsers) {
        String tenantId = owner.tenantId();
        return keys.current(tenantId).compose(key -> pool.withTransaction(conn -> TenantLimits.check(conn, tenantId,
                        TenantLimits.CHANNELS).compose(v -> conn.preparedQuery("""
                        WITH n AS (SELECT nextval(pg_get_serial_sequence('channel_bots', 'id')) AS id),
                        b AS (
                          INSERT INTO channel_bots (id, tenant_id, channel, name, token_enc, token_key_id, token_hint, token_hash,
                                                    api_url, bot_id, signing_secret_enc, account_user_id, mode, webhook_url,
                                                    webhook_secret_hash, allowed_origins, anonymous_users)
                          OVERRIDING SYSTEM VALUE
                          SELECT n.id, $1, $12, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'webhook', $11 || n.id, $13, $14, $15 FROM n
                          ON CONFLICT (token_hash) DO UPDATE SET name = EXCLUDED.name, api_url = EXCLUDED.api_url, enabled = true,
                                 token = NULL, token_enc = EXCLUDED.token_enc, token_key_id = EXCLUDED.token_key_id,
                                 token_hint = EXCLUDED.token_hint, signing_secret_enc = EXCLUDED.signing_secret_enc,
                                 account_user_id = EXCLUDED.account_user_id, webhook_secret_hash = EXCLUDED.webhook_secret_hash
                            WHERE channel_bots.tenant_id = EXCLUDED.tenant_id AND channel_bots.bot_id = EXCLUDED.bot_id
                              AND channel_bots.channel = EXCLUDED.channel
                          RETURNING *)
                        SELECT\s""" + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM b" + KEY_JOIN)
                .execute(Tuple.of(tenantId, name, Buffer.buffer(keys.seal(key, TOKEN_PURPOSE, token)), key.keyId(), hint(token),
                        TenantStore.hashKey(uniqueKey), apiUrl, owner.botId(),
                        Buffer.buffer(keys.seal(key, SIGNING_SECRET_PURPOSE, signingSecret)), accountUserId, hookBase, channel,
                        secretHash == null ? null : Buffer.buffer(secretHash), allowedOrigins, anonymousUsers)))
                .map(rows -> {
                    if (rows.size() == 0) {
                        throw new IllegalArgumentException("this " + (uniqueKey.equals(token) ? "bot token" : "account")
                                + " is already registered, by another tenant or for another bot; remove it there first");
                    }
                    return bot(rows.iterator().next());
                })));
    }

    public Future<List<ChannelBot>> list(BotRef owner) {
        return pool.preparedQuery(SELECT + " WHERE b.tenant_id = $1 AND b.bot_id = $2 ORDER BY b.id")
                .execute(Tuple.of(owner.tenantId(), owner.botId()))
                .map(this::bots);
    }

    public Future<Optional<ChannelBot>> get(long id) {
        return pool.preparedQuery(SELECT + " WHERE b.id = $1").execute(Tuple.of(id))
                .map(rows -> bots(rows).stream().findFirst());
    }

    /** Removes a bot's channel account; false if it has no such account. */
    public Future<Boolean> delete(BotRef owner, long id) {
        return pool.preparedQuery("DELETE FROM channel_bots WHERE tenant_id = $1 AND bot_id = $3 AND id = $2")
                .execute(Tuple.of(owner.tenantId(), id, owner.botId()))
                .map(rows -> {
                    tokens.remove(id);
                    signingSecrets.remove(id);
                    return rows.rowCount() == 1;
                });
    }

    /**
     * Takes (or keeps) the polling lease of every enabled bot nobody else holds, up to {@code limit}.
     *
     * @return the bots this node should poll now
     */
    public Future<List<ChannelBot>> claimPolling(String nodeId, long leaseMs, int limit) {
        return claimPolling(nodeId, leaseMs, limit, "telegram");
    }

    /** As {@link #claimPolling(String, long, int)}, for the accounts of {@code channel} held by one node at a time. */
    public Future<List<ChannelBot>> claimPolling(String nodeId, long leaseMs, int limit, String channel) {
        return pool.preparedQuery("""
                        WITH free AS (
                          SELECT id FROM channel_bots
                           WHERE enabled AND mode = 'polling' AND channel = $4 AND (poller_until < now() OR poller_node = $1)
                             -- a suspended tenant's bots are not polled: the platform keeps their updates
                             AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = channel_bots.tenant_id AND t.status = 'active')
                             -- nor the accounts of a bot being deleted
                             AND EXISTS (SELECT 1 FROM bots o WHERE o.tenant_id = channel_bots.tenant_id
                                            AND o.id = channel_bots.bot_id AND o.status = 'active')
                           ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
                        ), b AS (
                          UPDATE channel_bots b SET poller_node = $1, poller_until = now() + $2 * interval '1 millisecond'
                            FROM free WHERE b.id = free.id
                          RETURNING b.*
                        )
                        SELECT\s""" + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM b" + KEY_JOIN + " ORDER BY b.id")
                .execute(Tuple.of(nodeId, leaseMs, limit, channel)).map(this::pollable);
    }

    /**
     * Records that updates below {@code offset} are in the inbox, and renews the polling lease.
     *
     * @return false when this node no longer holds the lease (another gateway polls the bot now, the bot's
     *         tenant was suspended, or the bot was switched to webhook mode: polling stops, and the updates not
     *         recorded are fetched again on resume, or posted to the webhook by the platform)
     */
    public Future<Boolean> advance(long botId, String nodeId, long offset, long leaseMs) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET update_offset = GREATEST(update_offset, $3),
                               poller_until = now() + $4 * interval '1 millisecond'
                         WHERE id = $1 AND poller_node = $2 AND enabled AND mode = 'polling'
                           AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = channel_bots.tenant_id AND t.status = 'active')""")
                .execute(Tuple.of(botId, nodeId, offset, leaseMs)).map(rows -> rows.rowCount() == 1);
    }

    /**
     * Where a platform's event session of an account stood (Discord's Gateway): its id, the URL to resume it at, and the
     * sequence number of the last event taken. Null fields (and 0) when it has none yet.
     */
    public record GatewaySession(String sessionId, String resumeUrl, long seq) {
    }

    /** The event session the last holder of the account's lease recorded. */
    public Future<GatewaySession> gatewaySession(long id) {
        return pool.preparedQuery("SELECT gateway_session_id, gateway_resume_url, gateway_seq FROM channel_bots WHERE id = $1")
                .execute(Tuple.of(id))
                .map(rows -> rows.size() == 0 ? new GatewaySession(null, null, 0) : new GatewaySession(
                        rows.iterator().next().getString("gateway_session_id"), rows.iterator().next().getString("gateway_resume_url"),
                        rows.iterator().next().getLong("gateway_seq")));
    }

    /**
     * Records where the account's event session stands and renews this node's lease on it; false when the lease is not
     * this node's any more (taken over, the account disabled or removed, its tenant or bot not active).
     */
    public Future<Boolean> holdGateway(long id, String nodeId, GatewaySession session, long leaseMs) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET gateway_session_id = $3, gateway_resume_url = $4, gateway_seq = $5,
                               poller_until = now() + $6 * interval '1 millisecond'
                         WHERE id = $1 AND poller_node = $2 AND enabled AND mode = 'polling'
                           AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = channel_bots.tenant_id AND t.status = 'active')
                           AND EXISTS (SELECT 1 FROM bots o WHERE o.tenant_id = channel_bots.tenant_id
                                          AND o.id = channel_bots.bot_id AND o.status = 'active')""")
                .execute(Tuple.of(id, nodeId, session.sessionId(), session.resumeUrl(), session.seq(), leaseMs))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Sets (or, null, clears) the public key a Discord account's interactions are signed with; false if it has no such account. */
    public Future<Boolean> setInteractionsKey(BotRef owner, long id, String publicKey) {
        return pool.preparedQuery("UPDATE channel_bots SET interactions_key = $4 WHERE tenant_id = $1 AND bot_id = $2 AND id = $3"
                        + " AND channel = 'discord'")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id, publicKey)).map(rows -> rows.rowCount() == 1);
    }

    /**
     * The Discord account an interaction names, if it takes interactions; {@code accepting} as for a webhook: enabled,
     * tenant and bot active.
     */
    public Future<Optional<WebhookTarget>> interactionsTarget(long id) {
        return pool.preparedQuery(SELECT.replace(" FROM channel_bots b", ", b.enabled"
                        + " AND t.status = 'active' AND o.status = 'active' AS accepting FROM channel_bots b"
                        + " JOIN tenants t ON t.id = b.tenant_id JOIN bots o ON o.tenant_id = b.tenant_id AND o.id = b.bot_id")
                        + " WHERE b.id = $1 AND b.channel = 'discord' AND b.interactions_key IS NOT NULL")
                .execute(Tuple.of(id))
                .map(rows -> rows.size() == 0 ? Optional.<WebhookTarget>empty()
                        : Optional.of(new WebhookTarget(bot(rows.iterator().next()), null, rows.iterator().next().getBoolean("accepting"))));
    }

    /** A bot's channel account, if the bot has one with this id. */
    public Future<Optional<ChannelBot>> find(BotRef owner, long id) {
        return pool.preparedQuery(SELECT + " WHERE b.tenant_id = $1 AND b.bot_id = $2 AND b.id = $3")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id))
                .map(rows -> bots(rows).stream().findFirst());
    }

    /**
     * Claims account {@code id} for a mode switch for {@code leaseMs}: true when no other switch holds it. Hold it
     * across the platform call and the {@link #useWebhook}/{@link #usePolling} that records the result (which lets it
     * go), so two switches at once cannot reach the platform in one order and the database in the other.
     */
    public Future<Boolean> claimModeSwitch(BotRef owner, long id, long leaseMs) {
        return pool.preparedQuery("""
                        UPDATE channel_bots SET mode_switch_until = now() + $4 * interval '1 millisecond'
                         WHERE tenant_id = $1 AND bot_id = $2 AND id = $3
                           AND (mode_switch_until IS NULL OR mode_switch_until < now())""")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id, leaseMs))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Lets a claim of {@link #claimModeSwitch} go when the switch failed before anything was recorded. */
    public Future<Void> releaseModeSwitch(BotRef owner, long id) {
        return pool.preparedQuery("UPDATE channel_bots SET mode_switch_until = NULL WHERE tenant_id = $1 AND bot_id = $2 AND id = $3")
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id)).mapEmpty();
    }

    /**
     * Puts an account in webhook mode, with the digest of its new secret: polling stops at its next round (the lease
     * is let go and no longer renewed), and the webhook accepts updates signed with the new secret from now on.
     *
     * @return the account as it is now; empty when the bot has no account with this id
     */
    public Future<Optional<ChannelBot>> useWebhook(BotRef owner, long id, byte[] secretHash, String url) {
        return pool.preparedQuery("""
                        WITH b AS (
                          UPDATE channel_bots SET mode = 'webhook', webhook_secret_hash = $4, webhook_url = $5,
                                 poller_until = '-infinity', mode_switch_until = NULL
                           WHERE tenant_id = $1 AND bot_id = $2 AND id = $3
                          RETURNING *)
                        SELECT\s""" + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM b" + KEY_JOIN)
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id, Buffer.buffer(secretHash), url))
                .map(rows -> bots(rows).stream().findFirst());
    }

    /**
     * Puts an account back in polling mode and forgets its webhook secret: a gateway claims it within seconds and
     * asks the platform for what the webhook had not taken.
     *
     * @return the account as it is now; empty when the bot has no account with this id
     */
    public Future<Optional<ChannelBot>> usePolling(BotRef owner, long id) {
        return pool.preparedQuery("""
                        WITH b AS (
                          UPDATE channel_bots SET mode = 'polling', webhook_secret_hash = NULL, webhook_url = NULL,
                                 mode_switch_until = NULL
                           WHERE tenant_id = $1 AND bot_id = $2 AND id = $3
                          RETURNING *)
                        SELECT\s""" + BOT_COLUMNS + ", k.wrapped_key, k.master_key_id FROM b" + KEY_JOIN)
                .execute(Tuple.of(owner.tenantId(), owner.botId(), id))
                .map(rows -> bots(rows).stream().findFirst());
    }

    /**
     * What a webhook request for account {@code id} is checked against.
     *
     * @param secretHash SHA-256 of the secret the platform sends (Telegram); null for a platform that signs its requests
     *                   instead ({@link ChannelBot#signingSecret()})
     * @param accepting  whether its updates may be taken now (enabled, tenant and bot active); when not, the platform
     *                   is asked to come back later and keeps them
     */
    public record WebhookTarget(ChannelBot bot, byte[] secretHash, boolean accepting) {
    }

    /**
     * The account of {@code channel} a webhook request names, if there is one in webhook mode: an id of another
     * platform's account is not one (a Slack account's id posted to the Telegram webhook finds nothing).
     */
    public Future<Optional<WebhookTarget>> webhookTarget(long id, String channel) {
        return pool.preparedQuery(SELECT.replace(" FROM channel_bots b", ", b.webhook_secret_hash, b.enabled"
                        + " AND t.status = 'active' AND o.status = 'active' AS accepting FROM channel_bots b"
                        + " JOIN tenants t ON t.id = b.tenant_id JOIN bots o ON o.tenant_id = b.tenant_id AND o.id = b.bot_id")
                        + " WHERE b.id = $1 AND b.mode = 'webhook' AND b.channel = $2")
                .execute(Tuple.of(id, channel))
                .map(rows -> {
                    if (rows.size() == 0) {
                        return Optional.empty();
                    }
                    Row row = rows.iterator().next();
                    Buffer secretHash = row.getBuffer("webhook_secret_hash");
                    return Optional.of(new WebhookTarget(bot(row), secretHash == null ? null : secretHash.getBytes(),
                            row.getBoolean("accepting")));
                });
    }

    /** Lets the polling lease go (on shutdown), so another gateway takes over at once. */
    public Future<Void> release(long botId, String nodeId) {
        return pool.preparedQuery("UPDATE channel_bots SET poller_until = '-infinity' WHERE id = $1 AND poller_node = $2")
                .execute(Tuple.of(botId, nodeId)).mapEmpty();
    }

    /** How many bots still have their token in plaintext (written before a master key was configured). */
    public Future<Long> countPlaintext() {
        return pool.query("SELECT count(*) AS n FROM channel_bots WHERE token IS NOT NULL").execute()
                .map(rows -> rows.iterator().next().getLong("n"));
    }

    /**
     * Seals the tokens still stored in plaintext and clears them, a batch at a time; safe to run on several
     * gateways at once (a row is changed only while its plaintext is still the one read).
     *
     * @return how many tokens this call sealed
     */
    public Future<Integer> sealPlaintext(int batch) {
        return pool.preparedQuery("SELECT id, tenant_id, token FROM channel_bots WHERE token IS NOT NULL ORDER BY id LIMIT $1")
                .execute(Tuple.of(batch))
                .compose(rows -> {
                    Future<Integer> chain = Future.succeededFuture(0);
                    for (Row row : rows) {
                        long id = row.getLong("id");
                        String tenantId = row.getString("tenant_id");
                        String token = row.getString("token");
                        chain = chain.compose(done -> keys.current(tenantId).compose(key -> pool.preparedQuery("""
                                        UPDATE channel_bots SET token_enc = $3, token_key_id = $4, token_hint = $5, token = NULL
                                         WHERE id = $1 AND token = $2""")
                                .execute(Tuple.of(id, token, Buffer.buffer(keys.seal(key, TOKEN_PURPOSE, token)), key.keyId(),
                                        hint(token)))
                                .map(updated -> done + updated.rowCount())));
                    }
                    return chain.compose(done -> rows.size() < batch ? Future.succeededFuture(done)
                            : sealPlaintext(batch).map(more -> done + more));
                });
    }

    /**
     * What the API shows of a token: the bot's public id (Telegram's {@code 123456:}) or the token's kind (Slack's
     * {@code xoxb-}, Meta's {@code EAA}, a Standard Webhooks {@code whsec_}) and, for a token long enough, its last four
     * characters.
     */
    public static String hint(String token) {
        String kind = token.startsWith("xox") ? token.substring(0, Math.min(5, token.length())) : token.startsWith("EAA") ? "EAA"
                : token.startsWith("whsec_") ? "whsec_" : token.startsWith("wcs_") ? "wcs_" : null;
        if (kind != null && token.length() > kind.length()) {
            return kind + "…" + (token.length() >= 21 ? token.substring(token.length() - 4) : "");
        }
        int colon = token.indexOf(':');
        if (colon < 0) {
            // a Discord token: its first part is the bot's id (public); the last four characters tell tokens apart
            return token.length() >= 21 ? token.substring(0, 4) + "…" + token.substring(token.length() - 4) : "…";
        }
        String id = colon < 0 ? "" : token.substring(0, colon);
        String secret = token.substring(colon + 1);
        return id + ":…" + (secret.length() >= 16 ? secret.substring(secret.length() - 4) : "");
    }

    /** The bots claimed whose token opens; one that does not is logged and left, so it cannot stop the others. */
    private List<ChannelBot> pollable(RowSet<Row> rows) {
        List<ChannelBot> out = new ArrayList<>(rows.size());
        for (Row row : rows) {
            try {
                out.add(bot(row));
            } catch (SecretException e) {
                LOG.error("bot not polled, its token does not open [tenant: {}, bot: {}]: {}", row.getString("tenant_id"),
                        row.getLong("id"), e.getMessage());
            }
        }
        return out;
    }

    private List<ChannelBot> bots(RowSet<Row> rows) {
        List<ChannelBot> out = new ArrayList<>(rows.size());
        rows.forEach(row -> out.add(bot(row)));
        return out;
    }

    private ChannelBot bot(Row row) {
        long id = row.getLong("id");
        String tenantId = row.getString("tenant_id");
        return new ChannelBot(id, tenantId, row.getString("bot_id"), row.getString("channel"), row.getString("name"), token(id, tenantId, row),
                row.getString("token_hint"), row.getString("api_url"), row.getBoolean("enabled"), row.getLong("update_offset"), row.getString("mode"),
                row.getString("webhook_url"), row.getString("dm_policy"), row.getString("group_policy"),
                open(signingSecrets, SIGNING_SECRET_PURPOSE, "signing_secret_enc", id, tenantId, row), row.getString("account_user_id"),
                row.getArrayOfStrings("allowed_origins") == null ? List.of() : List.of(row.getArrayOfStrings("allowed_origins")),
                row.getBoolean("anonymous_users"), row.getString("interactions_key"));
    }

    /** The bot's token: opened once per bot (and again only when its sealed bytes change), then from memory. */
    private String token(long id, String tenantId, Row row) {
        if (row.getBuffer("token_enc") == null) {
            return row.getString("token"); // not sealed yet: no master key was configured when it was written
        }
        return open(tokens, TOKEN_PURPOSE, "token_enc", id, tenantId, row);
    }

    /** A sealed column of the row, opened once per account (again only when its bytes change); null when the row has none. */
    private String open(Map<Long, Opened> cache, String purpose, String column, long id, String tenantId, Row row) {
        Buffer sealedBuffer = row.getBuffer(column);
        if (sealedBuffer == null) {
            return null;
        }
        byte[] sealed = sealedBuffer.getBytes();
        Opened opened = cache.get(id);
        if (opened != null && Arrays.equals(opened.sealed(), sealed)) {
            return opened.token();
        }
        Buffer wrapped = row.getBuffer("wrapped_key");
        String secret = keys.open(tenantId, purpose, row.getInteger("token_key_id"),
                wrapped == null ? null : wrapped.getBytes(), row.getString("master_key_id"), sealed);
        if (cache.size() >= TOKEN_CACHE_LIMIT) {
            cache.clear();
        }
        cache.put(id, new Opened(sealed, secret));
        return secret;
    }
}
