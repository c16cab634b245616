package io.clawfleet.shared.bus;

import io.clawfleet.shared.cluster.Membership;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Opens this node's event-bus connections to the other members before a notice needs them. Vert.x connects to a node
 * on the first message it sends there, and over mutual TLS that message waits for the handshake: 0.8 s measured for
 * the first tenant notice between two cold gateways on a loaded 2-core host, against 5 ms for the next. A notice that
 * must take effect within a second (a key revoked, a tenant suspended: docs/TENANTS.md) cannot pay that.
 * <p>
 * Once its roles are up, a node publishes a hello with its id to every member ({@link Addresses#NODE_HELLO}): that
 * opens its connections to them. Each answers on the node's own hello address ({@link Addresses#nodeHello}), which
 * opens the connection back. When a member joins later, or two parts of a split merge (no node starts then), the node
 * greets the newcomer on its own address a second later (a request: the reply opens the connection back), again each
 * second while the newcomer has no consumer yet: a few messages per member and join, not a publish answered by all. Nothing else is done on either address, so a hello is worth
 * nothing to a member that sends it unasked.
  */
public final class BusWarmup {

    private static final Logger LOG = LoggerFactory.getLogger(BusWarmup.class);
    /** After a join, how long before the hello to the newcomer, so its consumer is in the cluster's subscriptions. */
    static final long AFTER_JOIN_MS = 1_000;
    private static final int MAX_NODE_ID = 200;
    private static final int MAX_HEARD = 10_000;
    /** Greetings of a newcomer with no consumer yet, a second apart; its own hello covers a slower start. */
    private static final int GREETINGS = 5;
    private static final long GREETING_TIMEOUT_MS = 5_000;

    private final Vertx vertx;
    private final Membership membership;
    private final String self;
    private final Set<String> heardFrom = ConcurrentHashMap.newKeySet();

    private BusWarmup(Vertx vertx, Membership membership) {
        this.vertx = vertx;
        this.membership = membership;
        this.self = membership.self().nodeId();
    }

    /** Registers both addresses, then says hello; again after each join. Fails only when a consumer cannot register. */
    public static Future<BusWarmup> start(Vertx vertx, Membership membership) {
        BusWarmup warmup = new BusWarmup(vertx, membership);
        EventBus bus = vertx.eventBus();
        Future<Void> own = Consumers.<String>register(vertx, Addresses.nodeHello(warmup.self), message -> {
            if (message.body() instanceof String from && from.length() <= MAX_NODE_ID) {
                if (warmup.heardFrom.size() >= MAX_HEARD) {
                    warmup.heardFrom.clear(); // nodes that come and go under new ids: a record, not a registry
                }
                warmup.heardFrom.add(from);
                if (message.replyAddress() != null) {
                    message.reply(warmup.self); // a greeting after a join: the answer opens the connection back
                }
            }
        }).mapEmpty();
        Future<Void> everyone = Consumers.<String>register(vertx, Addresses.NODE_HELLO, message -> {
            if (message.body() instanceof String from && !from.equals(warmup.self) && from.length() <= MAX_NODE_ID) {
                bus.send(Addresses.nodeHello(from), warmup.self);
            }
        }).mapEmpty();
        return Future.all(own, everyone).map(v -> {
            warmup.hello();
            membership.onChange(change -> {
                String joined = change.member() == null ? null : change.member().nodeId();
                if (change.joined() && joined != null && !joined.equals(warmup.self)) {
                    vertx.setTimer(AFTER_JOIN_MS, id -> warmup.greet(joined, GREETINGS));
                }
            });
            return warmup;
        });
    }

    /** Says hello to one member, again a second later while it has no consumer yet (a node still starting). */
    private void greet(String nodeId, int attempts) {
        vertx.eventBus().request(Addresses.nodeHello(nodeId), self, new DeliveryOptions().setSendTimeout(GREETING_TIMEOUT_MS))
                .onFailure(failed -> {
                    if (attempts > 1 && failed instanceof ReplyException no && no.failureType() == ReplyFailure.NO_HANDLERS
                            && membership.members().stream().anyMatch(member -> member.nodeId().equals(nodeId))) {
                        vertx.setTimer(AFTER_JOIN_MS, id -> greet(nodeId, attempts - 1));
                    }
                });
    }

    private void hello() {
        if (LOG.isDebugEnabled()) { // members() converts every Hazelcast member
            LOG.debug("hello to the members [node: {}, members: {}]", self, membership.members().size());
        }
        vertx.eventBus().publish(Addresses.NODE_HELLO, self);
    }

    /** The members whose hello or answer reached this node's own address: their connections to it are open. */
    public Set<String> heardFrom() {
        return Set.copyOf(heardFrom);
    }
}
