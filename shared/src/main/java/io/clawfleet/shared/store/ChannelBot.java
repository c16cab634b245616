package io.clawfleet.shared.store;

/**
 * A bot of a push channel that a tenant's chats reach Clawfleet through.
 *
 * @param token         the bot's secret, decrypted; never shown by the API or logged
 * @param tokenHint     what the API shows instead: the bot's public id and the token's last four characters
 * @param updateOffset  the first update not yet in the inbox
 * @param mode          how updates arrive: {@link #POLLING} (one gateway at a time asks for them) or {@link #WEBHOOK} (the
 *                      platform posts them to any gateway)
 * @param webhookUrl    where the platform posts them in webhook mode; null when polling
 * @param dmPolicy      who may talk to the bot in a private chat ({@link ChannelAccessStore#DM_POLICIES})
 * @param groupPolicy   which group messages count ({@link ChannelAccessStore#GROUP_POLICIES})
 * @param signingSecret the secret the platform signs its requests with (a Slack app's signing secret), decrypted;
 *                      null for a platform that sends a shared token instead (Telegram)
 * @param accountUserId the account's own user id on the platform (a Slack bot user, {@code U...}; a web chat account's
 *                      public part of its publishable key); null for Telegram
 * @param allowedOrigins the origins whose pages may open a web chat connection ({@code *}: any); empty for other channels
 * @param anonymousUsers whether a web chat visitor without a token from the tenant's backend is given one
 * @param interactionsKey a Discord application's public key (hex), for its Interactions Endpoint; null when none
 */
public record ChannelBot(long id, String tenantId, String botId, String channel, String name, String token, String tokenHint, String apiUrl,
                         boolean enabled, long updateOffset, String mode, String webhookUrl, String dmPolicy,
                         String groupPolicy, String signingSecret, String accountUserId, java.util.List<String> allowedOrigins,
                         boolean anonymousUsers, String interactionsKey) {

    public static final String POLLING = "polling";
    public static final String WEBHOOK = "webhook";

    /** The Clawfleet bot this channel account feeds (not the account's own id on the platform). */
    public BotRef owner() {
        return new BotRef(tenantId, botId);
    }

    @Override
    public String toString() {
        return "ChannelBot[id=" + id + ", tenant=" + tenantId + ", bot=" + botId + ", channel=" + channel + ", name=" + name + ", mode=" + mode + "]";
    }
}
