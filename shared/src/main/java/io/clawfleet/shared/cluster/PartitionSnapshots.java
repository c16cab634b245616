package io.clawfleet.shared.cluster;

import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.instance.impl.HazelcastInstanceImpl;
import com.hazelcast.instance.impl.HazelcastInstanceProxy;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Forgets the partition tables Hazelcast keeps for members that left (issue 20, the soak). Hazelcast 5.3 stores a
 * snapshot of the partition table for every member that leaves while it still holds partitions (a member killed, not
 * shut down), in {@code PartitionStateManager.snapshotOnRemove}, for a member that comes back with its old identity
 * (persistence, an Enterprise feature); nothing else ever removes it. A Clawfleet node that starts again is a new
 * member, so the snapshots only grow: about 40 KB for each member killed, on every member, for good (the soak's
 * sandbox node grew 9.6 MB in an hour of kills). A few seconds after a member leaves, every snapshot of a member that
 * is not in the cluster is dropped. The map is Hazelcast's internals, reached by reflection: if a Hazelcast version
 * no longer has it, this logs so once and does nothing.
 */
public final class PartitionSnapshots {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionSnapshots.class);
    /** After a member left, when its snapshot is surely stored (Hazelcast stores it as it removes the member). */
    static final long DELAY_MS = 5_000;

    private PartitionSnapshots() {
    }

    /** Drops the snapshots of members that left, a few seconds after each leaves. */
    public static void forgetLeftMembers(Vertx vertx, HazelcastInstance hazelcast) {
        if (snapshots(hazelcast) == null) {
            return;
        }
        hazelcast.getCluster().addMembershipListener(new MembershipListener() {
            @Override
            public void memberAdded(MembershipEvent event) {
            }

            @Override
            public void memberRemoved(MembershipEvent event) {
                try {
                    vertx.setTimer(DELAY_MS, id -> {
                        int dropped = forgetLeft(hazelcast);
                        if (dropped > 0) {
                            LOG.debug("forgot the partition tables of {} members that left", dropped);
                        }
                    });
                } catch (RuntimeException closing) {
                    // Vert.x is closing (this runs on Hazelcast's event thread): the tables go with the node.
                    LOG.debug("partition tables of members that left not forgotten: {}", closing.toString());
                }
            }
        });
    }

    /** Drops every snapshot of a member that is not in the cluster now; answers how many went. */
    static int forgetLeft(HazelcastInstance hazelcast) {
        Map<UUID, ?> snapshots = snapshots(hazelcast);
        if (snapshots == null || !hazelcast.getLifecycleService().isRunning()) {
            return 0;
        }
        Set<UUID> present = hazelcast.getCluster().getMembers().stream().map(com.hazelcast.cluster.Member::getUuid)
                .collect(Collectors.toSet());
        int dropped = 0;
        for (UUID member : Set.copyOf(snapshots.keySet())) {
            if (!present.contains(member) && snapshots.remove(member) != null) {
                dropped++;
            }
        }
        return dropped;
    }

    /** The snapshots by member, or null when this Hazelcast keeps them elsewhere (logged). */
    @SuppressWarnings("unchecked")
    static Map<UUID, ?> snapshots(HazelcastInstance hazelcast) {
        try {
            HazelcastInstanceImpl impl = hazelcast instanceof HazelcastInstanceProxy proxy ? proxy.getOriginal()
                    : (HazelcastInstanceImpl) hazelcast;
            Object manager = impl.node.partitionService.getPartitionStateManager();
            Field field = manager.getClass().getDeclaredField("snapshotOnRemove");
            field.setAccessible(true);
            return (Map<UUID, ?>) field.get(manager);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("cannot reach Hazelcast's partition tables of members that left; they are kept (about 40 KB for"
                    + " each member killed): {}", e.toString());
            return null;
        }
    }
}
