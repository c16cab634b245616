package io.clawfleet.gateway.discord;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.access.SenderAccess;
import io.clawfleet.gateway.admission.Deferral;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * {@code POST /hooks/discord/{id}}: a Discord application's Interactions Endpoint, on any gateway. Every post is signed
 * by Discord with Ed25519 over {@code X-Signature-Timestamp} followed by the raw body, checked with the application's
 * public key (given at registration); a post signed otherwise, or more than {@link #WINDOW_SECONDS} off, is a
 * {@code 401} (Discord itself sends such posts to check that the endpoint refuses them). A {@code PING} is answered
 * {@code PONG}. A slash command ({@code APPLICATION_COMMAND}) whose first option is text (e.g. {@code /ask question:...})
 * is a message to the bot in the channel it was used in: taken once (keyed by the interaction's id), then answered with
 * the question shown in the channel; the bot's reply follows there as a message, like any other.
 */
public final class DiscordInteractions {

    public static final String PATH = "/hooks/discord/:id";
    static final long WINDOW_SECONDS = 300;
    /** The DER prefix of an Ed25519 public key (RFC 8410) before its 32 raw bytes. */
    private static final byte[] X509_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");
    private static final int EPHEMERAL = 1 << 6;

    private final ChannelBotStore bots;
    private final Ingest ingest;
    private final Deferral deferral;
    private final SenderAccess access;
    private final Metrics metrics;
    private final LongSupplier epochSeconds = () -> System.currentTimeMillis() / 1000;

    public DiscordInteractions(ChannelBotStore bots, Ingest ingest, Deferral deferral, SenderAccess access, Metrics metrics) {
        this.bots = Objects.requireNonNull(bots);
        this.ingest = Objects.requireNonNull(ingest);
        this.deferral = Objects.requireNonNull(deferral);
        this.access = Objects.requireNonNull(access);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** Whether {@code hex} is an Ed25519 public key as the developer portal shows it (64 hex digits). */
    public static boolean isPublicKey(String hex) {
        return hex != null && hex.matches("[0-9a-fA-F]{64}");
    }

    /** Whether {@code signatureHex} is the application's signature of {@code timestamp + body}. */
    static boolean verify(String publicKeyHex, String signatureHex, String timestamp, byte[] body) {
        try {
            byte[] raw = HexFormat.of().parseHex(publicKeyHex);
            byte[] der = new byte[X509_PREFIX.length + raw.length];
            System.arraycopy(X509_PREFIX, 0, der, 0, X509_PREFIX.length);
            System.arraycopy(raw, 0, der, X509_PREFIX.length, raw.length);
            PublicKey key = KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
            Signature signature = Signature.getInstance("Ed25519");
            signature.initVerify(key);
            signature.update(timestamp.getBytes(StandardCharsets.UTF_8));
            signature.update(body);
            return signature.verify(HexFormat.of().parseHex(signatureHex));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            return false;
        }
    }

    public void handle(RoutingContext ctx) {
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            refuse(ctx, "id");
            return;
        }
        String signature = ctx.request().getHeader("X-Signature-Ed25519");
        String timestamp = ctx.request().getHeader("X-Signature-Timestamp");
        if (signature == null || !signature.matches("[0-9a-fA-F]{128}") || timestamp == null || !timestamp.matches("[0-9]{1,12}")
                || Math.abs(epochSeconds.getAsLong() - Long.parseLong(timestamp)) > WINDOW_SECONDS) {
            refuse(ctx, "signature");
            return;
        }
        Buffer body = ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
        bots.interactionsTarget(id).onComplete(found -> {
            if (found.failed()) {
                ctx.fail(ApiException.unavailable("the interaction cannot be taken now (error id " + ApiException.errorId(found.cause(),
                        "a discord account cannot be read [channel: " + id + "]") + ")", 5));
                return;
            }
            if (found.result().isEmpty() || !verify(found.result().get().bot().interactionsKey(), signature, timestamp, body.getBytes())) {
                refuse(ctx, "signature");
                return;
            }
            JsonObject interaction;
            try {
                interaction = body.toJsonObject();
            } catch (RuntimeException e) {
                ctx.fail(ApiException.badRequest("the interaction is not a JSON object"));
                return;
            }
            take(ctx, found.result().get(), interaction);
        });
    }

    private void take(RoutingContext ctx, ChannelBotStore.WebhookTarget target, JsonObject interaction) {
        int type = interaction.getInteger("type", 0);
        if (type == 1) {
            answer(ctx, new JsonObject().put("type", 1)); // PING: PONG
            return;
        }
        ChannelBot bot = target.bot();
        String text = commandText(interaction);
        JsonObject user = interaction.getJsonObject("member") != null ? interaction.getJsonObject("member").getJsonObject("user")
                : interaction.getJsonObject("user");
        String userId = user == null ? null : user.getString("id");
        String channel = interaction.getValue("channel_id") instanceof String c && c.matches("[0-9]{1,20}") ? c : null;
        String interactionId = interaction.getValue("id") instanceof String i && i.matches("[0-9]{1,20}") ? i : null;
        if (type != 2 || text == null || userId == null || channel == null || interactionId == null) {
            metrics.increment("clawfleet.discord.skipped", "reason", "interaction", "tenant", bot.tenantId());
            answer(ctx, ephemeral("This command takes a text option: /ask question:<what to ask>."));
            return;
        }
        if (!target.accepting()) {
            answer(ctx, ephemeral("This bot does not take messages now; try again later."));
            return;
        }
        boolean guild = interaction.getValue("guild_id") != null;
        String chatKey = DiscordEvents.chatKey(bot.id(), channel, guild);
        String chatId = chatKey.substring(chatKey.indexOf(':') + 1);
        String idempotencyKey = "i" + interactionId;
        access.check(bot, new SenderAccess.Message(userId, chatId, guild, true))
                .compose(verdict -> switch (verdict) {
                    case SenderAccess.Accept accept -> deferral.deferIfOver(bot, Channels.DISCORD, chatKey, idempotencyKey, userId, text, chatId)
                            .compose(deferred -> deferred ? Future.succeededFuture(ephemeral("Kept for later: this bot's quota is used up."))
                                    : ingest.accept(bot.owner(), Channels.DISCORD, chatKey, idempotencyKey, userId, text, null)
                                            .map(accepted -> new JsonObject().put("type", 4).put("data", new JsonObject()
                                                    .put("content", "<@" + userId + "> asked: " + shown(text))
                                                    .put("allowed_mentions", new JsonObject().put("parse", new JsonArray())))));
                    case SenderAccess.Ignore ignore -> Future.succeededFuture(ephemeral("You may not talk to this bot here."));
                    case SenderAccess.Challenge challenge -> Future.succeededFuture(ephemeral(SenderAccess.codeNotice(challenge.challenge())));
                })
                .onComplete(done -> {
                    if (done.failed()) {
                        ctx.fail(done.cause() instanceof ApiException api ? api
                                : ApiException.unavailable("the interaction cannot be taken now", done.cause(), 1));
                        return;
                    }
                    metrics.increment("clawfleet.discord.interactions", "tenant", bot.tenantId());
                    answer(ctx, done.result());
                });
    }

    /** The text of a slash command: its first string option ({@code /ask question:...}). */
    static String commandText(JsonObject interaction) {
        JsonObject data = interaction.getValue("data") instanceof JsonObject d ? d : null;
        if (data == null || !(data.getValue("options") instanceof JsonArray options)) {
            return null;
        }
        for (Object option : options) {
            if (option instanceof JsonObject o && o.getInteger("type", 0) == 3 && o.getValue("value") instanceof String value
                    && !value.isBlank()) {
                return value;
            }
        }
        return null;
    }

    /** The question as shown back: an answer's content is at most 2,000 characters, a text option up to 6,000. */
    static String shown(String text) {
        return text.length() <= 1_900 ? text : text.substring(0, Character.isHighSurrogate(text.charAt(1_899)) ? 1_899 : 1_900) + "…";
    }

    private static JsonObject ephemeral(String content) {
        return new JsonObject().put("type", 4).put("data", new JsonObject().put("content", content).put("flags", EPHEMERAL)
                .put("allowed_mentions", new JsonObject().put("parse", new JsonArray())));
    }

    private static void answer(RoutingContext ctx, JsonObject body) {
        ctx.response().putHeader("content-type", "application/json").end(body.encode());
    }

    private void refuse(RoutingContext ctx, String reason) {
        metrics.increment("clawfleet.discord.interactions.refused", "reason", reason);
        ctx.fail(ApiException.unauthorized("invalid request signature"));
    }
}
