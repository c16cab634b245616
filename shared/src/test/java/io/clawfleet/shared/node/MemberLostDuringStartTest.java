package io.clawfleet.shared.node;

import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.clawfleet.shared.cluster.MemberLostException;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Nodes started together may first form clusters of their own; Hazelcast merges them seconds later, resetting the
 * merging member under whatever its start was doing, and terminates a member whose merge fails. A start that fails
 * after either is a {@link MemberLostException} (what {@code clawfleet node} turns into exit status 3, restarted by
 * its supervisor), not a plain failure (status 1, which a test harness or an operator takes for a broken node); a
 * start that rides a merge out just starts.
 */
class MemberLostDuringStartTest {

    private final String cluster = "lost-at-start-" + UUID.randomUUID();
    private final List<HazelcastInstance> others = new ArrayList<>();

    @AfterEach
    void tearDown() {
        // A failed start closes its Vert.x, whose leave shuts the node's member down. Terminating that member from
        // here meanwhile deadlocks (Vert.x's leave holds its cluster manager's lock and waits for Hazelcast's
        // lifecycle lock, the terminate the other way round): wait for it to go first.
        Await.until("the node's member shut down by its failed start", Duration.ofSeconds(30),
                () -> Hazelcast.getHazelcastInstanceByName("clawfleet-lonely") == null);
        others.forEach(instance -> instance.getLifecycleService().terminate());
    }

    @Test
    void aMemberTerminatedWhileARoleStartsFailsTheStartAtOnceAsLost() throws Exception {
        CountDownLatch roleStarting = new CountDownLatch(1);
        Promise<Void> neverStarts = Promise.promise();
        int port = FreePorts.take();
        // given a clustered node whose role is still starting
        Future<NodeRuntime> start = start(port, List.of(port), context -> {
            roleStarting.countDown();
            return neverStarts.future(); // a role waiting on the cluster
        });
        start.onFailure(failed -> roleStarting.countDown());
        assertThat(roleStarting.await(60, TimeUnit.SECONDS)).as("the role's start begins").isTrue();
        assertThat(start.isComplete()).isFalse();

        // when the cluster terminates its member (as Hazelcast does to a member whose merge failed)
        Hazelcast.getAllHazelcastInstances().stream()
                .filter(instance -> instance.getConfig().getClusterName().equals(cluster))
                .forEach(instance -> instance.getLifecycleService().terminate());

        // then the start fails at once, saying the member was lost, though the role never finished
        assertThat(failureOf(start, 10)).isInstanceOf(MemberLostException.class)
                .hasMessageContaining("the cluster member of node lonely was shut down by the cluster while the node started");
    }

    @Test
    void aStartThatFailsAfterItsMemberMergedIntoAnotherClusterIsAMemberLost() throws Exception {
        Future<NodeRuntime> start = startAloneThenMerge(context -> Future.failedFuture(
                new IllegalStateException("a cluster operation the merge reset")));

        assertThat(failureOf(start, 10)).isInstanceOf(MemberLostException.class)
                .hasMessageContaining("the cluster member of node lonely was merged into another cluster while the node started")
                .hasMessageContaining("a cluster operation the merge reset");
    }

    @Test
    void aStartThatFailsWithNoMergeIsItsOwnFailure() {
        int port = FreePorts.take();
        Future<NodeRuntime> start = start(port, List.of(port), context -> Future.failedFuture(
                new IllegalStateException("the sandbox work directory is not usable")));

        // Vert.x and the member shut down after the failure: that is the node's doing, not the cluster's
        assertThat(failureOf(start, 60)).isNotInstanceOf(MemberLostException.class)
                .hasMessage("the sandbox work directory is not usable");
    }

