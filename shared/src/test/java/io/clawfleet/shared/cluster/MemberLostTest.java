package io.clawfleet.shared.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node learns when the cluster shuts its member down (Hazelcast terminates a member that cannot merge back after a
 * split), and does not mistake its own planned leave for that.
 */
class MemberLostTest {

    private Vertx vertx;
    private HazelcastInstance hazelcast;
    private HazelcastMembership membership;

    @BeforeEach
    void setUp() {
        Config config = new Config().setClusterName("member-lost-" + System.nanoTime());
        config.setProperty("hazelcast.phone.home.enabled", "false");
        config.setProperty("hazelcast.shutdownhook.enabled", "false");
        config.setProperty("hazelcast.wait.seconds.before.join", "0");
        config.getNetworkConfig().setPort(5801).setPortAutoIncrement(true)
                .getInterfaces().setEnabled(true).setInterfaces(List.of("127.0.0.1"));
        config.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getMulticastConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getTcpIpConfig().setEnabled(true).setMembers(List.of("127.0.0.1"));
        hazelcast = Hazelcast.newHazelcastInstance(config);
        vertx = Vertx.vertx();
        membership = new HazelcastMembership(vertx, hazelcast, new Member("node-a", Set.of("worker"), null));
    }

    @AfterEach
    void tearDown() {
        hazelcast.getLifecycleService().terminate();
        vertx.close().await();
    }

    @Test
    void aMemberTheClusterShutsDownIsReportedOnce() {
        AtomicInteger lost = new AtomicInteger();
        membership.onLost(lost::incrementAndGet);
        assertThat(lost).hasValue(0);

        hazelcast.getLifecycleService().terminate();

        assertThat(lost).hasValue(1);
        assertThat(membership.connected()).isFalse();
    }

    @Test
    void aListenerAddedAfterTheMemberIsGoneIsCalledAtOnce() {
        hazelcast.getLifecycleService().terminate();
        AtomicInteger lost = new AtomicInteger();
        membership.onLost(lost::incrementAndGet);
        assertThat(lost).hasValue(1);
    }

    @Test
    void aLeaveTheNodeAskedForIsNoLoss() {
        AtomicInteger lost = new AtomicInteger();
        membership.onLost(lost::incrementAndGet);

        membership.leaving();
        hazelcast.shutdown();

        assertThat(lost).hasValue(0);
    }
}
