package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;

import java.time.Duration;
import java.util.function.Consumer;

import static io.clawfleet.shared.testing.Await.result;

/**
 * What a multi-JVM test sets up first: a fresh database, the mock model (with a delay per call, so turns are in flight
 * when nodes die or restart), and a {@link ClusterHarness} whose nodes are started and ready. Closing it stops the
 * nodes and the model.
 */
final class TestCluster implements AutoCloseable {

    final Vertx vertx = Vertx.vertx();
    final MockLlmServer model;
    final DbUrl db = TestDatabases.freshEmpty();
    final ClusterHarness harness;

    /**
     * @param modelLatencyMs the mock model's delay per call
     * @param expectedNodes  the nodes the test will ever start (they get their ports now), at least those below
     * @param configure      sets environment on the harness before any node starts (may do nothing)
     * @param nodes          {@code id:roles} of the nodes to start, in order, e.g. {@code "gateway-1:gateway"}
     */
    TestCluster(long modelLatencyMs, int expectedNodes, Consumer<ClusterHarness> configure, String... nodes) throws Exception {
        model = new MockLlmServer(vertx, modelLatencyMs);
        result(model.start("127.0.0.1", 0));
        harness = new ClusterHarness(db, modelUrl(), TestJar.path(), TestJar.logs(),
                Math.max(expectedNodes, nodes.length));
        configure.accept(harness);
        for (String node : nodes) {
            String[] idAndRoles = node.split(":", 2);
            harness.start(idAndRoles[0], idAndRoles[1]);
        }
        harness.awaitReady(Duration.ofSeconds(120));
        harness.awaitOnePiece(Duration.ofSeconds(60));
    }

    /**
     * The gateways {@code gateway-1}..{@code gateway-N} in turn, passing over one that is down (a load balancer's
     * health check), for a load that must go on through restarts.
     */
    String anyGateway(java.util.concurrent.atomic.AtomicInteger next, int gateways) {
        for (int i = 0; i < gateways; i++) {
            ClusterHarness.Node gateway = harness.node("gateway-" + (1 + Math.floorMod(next.getAndIncrement(), gateways)));
            if (gateway.alive()) {
                return gateway.url();
            }
        }
        return harness.node("gateway-1").url();
    }

    /** The mock model's OpenAI-compatible base URL. */
    String modelUrl() {
        return "http://127.0.0.1:" + model.port() + "/v1";
    }

    @Override
    public void close() throws Exception {
        try {
            harness.close();
        } finally {
            result(vertx.close());
        }
    }
}
