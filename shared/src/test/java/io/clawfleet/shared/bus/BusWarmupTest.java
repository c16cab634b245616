package io.clawfleet.shared.bus;

import io.clawfleet.shared.cluster.ClusterBootstrap;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.VertxOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two clustered nodes (Hazelcast on loopback, the bus in plain TCP) open their connections to each other by saying
 * hello: each answers the other's, whichever started first, and a node that joins later is answered too.
 */
class BusWarmupTest {

    private final String cluster = "warmup-" + System.nanoTime();
    private final List<Integer> ports = List.of(FreePorts.take(), FreePorts.take(), FreePorts.take());
    private final List<ClusterBootstrap.Started> nodes = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (ClusterBootstrap.Started node : nodes) {
            node.vertx().close().await(30, TimeUnit.SECONDS);
        }
    }

    private ClusterBootstrap.Started join(String name, int port) throws Exception {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), Map.of("roles", "scheduler", "cluster.name", cluster,
                "cluster.members", ports.stream().map(p -> "127.0.0.1:" + p).reduce((a, b) -> a + "," + b).orElseThrow(),
                "cluster.host", "127.0.0.1", "cluster.port", Integer.toString(port), "cluster.insecure", "true"));
        ClusterBootstrap.Started started = ClusterBootstrap.join(config, new Member(name, Set.of(), null),
                UnaryOperator.identity(), new VertxOptions(), null).await(90, TimeUnit.SECONDS);
        nodes.add(started);
        return started;
    }

    @Test
    void nodesAnswerEachOthersHelloAndANewcomers() throws Exception {
        ClusterBootstrap.Started a = join("node-a", ports.get(0));
        ClusterBootstrap.Started b = join("node-b", ports.get(1));
        BusWarmup.start(a.vertx(), a.membership()).await(30, TimeUnit.SECONDS);
        BusWarmup warmB = BusWarmup.start(b.vertx(), b.membership()).await(30, TimeUnit.SECONDS);
        // b's hello reaches a, registered before it; a's answer is what opens a's connection to b
        Await.until("a to answer b's hello", Duration.ofSeconds(20), () -> warmB.heardFrom().contains("node-a"));

        ClusterBootstrap.Started c = join("node-c", ports.get(2));
        BusWarmup warmC = BusWarmup.start(c.vertx(), c.membership()).await(30, TimeUnit.SECONDS);
        Await.until("a and b to answer the newcomer", Duration.ofSeconds(20),
                () -> warmC.heardFrom().containsAll(Set.of("node-a", "node-b")));
        assertThat(warmB.heardFrom()).doesNotContain("node-b");
    }

    /**
     * A member that joins without saying hello (a part of a split merging back), its consumer late: the others greet it
     * until it has one.
     */
    @Test
    void aMemberThatJoinsIsGreetedWithoutAskingForIt() throws Exception {
        ClusterBootstrap.Started a = join("node-a", ports.get(0));
        ClusterBootstrap.Started b = join("node-b", ports.get(1));
        BusWarmup.start(a.vertx(), a.membership()).await(30, TimeUnit.SECONDS);
        BusWarmup.start(b.vertx(), b.membership()).await(30, TimeUnit.SECONDS);

        ClusterBootstrap.Started c = join("node-c", ports.get(2));
        // its consumer comes after the first greetings (a second after the join) found none: they are tried again
        Thread.sleep(2_500);
        Set<String> greeted = java.util.concurrent.ConcurrentHashMap.newKeySet();
        c.vertx().eventBus().<String>consumer(Addresses.nodeHello("node-c"), message -> greeted.add(message.body()))
                .completion().await(30, TimeUnit.SECONDS);

        Await.until("a and b to greet c", Duration.ofSeconds(20), () -> greeted.containsAll(Set.of("node-a", "node-b")));
    }
}
