package io.clawfleet.gateway.delivery;

import io.vertx.core.Future;

import java.util.function.IntFunction;

/** Sends replies out through one push channel. Fails with {@link DeliveryException}. */
public interface ChannelSender {

    String channel();

    /**
     * Sends a reply, in as many parts as the platform needs, skipping the first {@code partsSent} (out already, on an
     * earlier attempt). After each part it calls {@code partDone} with the count of parts out so far, and goes on once
     * that is recorded, so a retry never sends a part twice unless the gateway dies between a send and its record.
     */
    Future<Void> send(String tenantId, String chatKey, String text, int partsSent, IntFunction<Future<?>> partDone);
}
