package io.clawfleet.shared.partition;

import io.clawfleet.shared.store.BotRef;

/**
 * The partition function: {@code hash(tenant, channel, chatId) mod P}. Every gateway must agree on
 * it, so it is a pure function of the conversation key and the partition count.
 */
public final class Partitioner {

    private final int partitions;

    public Partitioner(int partitions) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partition count must be at least 1, got " + partitions);
        }
        this.partitions = partitions;
    }

    public int partitions() {
        return partitions;
    }

    /**
     * The partition of a bot's chat. The default bot keeps the key chats had before bots existed, so a chat
     * written before an upgrade stays in its partition (its order is kept across the upgrade).
     */
    public int partitionOf(BotRef bot, String channel, String chatKey) {
        return bot.isMain() ? partitionOf(bot.tenantId(), channel, chatKey)
                : partitionOf(bot.tenantId() + '\u0000' + bot.botId(), channel, chatKey);
    }

    public int partitionOf(String tenantId, String channel, String chatKey) {
        // NUL separates the parts so ("a", "bc") and ("ab", "c") cannot collide.
        String key = tenantId + '\u0000' + channel + '\u0000' + chatKey;
        return Math.floorMod(Murmur3.hash32(key), partitions);
    }
}
