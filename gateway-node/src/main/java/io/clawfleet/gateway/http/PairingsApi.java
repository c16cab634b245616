package io.clawfleet.gateway.http;

import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.delivery.ChannelNotices;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.ChannelAccessStore;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;

/**
 * A bot's pairing codes: {@code GET /api/v1/bots/{botId}/pairings} lists the live ones (who asked, in which chat,
 * until when), {@code POST /api/v1/bots/{botId}/pairings/{code}/approve} lets that sender talk to the bot from now on
 * and tells them so in their chat. A code is the bot's: another bot's or tenant's code is a 404 like an unknown one.
 */
public final class PairingsApi {

    private static final Logger LOG = LoggerFactory.getLogger(PairingsApi.class);
    static final String APPROVED_NOTICE = "You have been approved: you can talk to this bot now. Please send your message again.";

    private final ChannelAccessStore access;
    private final SenderAccess senderAccess;
    private final ChannelBotStore bots;
    private final ChannelNotices notices;

    public PairingsApi(ChannelAccessStore access, SenderAccess senderAccess, ChannelBotStore bots, ChannelNotices notices) {
        this.access = Objects.requireNonNull(access);
        this.senderAccess = Objects.requireNonNull(senderAccess);
        this.bots = Objects.requireNonNull(bots);
        this.notices = Objects.requireNonNull(notices);
    }

    public void list(RoutingContext ctx) {
        access.pending(BotScope.bot(ctx)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("pairings cannot be read right now (database unavailable)", 1));
                return;
            }
            JsonArray items = new JsonArray();
            result.result().forEach(p -> items.add(new JsonObject().put("code", p.code()).put("channelId", p.channelId())
                    .put("senderId", p.senderId()).put("chatId", p.chatId()).put("createdAt", p.createdAt().toString())
                    .put("expiresAt", p.expiresAt().toString())));
            ctx.json(new JsonObject().put("pairings", items));
        });
    }

    public void approve(RoutingContext ctx) {
        BotRef owner = BotScope.bot(ctx);
        String code = ctx.pathParam("code");
        if (code == null || code.length() > 32) {
            throw ApiException.notFound("no pending pairing code '" + code + "' for this bot");
        }
        access.approve(owner, code).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the pairing cannot be approved right now (database unavailable)", 1));
                return;
            }
            if (result.result().isEmpty()) {
                ctx.fail(ApiException.notFound("no pending pairing code '" + ChannelAccessStore.normalize(code)
                        + "' for this bot (codes hold for " + ChannelAccessStore.CODE_TTL.toMinutes() + " minutes)"));
                return;
            }
            ChannelAccessStore.Approved approved = result.result().get();
            senderAccess.forget(approved.channelId());
            tell(owner, approved);
            ctx.json(new JsonObject().put("channelId", approved.channelId()).put("senderId", approved.senderId())
                    .put("status", "allowed"));
        });
    }

    /** Tells the sender in the chat it asked from (best effort: the approval holds whether or not this arrives). */
    private void tell(BotRef owner, ChannelAccessStore.Approved approved) {
        if (approved.chatId() == null) {
            return;
        }
        bots.find(owner, approved.channelId())
                .compose(found -> found.map(bot -> notices.tell(bot, approved.chatId(), APPROVED_NOTICE))
                        .orElse(io.vertx.core.Future.succeededFuture()))
                .onFailure(e -> LOG.warn("an approved sender was not told [tenant: {}, bot: {}, channel: {}]: {}", owner.tenantId(),
                        owner.botId(), approved.channelId(), e.getMessage()));
    }
}
