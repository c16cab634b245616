package io.clawfleet.shared.bus;

import io.clawfleet.shared.cluster.Membership;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
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
 * opens the connection back. When a member joins later (or two parts of a split merge), the node says hello again a
 * second later, once the newcomer's consumers are known to the cluster. Nothing else is done on either address, so a
 * hello is worth nothing to a member that sends it unasked.
 */
public final class BusWarmup {

    private static final Logger LOG = LoggerFactory.getLogger(BusWarmup.class);
    /** After a join, how long before the hello, so the newcomer's consumer is in the cluster's subscriptions. */
    static final long AFTER_JOIN_MS = 1_000;
    private static final int MAX_NODE_ID = 200;

    private final Vertx vertx;
    private final Membership membership;
    private final String self;
    private final Set<String> answered = ConcurrentHashMap.newKeySet();
    private volatile boolean helloDue;

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
                warmup.answered.add(from);
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
                if (change.joined() && !warmup.helloDue) {
                    warmup.helloDue = true;
                    vertx.setTimer(AFTER_JOIN_MS, id -> {
                        warmup.helloDue = false;
                        warmup.hello();
                    });
                }
            });
            return warmup;
        });
    }

    private void hello() {
        LOG.debug("hello to the members [node: {}, members: {}]", self, membership.members().size());
        vertx.eventBus().publish(Addresses.NODE_HELLO, self);
    }

    /** The members that answered a hello of this node: its connections from them are open. */
    public Set<String> answered() {
        return Set.copyOf(answered);
    }
}
