package io.clawfleet.shared.bus;

import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.message.OutboundReply;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;

/**
 * The notice that a reply is in the outbox ({@link Addresses#REPLY_READY}): published by the worker that committed it,
 * taken by gateways only from a worker. With bus certificates it is signed and tagged for every gateway
 * ({@link BusSigner#signNotice}); a gateway drops one that a worker did not send, and its waiters still find the reply
 * by their periodic outbox read. The notice is the committed outbox row; a gateway serves it as the reply only where
 * every notice it takes is a worker's (alone, or tagged), and reads the outbox otherwise (SECURITY.md rule 5).
 */
public final class ReplyNotices {

    private ReplyNotices() {
    }

    /** Publishes the notice of {@code reply} to every gateway. */
    public static void publish(EventBus bus, BusSigner signer, OutboundReply reply) {
        bus.publish(Addresses.REPLY_READY, reply,
                signer.signNotice(new DeliveryOptions(), BusSigner.REPLY, Addresses.REPLY_READY, reply, Role.GATEWAY));
    }

    /** Whether a received notice came from a worker (always valid on a node without a bus certificate). */
    public static BusSigner.Verdict verify(BusSigner signer, Message<OutboundReply> message) {
        return signer.verifyNoticeFrom(message.headers(), BusSigner.REPLY, Addresses.REPLY_READY, message.body(), Role.WORKER);
    }
}
