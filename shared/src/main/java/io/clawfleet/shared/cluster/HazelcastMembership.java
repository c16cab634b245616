package io.clawfleet.shared.cluster;

import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.HazelcastInstanceNotActiveException;
import com.hazelcast.core.LifecycleEvent;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Membership from Hazelcast. Roles and the stable node id travel as member attributes, so they are
 * known the moment a member joins (no lookup that could race the join).
 */
public final class HazelcastMembership implements Membership {

    static final String ATTR_NODE_ID = "clawfleet.node-id";
    static final String ATTR_ROLES = "clawfleet.roles";
    static final String ATTR_HTTP = "clawfleet.http";
    /** Prefix of the attributes roles publish ({@link Member#attributes()}). */
    static final String ATTR_PREFIX = "clawfleet.attr.";

    private static final Logger LOG = LoggerFactory.getLogger(HazelcastMembership.class);

    private final Vertx vertx;
    private final HazelcastInstance hazelcast;
    private final Member self;
    private volatile boolean leaving;

    public HazelcastMembership(Vertx vertx, HazelcastInstance hazelcast, Member self) {
        this.vertx = Objects.requireNonNull(vertx);
        this.hazelcast = Objects.requireNonNull(hazelcast);
        this.self = Objects.requireNonNull(self);
    }

    @Override
    public Member self() {
        return self;
    }

    @Override
    public boolean connected() {
        return hazelcast.getLifecycleService().isRunning();
    }

    @Override
    public void onLost(Runnable listener) {
        AtomicBoolean called = new AtomicBoolean();
        Runnable once = () -> {
            if (!leaving && called.compareAndSet(false, true)) {
                listener.run();
            }
        };
        try {
            hazelcast.getLifecycleService().addLifecycleListener(event -> {
                if (event.getState() == LifecycleEvent.LifecycleState.SHUTTING_DOWN
                        || event.getState() == LifecycleEvent.LifecycleState.SHUTDOWN) {
                    once.run();
                }
            });
        } catch (HazelcastInstanceNotActiveException gone) {
            // Shut down already: the check below reports it.
        }
        if (!hazelcast.getLifecycleService().isRunning()) {
            once.run();
        }
    }

    @Override
    public void leaving() {
        leaving = true;
    }

    @Override
    public List<Member> members() {
        List<Member> out = new ArrayList<>();
        for (com.hazelcast.cluster.Member member : hazelcast.getCluster().getMembers()) {
            Member converted = convert(member);
            if (converted != null) {
                out.add(converted);
            }
        }
        return out;
    }

    @Override
    public void onChange(Consumer<MembershipChange> listener) {
        Context context = vertx.getOrCreateContext();
        hazelcast.getCluster().addMembershipListener(new MembershipListener() {
            @Override
            public void memberAdded(MembershipEvent event) {
                deliver(event, true);
            }

            @Override
            public void memberRemoved(MembershipEvent event) {
                deliver(event, false);
            }

            private void deliver(MembershipEvent event, boolean joined) {
                Member member = convert(event.getMember());
                if (member == null) {
                    return;
                }
                LOG.info("member {} [node: {}, roles: {}]", joined ? "joined" : "left", member.nodeId(), member.roles());
                context.runOnContext(v -> listener.accept(new MembershipChange(member, joined)));
            }
        });
    }

    private static Member convert(com.hazelcast.cluster.Member member) {
        String nodeId = member.getAttribute(ATTR_NODE_ID);
        if (nodeId == null) {
            // A Hazelcast member that is not a Clawfleet node (a management tool, say).
            return null;
        }
        String roles = member.getAttribute(ATTR_ROLES);
        java.util.Map<String, String> attributes = new java.util.TreeMap<>();
        member.getAttributes().forEach((key, value) -> {
            if (key.startsWith(ATTR_PREFIX)) {
                attributes.put(key.substring(ATTR_PREFIX.length()), value);
            }
        });
        return new Member(nodeId,
                roles == null || roles.isEmpty() ? Set.of() : new HashSet<>(Arrays.asList(roles.split(","))),
                member.getAttribute(ATTR_HTTP), attributes);
    }
}
