package io.clawfleet.gateway.delivery;

import io.vertx.core.Future;

/** Sends replies out through one push channel. Fails with {@link DeliveryException}. */
public interface ChannelSender {

    String channel();

    Future<Void> send(String tenantId, String chatKey, String text);
}
