package io.clawfleet.gateway;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.InboxStore;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;

import java.util.Objects;

/**
 * Idempotent intake, the same for every channel: derive the partition, commit the message to the
 * inbox, then wake the partition's owner. The channel acknowledges only after the commit.
 */
public final class Ingest {

    private final InboxStore inbox;
    private final Partitioner partitioner;
    private final EventBus bus;
    private final Metrics metrics;

    public Ingest(InboxStore inbox, Partitioner partitioner, EventBus bus, Metrics metrics) {
        this.inbox = Objects.requireNonNull(inbox);
        this.partitioner = Objects.requireNonNull(partitioner);
        this.bus = Objects.requireNonNull(bus);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /**
     * @param idempotencyKey the channel's own message id; the same key in the same chat is the same message
     * @param replyNode      node id of the gateway holding the caller's connection, for streaming; may be null
     */
    public Future<InboxStore.Accepted> accept(String tenantId, String channel, String chatKey, String idempotencyKey,
                                              String senderId, String text, String replyNode) {
        int partition = partitioner.partitionOf(tenantId, channel, chatKey);
        long started = System.nanoTime();
        return inbox.accept(tenantId, channel, chatKey, partition, idempotencyKey, senderId, "user", text, replyNode)
                .onSuccess(accepted -> {
                    metrics.recordMillis("clawfleet.ingest.commit", (System.nanoTime() - started) / 1e6);
                    metrics.increment(accepted.created() ? "clawfleet.ingest.accepted" : "clawfleet.ingest.duplicates",
                            "tenant", tenantId, "channel", channel);
                    // Also for a duplicate: if the first wake-up was lost, this one costs nothing and may help.
                    bus.publish(Addresses.partitionWake(partition), new WakeUp(accepted.message()));
                });
    }
}
