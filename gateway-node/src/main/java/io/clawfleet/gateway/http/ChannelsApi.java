package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.discord.DiscordApi;
import io.clawfleet.gateway.discord.DiscordInteractions;
import io.clawfleet.gateway.slack.SlackApi;
import io.clawfleet.gateway.telegram.TelegramApi;
import io.clawfleet.gateway.webchat.WebChat;
import io.clawfleet.gateway.webhooks.StandardWebhooks;
import io.clawfleet.gateway.whatsapp.WhatsAppApi;
import io.clawfleet.gateway.telegram.TelegramWebhook;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.Set;
import io.clawfleet.shared.store.LimitReachedException;

/**
 * A tenant's push-channel bots: {@code POST /api/v1/channels/telegram} registers a Telegram bot
 * (its token is checked with Telegram first, then stored encrypted), {@code POST /api/v1/channels/slack} a Slack app (its
 * token checked with {@code auth.test}, token and signing secret stored encrypted), {@code POST /api/v1/channels/whatsapp} a
 * WhatsApp business number (likewise, with the Meta app's secret), {@code GET /api/v1/channels} lists them
 * (never their tokens: a hint such as {@code 123456:…abcd}), {@code PATCH /api/v1/channels/{id}} switches one between
 * polling and webhook mode, {@code DELETE /api/v1/channels/{id}} removes one. Each also under
 * {@code /api/v1/bots/{botId}/channels}.
 */
public final class ChannelsApi {

    private static final Set<String> FIELDS = Set.of("token", "apiUrl");
    private static final Set<String> SLACK_FIELDS = Set.of("token", "signingSecret", "apiUrl");
    private static final Set<String> WHATSAPP_FIELDS = Set.of("accessToken", "appSecret", "phoneNumberId", "apiUrl");
    private static final Set<String> PATCH_FIELDS = Set.of("mode", "maxConnections", "dmPolicy", "groupPolicy", "allowFrom", "allowedOrigins",
            "anonymousUsers");
    /** Senders an account's {@code allowFrom} lists at most (paired ones come on top). */
    static final int MAX_ALLOWED = 1_000;
    /** Updates Telegram posts at once by default: one keeps every chat in the order Telegram has it. */
    static final int DEFAULT_MAX_CONNECTIONS = 1;
    /**
     * How long a mode switch holds its account against another switch: longer than a Telegram call may take (30 s
     * without a byte, plus the database write), short enough that a gateway dying mid-switch blocks the next one for
     * a minute at most.
     */
    static final long MODE_SWITCH_LEASE_MS = 60_000;

    private static final Logger LOG = LoggerFactory.getLogger(ChannelsApi.class);

    private final ChannelBotStore bots;
    private final TelegramApi telegram;
    private final SlackApi slack;
    private final DiscordApi discord;
    private final WhatsAppApi whatsapp;
    private final String defaultApiUrl;
    private final String publicUrl;
    private final ChannelAccessStore access;
    private final SenderAccess senderAccess;

    /** @param publicUrl the URL the gateways are reached at from the internet ({@code http.publicUrl}); null = none */
    public ChannelsApi(ChannelBotStore bots, TelegramApi telegram, SlackApi slack, WhatsAppApi whatsapp, DiscordApi discord,
                       String defaultApiUrl, String publicUrl, ChannelAccessStore access, SenderAccess senderAccess) {
        this.discord = Objects.requireNonNull(discord);
        this.slack = Objects.requireNonNull(slack);
        this.whatsapp = Objects.requireNonNull(whatsapp);
        this.publicUrl = publicUrl;
        this.access = Objects.requireNonNull(access);
        this.senderAccess = Objects.requireNonNull(senderAccess);
        this.bots = Objects.requireNonNull(bots);
        this.telegram = Objects.requireNonNull(telegram);
        this.defaultApiUrl = Objects.requireNonNull(defaultApiUrl);
    }

