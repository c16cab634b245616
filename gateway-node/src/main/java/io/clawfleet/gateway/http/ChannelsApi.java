package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.telegram.TelegramApi;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.Objects;
import java.util.Set;
import io.clawfleet.shared.store.LimitReachedException;

/**
 * A tenant's push-channel bots: {@code POST /api/v1/channels/telegram} registers a Telegram bot
 * (its token is checked with Telegram first, then stored encrypted), {@code GET /api/v1/channels} lists them
 * (never their tokens: a hint such as {@code 123456:…abcd}), {@code DELETE /api/v1/channels/{id}} removes one.
 */
public final class ChannelsApi {

    private static final Set<String> FIELDS = Set.of("token", "apiUrl");

    private final ChannelBotStore bots;
    private final TelegramApi telegram;
    private final String defaultApiUrl;

    public ChannelsApi(ChannelBotStore bots, TelegramApi telegram, String defaultApiUrl) {
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
        String apiUrl = body.optionalString("apiUrl", 512);
        apiUrl = apiUrl == null ? defaultApiUrl : apiUrl.replaceAll("/+$", "");
        if (!apiUrl.matches("(?i)https?://.+")) {
            throw ApiException.badRequest("field 'apiUrl' must be an http:// or https:// URL");
        }
        register(owner, token, apiUrl).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause());
                return;
            }
            ctx.response().setStatusCode(201).putHeader("content-type", "application/json").end(json(result.result()).encode());
        });
    }

    /** Checks the token with Telegram (getMe), then stores the bot under its Telegram username. */
    public Future<ChannelBot> register(BotRef owner, String token, String apiUrl) {
        String tenantId = owner.tenantId();
        return telegram.getMe(apiUrl, token)
                .recover(failure -> Future.failedFuture(checkFailed(tenantId, apiUrl, failure)))
                .compose(me -> bots.register(owner, Channels.TELEGRAM, me.getString("username", "bot" + me.getValue("id")),
                        token, apiUrl).recover(failure -> Future.failedFuture(switch (failure) {
                            case LimitReachedException limit -> limit; // answered by GatewayErrors
                            case IllegalArgumentException conflict -> new ApiException(409, "conflict", conflict.getMessage());
                            case SecretException noKey -> new ApiException(503, "secrets_unavailable", "the bot token cannot "
                                    + "be stored encrypted on this gateway (error id " + ApiException.errorId(noKey,
                                    "a bot token cannot be sealed [tenant: " + tenantId + "]") + "); ask the operator");
                            default -> ApiException.unavailable("the bot cannot be stored", failure, 1);
                        })));
    }

    /**
     * What the caller learns when the token check fails: as little as will do. The details (refused before
     * connecting, connection refused, closed, an HTTP status) would let a tenant map the network the
     * gateway sits in; they go to the operator's log under an id the answer names.
     */
    private static ApiException checkFailed(String tenantId, String apiUrl, Throwable failure) {
        String errorId = ApiException.errorId(failure, "a bot's token check failed [tenant: " + tenantId + ", apiUrl: " + apiUrl + "]");
        if (failure instanceof DeliveryException d && d.retryable()) {
            return ApiException.unavailable("the Telegram API at " + apiUrl + " could not be reached to check the token (error id "
                    + errorId + "); try again later", 5);
        }
        return new ApiException(400, "token_check_failed", "the bot token could not be checked with the Telegram API at "
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

    public void delete(RoutingContext ctx) {
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("channel id must be a number, got '" + ctx.pathParam("id") + "'");
        }
        bots.delete(BotScope.bot(ctx), id).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the channel cannot be removed right now (database unavailable)", 1));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no channel " + id + " for this bot"));
            } else {
                ctx.response().setStatusCode(204).end();
            }
        });
    }

    private static JsonObject json(ChannelBot bot) {
        return new JsonObject().put("id", bot.id()).put("channel", bot.channel()).put("name", bot.name())
                .put("enabled", bot.enabled()).put("apiUrl", bot.apiUrl()).put("tokenHint", bot.tokenHint());
    }
}
