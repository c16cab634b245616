package io.clawfleet.shared.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hazelcast keeps a partition table for every member killed while it held partitions; a node forgets those of members
 * that are gone, so that a cluster whose nodes are killed and restarted all day does not grow its members' heaps.
 */
class PartitionSnapshotsTest {

    private final String cluster = "snapshots-" + System.nanoTime();
    private final List<HazelcastInstance> members = new ArrayList<>();

    @AfterEach
    void tearDown() {
        members.forEach(member -> member.getLifecycleService().terminate());
    }

    @Test
    void theTablesKeptForKilledMembersAreForgotten() throws Exception {
        // given a member that saw three others killed (terminated, as by kill -9) after they took partitions
        HazelcastInstance survivor = member();
        for (int i = 0; i < 3; i++) {
            HazelcastInstance doomed = member();
            survivor.getMap("data").put("key-" + i, "value"); // partitions are assigned
            awaitMembers(survivor, 2);
            awaitOwning(survivor, doomed);
            doomed.getLifecycleService().terminate();
            awaitMembers(survivor, 1);
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (PartitionSnapshots.snapshots(survivor).size() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(PartitionSnapshots.snapshots(survivor)).as("tables Hazelcast kept for the killed members").hasSize(3);

        // when the node forgets what members that left held, then every one of them is gone
        assertThat(PartitionSnapshots.forgetLeft(survivor)).isEqualTo(3);
        assertThat(PartitionSnapshots.snapshots(survivor)).isEmpty();
        // and a member still in the cluster keeps whatever Hazelcast keeps for it
        HazelcastInstance present = member();
        awaitMembers(survivor, 2);
        assertThat(PartitionSnapshots.forgetLeft(survivor)).isZero();
        assertThat(present.getCluster().getMembers()).hasSize(2);
    }

    private HazelcastInstance member() {
        Config config = new Config().setClusterName(cluster);
        config.setProperty("hazelcast.phone.home.enabled", "false");
        config.setProperty("hazelcast.shutdownhook.enabled", "false");
        config.setProperty("hazelcast.wait.seconds.before.join", "0");
        config.setProperty("hazelcast.max.no.heartbeat.seconds", "5");
        config.getNetworkConfig().setPort(5851).setPortAutoIncrement(true)
                .getInterfaces().setEnabled(true).setInterfaces(List.of("127.0.0.1"));
        config.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getMulticastConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getTcpIpConfig().setEnabled(true).setMembers(List.of("127.0.0.1"));
        HazelcastInstance member = Hazelcast.newHazelcastInstance(config);
        members.add(member);
        return member;
    }

    /** Until the migrations are over and {@code member} owns partitions. */
    private static void awaitOwning(HazelcastInstance observer, HazelcastInstance member) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        var self = member.getCluster().getLocalMember();
        while (!(observer.getPartitionService().isClusterSafe() && observer.getPartitionService().getPartitions().stream()
                .anyMatch(partition -> self.equals(partition.getOwner()))) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
    }

    private static void awaitMembers(HazelcastInstance member, int count) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (member.getCluster().getMembers().size() != count && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(member.getCluster().getMembers()).hasSize(count);
    }
}