    public void addTelegram(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, FIELDS);
        String token = body.requiredString("token", 256).strip();
        if (!token.matches("[0-9]+:[A-Za-z0-9_-]{10,}")) {
            throw ApiException.badRequest("field 'token' must be a Telegram bot token like 123456:ABC-DEF1234ghIkl (from @BotFather)");
        }
        String apiUrl = apiUrl(body, defaultApiUrl);
        register(owner, token, apiUrl).onComplete(result -> created(ctx, result, null, null));
    }

    /**
     * {@code POST /api/v1/bots/{botId}/channels/slack}: a Slack app, by its bot token ({@code xoxb-...}) and signing
     * secret. The token is checked with {@code auth.test} (which also names the app's bot user, how mentions are told),
     * then both are stored sealed. The answer's {@code webhookUrl} is the Request URL to give the app's Event
     * Subscriptions.
     */
    /**
     * {@code POST .../channels/discord} {@code {"token", "apiUrl"?}}: a Discord bot. The token is checked with {@code GET
     * /users/@me} (which names the bot's user), sealed, and the bot's Gateway connection is taken by one gateway.
     */
    public void addDiscord(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, Set.of("token", "apiUrl", "publicKey"));
        String publicKey = body.optionalString("publicKey", 64);
        if (publicKey != null && !DiscordInteractions.isPublicKey(publicKey)) {
            throw ApiException.badRequest("field 'publicKey' must be the application's Public Key (General Information): 64 hex "
                    + "digits");
        }
        String token = body.requiredString("token", 256).strip();
        if (!token.matches("[A-Za-z0-9_.-]{50,100}")) {
            throw ApiException.badRequest("field 'token' must be a Discord bot token (the Bot page of the application, Reset "
                    + "Token): 50 to 100 letters, digits, '.', '_' and '-'");
        }
        String apiUrl = apiUrl(body, DiscordApi.DEFAULT_URL);
        String tenantId = owner.tenantId();
        String checkedUrl = apiUrl;
        discord.me(apiUrl, token)
                .recover(failure -> Future.failedFuture(checkFailed("Discord", tenantId, checkedUrl, failure)))
                .compose(me -> {
                    if (!(me.getValue("id") instanceof String userId) || !userId.matches("[0-9]{1,20}")
                            || !Boolean.TRUE.equals(me.getValue("bot"))) {
                        return Future.failedFuture(new ApiException(400, "token_check_failed", "Discord's /users/@me did not "
                                + "name a bot user: give the token of the application's bot (Bot page), not a user's"));
                    }
                    return bots.register(owner, Channels.DISCORD, me.getString("username", "bot" + userId), userId, token, checkedUrl)
                            .recover(failure -> Future.failedFuture(storeFailed(tenantId, failure)))
                            .compose(bot -> publicKey == null ? Future.succeededFuture(bot)
                                    : bots.setInteractionsKey(owner, bot.id(), publicKey.toLowerCase(java.util.Locale.ROOT))
                                            .compose(set -> bots.find(owner, bot.id())).map(found -> found.orElse(bot)));
                })
                .onComplete(result -> created(ctx, result, null, null));
    }

    public void addSlack(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, SLACK_FIELDS);
        String token = body.requiredString("token", 256).strip();
        if (!token.matches("xoxb-[A-Za-z0-9-]{10,250}")) {
            throw ApiException.badRequest("field 'token' must be a Slack bot token like xoxb-123-456-abc (the app's Bot User "
                    + "OAuth Token, under OAuth & Permissions)");
        }
        String signingSecret = body.requiredString("signingSecret", 128).strip();
        if (!signingSecret.matches("[A-Za-z0-9]{16,128}")) {
            throw ApiException.badRequest("field 'signingSecret' must be the app's Signing Secret (Basic Information, App "
                    + "Credentials): 16 to 128 letters and digits");
        }
        String apiUrl = apiUrl(body, SlackApi.DEFAULT_API_URL);
        if (publicUrl == null) {
            throw new ApiException(409, "no_public_url", "a Slack app posts its events to the gateways, which needs the URL they "
                    + "are reached at from the internet; ask the operator to set http.publicUrl (CLAWFLEET_HTTP_PUBLIC_URL)");
        }
        String tenantId = owner.tenantId();
        String checkedUrl = apiUrl;
        slack.authTest(apiUrl, token)
                .recover(failure -> Future.failedFuture(checkFailed("Slack", tenantId, checkedUrl, failure)))
                .compose(me -> {
                    if (!(me.getValue("user_id") instanceof String userId) || !userId.matches("[A-Z0-9]{1,32}")) {
                        return Future.failedFuture(new ApiException(400, "token_check_failed", "Slack's auth.test did not name "
                                + "the app's bot user: give the Bot User OAuth Token (xoxb-), not a user token"));
                    }
                    return bots.registerSlack(owner, me.getString("user", userId), userId, token, signingSecret, checkedUrl,
                            publicUrl + "/hooks/slack/").recover(failure -> Future.failedFuture(storeFailed(tenantId, failure)));
                })
                .onComplete(result -> created(ctx, result, null, null));
    }

    /**
     * {@code POST /api/v1/bots/{botId}/channels/whatsapp}: a WhatsApp business phone number (Cloud API), by its access
     * token, its Meta app's secret and the number's id. The token is checked by reading the number from the Graph API;
     * token and app secret are stored sealed. The answer has the {@code webhookUrl} and a new {@code verifyToken} to give
     * the app's WhatsApp webhook configuration; the verify token is shown this once (only its digest is kept).
     */
    public void addWhatsApp(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, WHATSAPP_FIELDS);
        String token = body.requiredString("accessToken", 1024).strip();
        if (!token.matches("[A-Za-z0-9_-]{20,1024}")) {
            throw ApiException.badRequest("field 'accessToken' must be a Meta access token (a system user's permanent token, with "
                    + "whatsapp_business_messaging): 20 or more letters and digits");
        }
        String appSecret = body.requiredString("appSecret", 128).strip();
        if (!appSecret.matches("[A-Za-z0-9]{16,128}")) {
            throw ApiException.badRequest("field 'appSecret' must be the Meta app's App Secret (App settings, Basic): 16 to 128 "
                    + "letters and digits");
        }
        String phoneNumberId = body.requiredString("phoneNumberId", 32).strip();
        if (!phoneNumberId.matches("[0-9]{5,32}")) {
            throw ApiException.badRequest("field 'phoneNumberId' must be the number's Phone number ID (WhatsApp, API Setup): digits, "
                    + "not the phone number itself");
        }
        String apiUrl = apiUrl(body, WhatsAppApi.DEFAULT_API_URL);
        if (publicUrl == null) {
            throw new ApiException(409, "no_public_url", "WhatsApp posts its messages to the gateways, which needs the URL they are "
                    + "reached at from the internet; ask the operator to set http.publicUrl (CLAWFLEET_HTTP_PUBLIC_URL)");
        }
        String tenantId = owner.tenantId();
        String checkedUrl = apiUrl;
        String verifyToken = TelegramWebhook.newSecret();
        whatsapp.phoneNumber(apiUrl, token, phoneNumberId)
                .recover(failure -> Future.failedFuture(checkFailed("WhatsApp", tenantId, checkedUrl, failure)))
                .compose(number -> bots.registerWhatsApp(owner, number.getString("display_phone_number", phoneNumberId), phoneNumberId,
                                token, appSecret, TelegramWebhook.digest(verifyToken), checkedUrl, publicUrl + "/hooks/whatsapp/")
                        .recover(failure -> Future.failedFuture(storeFailed(tenantId, failure))))
                .onComplete(result -> created(ctx, result, "verifyToken", verifyToken));
    }

    /**
     * {@code POST /api/v1/bots/{botId}/channels/webhook}: an inbound webhook account, for the tenant's own systems to post
     * messages to the bot ({@code {"name"?}}). The answer has its {@code webhookUrl} and its signing {@code secret}
     * ({@code whsec_...}), shown this once.
     */
    public void addInboundWebhook(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, Set.of("name"));
        String name = body.optionalString("name", 64);
        if (publicUrl == null) {
            throw new ApiException(409, "no_public_url", "an inbound webhook is posted to the gateways at their public URL; ask the "
                    + "operator to set http.publicUrl (CLAWFLEET_HTTP_PUBLIC_URL)");
        }
        String secret = StandardWebhooks.newSecret();
        String tenantId = owner.tenantId();
        bots.registerInboundWebhook(owner, name == null || name.isBlank() ? "inbound" : name.strip(), secret, publicUrl + "/hooks/inbound/")
                .recover(failure -> Future.failedFuture(storeFailed(tenantId, failure)))
                .onComplete(result -> created(ctx, result, "secret", secret));
    }

    /**
     * {@code POST .../channels/webchat} {@code {"allowedOrigins": ["https://shop.example"], "anonymousUsers"?: false,
     * "name"?}}: a web chat account. Its publishable key goes in the page's script tag; its secret (shown once) signs the
     * end-user tokens the tenant's backend mints.
     */
    public void addWebChat(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, Set.of("name", "allowedOrigins", "anonymousUsers"));
        String name = body.optionalString("name", 64);
        List<String> origins = origins(body.json().getValue("allowedOrigins"));
        if (origins == null) {
            throw ApiException.badRequest("field 'allowedOrigins' is required: the origins (scheme://host[:port]) of the pages "
                    + "that may open the chat, or [\"*\"] for any");
        }
        boolean anonymous = body.optionalBoolean("anonymousUsers", false);
        String secret = WebChat.newSecret();
        String tenantId = owner.tenantId();
        bots.registerWebChat(owner, name == null || name.isBlank() ? "webchat" : name.strip(), WebChat.newPublicPart(), secret,
                        origins, anonymous)
                .recover(failure -> Future.failedFuture(storeFailed(tenantId, failure)))
                .onComplete(result -> created(ctx, result, "secret", secret));
    }

    /** The platform API's base URL a registration gives ({@code apiUrl}), or the platform's own; no trailing slash. */
    private static String apiUrl(JsonRequest body, String platformDefault) {
        String apiUrl = body.optionalString("apiUrl", 512);
        apiUrl = apiUrl == null ? platformDefault : apiUrl.replaceAll("/+$", "");
        if (!apiUrl.matches("(?i)https?://.+")) {
            throw ApiException.badRequest("field 'apiUrl' must be an http:// or https:// URL");
        }
        return apiUrl;
    }

    /** Answers a registration: {@code 201} with the account, and the one thing shown only now ({@code shownOnce}), if any. */
    private void created(RoutingContext ctx, io.vertx.core.AsyncResult<ChannelBot> result, String shownOnce, String value) {
        if (result.failed()) {
            ctx.fail(result.cause());
            return;
        }
        JsonObject account = json(result.result());
        if (shownOnce != null) {
            account.put(shownOnce, value);
        }
        ctx.response().setStatusCode(201).putHeader("content-type", "application/json").end(account.encode());
    }

    /** The origins a web chat allows: a non-empty list of {@code scheme://host[:port]} (or {@code *}); null when not given. */
    static List<String> origins(Object value) {
        if (value == null) {
            return null;
        }
        if (!(value instanceof JsonArray list) || list.isEmpty() || list.size() > 32) {
            throw ApiException.badRequest("field 'allowedOrigins' must be a list of 1 to 32 origins");
        }
        List<String> origins = new java.util.ArrayList<>();
        for (Object item : list) {
            if (!(item instanceof String origin) || !(origin.equals("*")
                    || origin.matches("https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|https?://\\[[0-9A-Fa-f:.]{2,45}](:[0-9]{1,5})?"))) {
                throw ApiException.badRequest("field 'allowedOrigins' must hold origins as browsers send them, "
                        + "scheme://host[:port] with no path (https://shop.example), or \"*\"; got " + item);
            }
            origins.add(origin.toLowerCase(java.util.Locale.ROOT));
        }
        return List.copyOf(new java.util.LinkedHashSet<>(origins));
    }

    /** Checks the token with Telegram (getMe), then stores the bot under its Telegram username. */
    public Future<ChannelBot> register(BotRef owner, String token, String apiUrl) {
        String tenantId = owner.tenantId();
        return telegram.getMe(apiUrl, token)
                .recover(failure -> Future.failedFuture(checkFailed("Telegram", tenantId, apiUrl, failure)))
                .compose(me -> bots.register(owner, Channels.TELEGRAM, me.getString("username", "bot" + me.getValue("id")),
                        token, apiUrl).recover(failure -> Future.failedFuture(storeFailed(tenantId, failure))));
    }

    private static Throwable storeFailed(String tenantId, Throwable failure) {
        return switch (failure) {
            case LimitReachedException limit -> limit; // answered by GatewayErrors
            case IllegalArgumentException conflict -> new ApiException(409, "conflict", conflict.getMessage());
            case SecretException noKey -> new ApiException(503, "secrets_unavailable", "the bot token cannot "
                    + "be stored encrypted on this gateway (error id " + ApiException.errorId(noKey,
                    "a bot token cannot be sealed [tenant: " + tenantId + "]") + "); ask the operator");
            default -> ApiException.unavailable("the bot cannot be stored", failure, 1);
        };
    }

    /**
     * What the caller learns when the token check fails: as little as will do. The details (refused before
     * connecting, connection refused, closed, an HTTP status) would let a tenant map the network the
     * gateway sits in; they go to the operator's log under an id the answer names.
     */
    private static ApiException checkFailed(String platform, String tenantId, String apiUrl, Throwable failure) {
        String errorId = ApiException.errorId(failure, "a bot's token check failed [tenant: " + tenantId + ", apiUrl: " + apiUrl + "]");
        if (failure instanceof DeliveryException d && d.retryable()) {
            return ApiException.unavailable("the " + platform + " API at " + apiUrl + " could not be reached to check the token (error id "
                    + errorId + "); try again later", 5);
        }
        return new ApiException(400, "token_check_failed", "the bot token could not be checked with the " + platform + " API at "
                + apiUrl + " (error id " + errorId + "); check the token and the URL, or ask the operator with the error id");
    }

    public void list(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        String tenantId = owner.tenantId();
        bots.list(owner).onComplete(result -> {
            if (result.failed() && result.cause() instanceof SecretException secret) {
                ctx.fail(new ApiException(503, "secrets_unavailable", "channels cannot be read: a bot token does not open on this "
                        + "gateway (error id " + ApiException.errorId(secret, "channels cannot be read [tenant: " + tenantId + "]")
                        + "); ask the operator"));
                return;
            }
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("channels cannot be read right now (database unavailable)", 1));
                return;
            }
            JsonArray items = new JsonArray();
            result.result().forEach(bot -> items.add(json(bot)));
            ctx.json(new JsonObject().put("channels", items));
        });
    }

    /**
     * Changes how a channel account takes messages, any of: {@code mode} ({@code "webhook"} points Telegram at
     * {@code {http.publicUrl}/hooks/telegram/{id}} with a new secret, then records it, and polling stops;
     * {@code "polling"} removes the webhook at Telegram, keeping what is pending, then lets a gateway poll again),
     * {@code dmPolicy}, {@code groupPolicy} and {@code allowFrom} (who may talk to the bot, docs/CHANNELS.md). Telegram
     * is told first, and the mode is changed before the policies: when Telegram refuses (a URL it does not take),
     * nothing changed. Either way an update comes
     * once: its id is the message's idempotency key.
     */
    public void patch(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = channelId(ctx);
        JsonRequest body = JsonRequest.parse(ctx, PATCH_FIELDS);
        String mode = body.optionalString("mode", 16);
        if (mode != null && !ChannelBot.POLLING.equals(mode) && !ChannelBot.WEBHOOK.equals(mode)) {
            throw ApiException.badRequest("field 'mode' must be 'polling' or 'webhook', got '" + mode + "'");
        }
        Object given = body.json().getValue("maxConnections");
        if (given != null && (!ChannelBot.WEBHOOK.equals(mode) || !(given instanceof Integer n) || n < 1 || n > 100)) {
            throw ApiException.badRequest(ChannelBot.WEBHOOK.equals(mode) ? "field 'maxConnections' must be a whole number from 1 to 100"
                    : "field 'maxConnections' goes with \"mode\": \"webhook\" only");
        }
        int maxConnections = given == null ? DEFAULT_MAX_CONNECTIONS : (Integer) given;
        String dmPolicy = oneOf(body, "dmPolicy", ChannelAccessStore.DM_POLICIES);
        String groupPolicy = oneOf(body, "groupPolicy", ChannelAccessStore.GROUP_POLICIES);
        List<String> allowFrom = senders(body.json().getValue("allowFrom"));
        List<String> allowedOrigins = origins(body.json().getValue("allowedOrigins"));
        Object anonymousValue = body.json().getValue("anonymousUsers");
        if (anonymousValue != null && !(anonymousValue instanceof Boolean)) {
            throw ApiException.badRequest("field 'anonymousUsers' must be true or false");
        }
        Boolean anonymousUsers = (Boolean) anonymousValue;
        if (mode == null && dmPolicy == null && groupPolicy == null && allowFrom == null && allowedOrigins == null
                && anonymousUsers == null) {
            throw ApiException.badRequest("nothing to change: give 'mode', 'dmPolicy', 'groupPolicy' or 'allowFrom' (and "
                    + "for a web chat 'allowedOrigins' or 'anonymousUsers')");
        }
        if (ChannelBot.WEBHOOK.equals(mode) && publicUrl == null) {
            throw new ApiException(409, "no_public_url", "webhook mode needs the URL the gateways are reached at from the internet;"
                    + " ask the operator to set http.publicUrl (CLAWFLEET_HTTP_PUBLIC_URL)");
        }
        bots.find(owner, id).compose(found -> {
            ChannelBot bot = found.orElseThrow(() -> ApiException.notFound("no channel " + id + " for this bot"));
            if (mode != null && !Channels.TELEGRAM.equals(bot.channel())) {
                throw ApiException.badRequest("a " + bot.channel() + " channel takes its events by webhook only: 'mode' is for "
                        + "Telegram channels; nothing changed");
            }
            if ((dmPolicy != null || groupPolicy != null || allowFrom != null) && Channels.WEBCHAT.equals(bot.channel())) {
                throw ApiException.badRequest("a web chat's users are those its site signs tokens for (or anonymous visitors, "
                        + "if allowed): 'dmPolicy', 'groupPolicy' and 'allowFrom' do not apply; nothing changed");
            }
            if ((allowedOrigins != null || anonymousUsers != null) && !Channels.WEBCHAT.equals(bot.channel())) {
                throw ApiException.badRequest("'allowedOrigins' and 'anonymousUsers' are for web chat channels; nothing changed");
            }
            // The mode first: when Telegram refuses it, the request fails having changed nothing at all.
            Future<?> switched = mode == null ? Future.succeededFuture()
                    : bots.claimModeSwitch(owner, id, MODE_SWITCH_LEASE_MS).compose(claimed -> {
                        if (!claimed) {
                            return Future.failedFuture(new ApiException(409, "mode_switch_in_progress", "another mode switch "
                                    + "of channel " + id + " is under way; nothing changed, try again in a few seconds"));
                        }
                        return switchMode(owner, bot, mode, maxConnections).recover(failure ->
                                bots.releaseModeSwitch(owner, id).transform(released -> Future.failedFuture(failure)));
                    });
            return switched
                    .compose(v -> dmPolicy == null && groupPolicy == null ? Future.succeededFuture()
                            : access.setPolicies(owner, id, dmPolicy, groupPolicy))
                    .compose(v -> allowFrom == null ? Future.succeededFuture() : access.setAllowed(owner, id, allowFrom))
                    .compose(v -> allowedOrigins == null && anonymousUsers == null ? Future.succeededFuture()
                            : bots.updateWebChat(owner, id, allowedOrigins, anonymousUsers))
                    .compose(v -> {
                        senderAccess.forget(id);
                        return bots.find(owner, id);
                    });
        }).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause() instanceof ApiException api ? api
                        : ApiException.unavailable("the channel cannot be changed right now (database unavailable)", result.cause(), 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no channel " + id + " for this bot")); // removed meanwhile
            } else {
                ctx.json(json(result.result().get()));
            }
        });
    }

    /**
     * Tells Telegram the new mode, then records it (which also lets the caller's {@link ChannelBotStore#claimModeSwitch}
     * claim go). {@code "webhook"} comes with a new secret each time: only its digest is kept.
     */
    private Future<Optional<ChannelBot>> switchMode(BotRef owner, ChannelBot bot, String mode, int maxConnections) {
        String tenantId = owner.tenantId();
        if (ChannelBot.POLLING.equals(mode)) {
            return telegram.deleteWebhook(bot.apiUrl(), bot.token())
                    .recover(failure -> Future.failedFuture(switchFailed(tenantId, bot, "deleteWebhook", failure)))
                    .compose(done -> bots.usePolling(owner, bot.id()));
        }
        String secret = TelegramWebhook.newSecret();
        String url = publicUrl + "/hooks/telegram/" + bot.id();
        return telegram.setWebhook(bot.apiUrl(), bot.token(), url, secret, maxConnections)
                .recover(failure -> Future.failedFuture(switchFailed(tenantId, bot, "setWebhook", failure)))
                .compose(done -> bots.useWebhook(owner, bot.id(), TelegramWebhook.digest(secret), url));
    }

    /** {@code GET /api/v1/channels/{id}/senders}: the account's allowed senders and those waiting with a code. */
    public void senders(RoutingContext ctx) {
        long id = channelId(ctx);
        access.senders(BotScope.bot(ctx), id).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the senders cannot be read right now (database unavailable)", 1));
            } else if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no channel " + id + " for this bot"));
            } else {
                JsonArray items = new JsonArray();
                result.result().get().forEach(sender -> items.add(new JsonObject().put("senderId", sender.senderId())
                        .put("status", sender.status()).put("createdAt", sender.createdAt().toString())
                        .put("approvedAt", sender.approvedAt() == null ? null : sender.approvedAt().toString())));
                ctx.json(new JsonObject().put("senders", items));
            }
        });
    }

    private static String oneOf(JsonRequest body, String field, Set<String> allowed) {
        String value = body.optionalString(field, 16);
        if (value != null && !allowed.contains(value)) {
            throw ApiException.badRequest("field '" + field + "' must be one of " + new java.util.TreeSet<>(allowed) + ", got '"
                    + value + "'");
        }
        return value;
    }

    /** {@code allowFrom}: sender ids (Telegram user ids), as strings or numbers; at most {@link #MAX_ALLOWED}. */
    private static List<String> senders(Object value) {
        if (value == null) {
            return null;
        }
        if (!(value instanceof JsonArray array) || array.size() > MAX_ALLOWED) {
            throw ApiException.badRequest("field 'allowFrom' must be an array of at most " + MAX_ALLOWED + " sender ids");
        }
        List<String> out = new ArrayList<>(array.size());
        for (Object item : array) {
            String id = item instanceof String text ? text.strip() : item instanceof Long || item instanceof Integer
                    ? item.toString() : null;
            if (id == null || id.isEmpty() || id.length() > 64) {
                throw ApiException.badRequest("field 'allowFrom' must hold sender ids: strings or whole numbers of 1 to 64 "
                        + "characters, got " + JsonRequest.kind(item));
            }
            out.add(id);
        }
        return List.copyOf(new java.util.LinkedHashSet<>(out));
    }

    private static ApiException switchFailed(String tenantId, ChannelBot bot, String method, Throwable failure) {
        String errorId = ApiException.errorId(failure, "Telegram " + method + " failed [tenant: " + tenantId + ", channel: "
                + bot.id() + "]");
        if (failure instanceof DeliveryException d && d.retryable()) {
            return ApiException.unavailable("the Telegram API could not be reached to change the mode (error id " + errorId
                    + "); nothing changed, try again later", 5);
        }
        return new ApiException(502, "telegram_refused", "Telegram refused " + method + ": " + failure.getMessage()
                + " (error id " + errorId + "); nothing changed");
    }

    public void delete(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        long id = channelId(ctx);
        bots.find(owner, id).compose(found -> bots.delete(owner, id).map(deleted -> {
            // A webhook left at Telegram would post to an address that answers 401 from now on: remove it (best effort).
            found.filter(bot -> deleted && Channels.TELEGRAM.equals(bot.channel()) && ChannelBot.WEBHOOK.equals(bot.mode())).ifPresent(bot ->
                    telegram.deleteWebhook(bot.apiUrl(), bot.token()).onFailure(e -> LOG.warn("the webhook of a removed "
                            + "telegram bot is still set at Telegram [tenant: {}, bot: {}]: {}", owner.tenantId(), bot.name(),
                            e.getMessage())));
            return deleted;
        })).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the channel cannot be removed right now (database unavailable)", 1));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no channel " + id + " for this bot"));
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private static long channelId(RoutingContext ctx) {
        try {
            return Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("channel id must be a number, got '" + ctx.pathParam("id") + "'");
        }
    }

    private JsonObject json(ChannelBot bot) {
        if (Channels.DISCORD.equals(bot.channel())) {
            // Messages come over the Gateway connection one gateway holds: no webhook, no mode to switch.
            return new JsonObject().put("id", bot.id()).put("channel", bot.channel()).put("name", bot.name())
                    .put("enabled", bot.enabled()).put("apiUrl", bot.apiUrl()).put("tokenHint", bot.tokenHint())
                    .put("mode", "gateway").put("dmPolicy", bot.dmPolicy()).put("groupPolicy", bot.groupPolicy())
                    .put("accountUserId", bot.accountUserId())
                    .put("interactionsUrl", bot.interactionsKey() == null ? null
                            : (publicUrl == null ? "" : publicUrl) + "/hooks/discord/" + bot.id());
        }
        if (Channels.WEBCHAT.equals(bot.channel())) {
            // Not a webhook: pages connect to the gateways; what a site needs is its key and the widget's script tag.
            String base = publicUrl == null ? "" : publicUrl;
            String key = WebChat.publishableKey(bot);
            return new JsonObject().put("id", bot.id()).put("channel", bot.channel()).put("name", bot.name())
                    .put("enabled", bot.enabled()).put("tokenHint", bot.tokenHint()).put("publishableKey", key)
                    .put("allowedOrigins", new JsonArray(bot.allowedOrigins())).put("anonymousUsers", bot.anonymousUsers())
                    .put("websocketUrl", base.replaceFirst("^http", "ws") + WebChat.SOCKET_PATH + "?key=" + key)
                    .put("widgetScript", "<script src=\"" + base + WebChat.WIDGET_PATH + "\" data-key=\"" + key + "\" async></script>");
        }
        return new JsonObject().put("id", bot.id()).put("channel", bot.channel()).put("name", bot.name())
                .put("enabled", bot.enabled()).put("apiUrl", bot.apiUrl()).put("tokenHint", bot.tokenHint())
                .put("mode", bot.mode()).put("webhookUrl", bot.webhookUrl()).put("dmPolicy", bot.dmPolicy())
                .put("groupPolicy", bot.groupPolicy()).put("accountUserId", bot.accountUserId());
    }
}
