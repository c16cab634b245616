package io.clawfleet.shared.store;

/**
 * A bot of a push channel that a tenant's chats reach Clawfleet through.
 *
 * @param token         the bot's secret, decrypted; never shown by the API or logged
 * @param tokenHint     what the API shows instead: the bot's public id and the token's last four characters
 * @param updateOffset  the first update not yet in the inbox
 */
public record ChannelBot(long id, String tenantId, String channel, String name, String token, String tokenHint, String apiUrl,
                         boolean enabled, long updateOffset) {

    @Override
    public String toString() {
        return "ChannelBot[id=" + id + ", tenant=" + tenantId + ", channel=" + channel + ", name=" + name + "]";
    }
}
