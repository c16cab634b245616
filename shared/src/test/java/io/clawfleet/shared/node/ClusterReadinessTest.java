package io.clawfleet.shared.node;

import com.hazelcast.core.Hazelcast;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** A clustered node whose cluster member shut down stops looking ready: its event bus reaches nobody. */
class ClusterReadinessTest {

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aNodeWhoseClusterMemberShutDownReportsClusterDownInReadyz() throws Exception {
        // given a clustered node, alone in its cluster, ready
        DbUrl db = TestDatabases.freshMigrated(16);
        int port = FreePorts.take();
        NodeRuntime node = Await.result(NodeRuntime.start(TestNodes.config("scheduler", Map.of(
                "nodeId", "lonely", "cluster.name", "readiness-" + UUID.randomUUID(), "cluster.port", Integer.toString(port),
                "cluster.members", "127.0.0.1:" + port, "cluster.insecure", "true")), db, true, List.of()), Duration.ofSeconds(90));
        try {
            Await.until("ready", Duration.ofSeconds(30), node::ready);
            assertThat(readyz(node).getJsonObject("checks").getString("cluster")).isEqualTo("up");
            // when its Hazelcast member shuts down under it
            Hazelcast.getAllHazelcastInstances().stream()
                    .filter(instance -> instance.getConfig().getClusterName().startsWith("readiness-"))
                    .forEach(instance -> instance.getLifecycleService().terminate());
            // then /readyz says so, with 503
            Await.until("cluster down in /readyz", Duration.ofSeconds(10), () -> !node.ready());
            assertThat(readyz(node).getJsonObject("checks").getString("cluster")).isEqualTo("down");
            assertThat(status(node)).isEqualTo(503);
        } finally {
            Await.result(node.stop().recover(e -> io.vertx.core.Future.succeededFuture()), Duration.ofSeconds(30));
        }
    }

    private JsonObject readyz(NodeRuntime node) throws Exception {
        return new JsonObject(get(node).body());
    }

    private int status(NodeRuntime node) throws Exception {
        return get(node).statusCode();
    }

    private HttpResponse<String> get(NodeRuntime node) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/readyz")).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