    @Test
    void aVertxStartThatFailsWithNoMergeIsItsOwnFailure() throws Exception {
        int port = FreePorts.take();
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))) {
            // the event bus port is in use: Vert.x's clustered start fails, and Vert.x shuts the member down itself
            Future<NodeRuntime> start = NodeRuntime.start(TestNodes.config("sandbox", Map.of(
                    "nodeId", "lonely", "cluster.name", cluster, "cluster.port", Integer.toString(port),
                    "cluster.members", "127.0.0.1:" + port, "cluster.eventBusPort", Integer.toString(taken.getLocalPort()),
                    "cluster.insecure", "true", "cluster.secret", "s".repeat(32))), null, true, List.of());

            assertThat(failureOf(start, 60)).isNotInstanceOf(MemberLostException.class);
        }
    }

    @Test
    void aStartThatRidesOutAMergeStarts() throws Exception {
        Future<NodeRuntime> start = startAloneThenMerge(context -> Future.succeededFuture());

        NodeRuntime node = Await.result(start, Duration.ofSeconds(30));
        try {
            Await.until("ready", Duration.ofSeconds(30), node::ready);
        } finally {
            Await.result(node.stop().recover(e -> Future.succeededFuture()), Duration.ofSeconds(30));
        }
    }

    /** Why {@code start} failed, waiting at most {@code seconds}; fails the test if it started. */
    private static Throwable failureOf(Future<NodeRuntime> start, int seconds) {
        ExecutionException failed = catchThrowableOfType(ExecutionException.class,
                () -> start.toCompletionStage().toCompletableFuture().get(seconds, TimeUnit.SECONDS));
        assertThat(failed).as("the start failed").isNotNull();
        return failed.getCause();
    }

    /**
     * A node alone in its cluster (the member it lists does not listen yet) whose role's start waits until a larger
     * cluster has come up at that member and Hazelcast has merged the node into it, then does {@code afterMerge}.
     */
    private Future<NodeRuntime> startAloneThenMerge(Function<NodeContext, Future<Void>> afterMerge) throws Exception {
        int port = FreePorts.take();
        int first = FreePorts.take();
        int second = FreePorts.take();
        CountDownLatch roleStarting = new CountDownLatch(1);
        Future<NodeRuntime> start = start(port, List.of(port, first), context -> {
            roleStarting.countDown();
            Promise<Void> started = Promise.promise();
            context.vertx().setPeriodic(100, timer -> {
                HazelcastInstance self = Hazelcast.getHazelcastInstanceByName("clawfleet-lonely");
                if (self != null && self.getCluster().getMembers().size() == 3) {
                    context.vertx().cancelTimer(timer);
                    afterMerge.apply(context).onComplete(started);
                }
            });
            return started.future();
        });
        start.onFailure(failed -> roleStarting.countDown());
        assertThat(roleStarting.await(60, TimeUnit.SECONDS)).as("the role's start begins").isTrue();
        assertThat(start.isComplete()).as("the node is still starting").isFalse();
        assertThat(Hazelcast.getHazelcastInstanceByName("clawfleet-lonely").getCluster().getMembers()).hasSize(1);

        // the others come up as a cluster of two; the node's merge check (every 5 s) finds it and merges into it
        others.add(Hazelcast.newHazelcastInstance(plainMember(first, List.of(first, second))));
        others.add(Hazelcast.newHazelcastInstance(plainMember(second, List.of(first, second))));
        return start;
    }

    private Future<NodeRuntime> start(int port, List<Integer> members, Function<NodeContext, Future<Void>> roleStart) {
        NodeRole role = new NodeRole() {
            @Override
            public String name() {
                return "slow";
            }

            @Override
            public Future<Void> start(NodeContext context) {
                return roleStart.apply(context);
            }

            @Override
            public Future<Void> stop() {
                return Future.succeededFuture();
            }
        };
        return NodeRuntime.start(TestNodes.config("sandbox", Map.of(
                "nodeId", "lonely", "cluster.name", cluster, "cluster.port", Integer.toString(port),
                "cluster.members", String.join(",", members.stream().map(p -> "127.0.0.1:" + p).toList()),
                "cluster.insecure", "true", "cluster.secret", "s".repeat(32))), null, true, List.of(() -> role));
    }

    /** A Hazelcast member of the same cluster that is not a Clawfleet node, with the node's merge timing. */
    private Config plainMember(int port, List<Integer> members) {
        Config config = new Config().setClusterName(cluster).setInstanceName(cluster + "-" + port);
        config.setProperty("hazelcast.phone.home.enabled", "false");
        config.setProperty("hazelcast.shutdownhook.enabled", "false");
        config.setProperty("hazelcast.wait.seconds.before.join", "0");
        config.setProperty("hazelcast.merge.first.run.delay.seconds", "5");
        config.setProperty("hazelcast.merge.next.run.delay.seconds", "5");
        config.getNetworkConfig().setPort(port).setPortAutoIncrement(false)
                .getInterfaces().setEnabled(true).setInterfaces(List.of("127.0.0.1"));
        config.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getMulticastConfig().setEnabled(false);
        config.getNetworkConfig().getJoin().getTcpIpConfig().setEnabled(true)
                .setMembers(members.stream().map(p -> "127.0.0.1:" + p).toList());
        return config;
    }
}
