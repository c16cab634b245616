package io.clawfleet.deploy;

import io.clawfleet.shared.db.DbUrl;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Runs Clawfleet nodes as real separate JVMs from the packaged jar, on loopback, in one test
 * cluster (random cluster name, TCP-IP join). Logs go to target/cluster-logs/.
 */
final class ClusterHarness implements AutoCloseable {

    static final String API_KEY = "cluster-test-key-0123456789";

    /** One node process. */
    record Node(String id, String roles, int httpPort, int clusterPort, Process process, Path log) {
        String url() {
            return "http://127.0.0.1:" + httpPort;
        }
    }

    private final DbUrl db;
    private final String llmBaseUrl;
    private final String clusterName = "test-" + UUID.randomUUID();
    private final Map<String, Node> nodes = new LinkedHashMap<>();
    private final List<Integer> clusterPorts = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Path logs = Path.of("target", "cluster-logs");

    ClusterHarness(DbUrl db, String llmBaseUrl, int expectedNodes) throws IOException {
        this.db = db;
        this.llmBaseUrl = llmBaseUrl;
        Files.createDirectories(logs);
        // Every member knows every seed address up front: no join waits on discovery.
        for (int i = 0; i < expectedNodes; i++) {
            clusterPorts.add(freePort());
        }
    }

    Node start(String id, String roles) throws IOException {
        int clusterPort = clusterPorts.get(nodes.size());
        int httpPort = freePort();
        Map<String, String> env = new HashMap<>();
        env.put("CLAWFLEET_NODE_ID", id);
        env.put("CLAWFLEET_ROLES", roles);
        env.put("CLAWFLEET_DB_URL", "postgresql://" + db.user() + "@" + db.host() + ":" + db.port() + "/" + db.database());
        env.put("CLAWFLEET_CLUSTER_NAME", clusterName);
        env.put("CLAWFLEET_CLUSTER_HOST", "127.0.0.1");
        env.put("CLAWFLEET_CLUSTER_PORT", Integer.toString(clusterPort));
        env.put("CLAWFLEET_CLUSTER_MEMBERS", String.join(",", clusterPorts.stream().map(p -> "127.0.0.1:" + p).toList()));
        env.put("CLAWFLEET_HTTP_HOST", "127.0.0.1");
        env.put("CLAWFLEET_HTTP_PORT", Integer.toString(httpPort));
        env.put("CLAWFLEET_API_KEY", API_KEY);
        env.put("CLAWFLEET_LLM_BASE_URL", llmBaseUrl);
        env.put("CLAWFLEET_LLM_MODEL", "mock");
        env.put("CLAWFLEET_PARTITIONS", "64");
        // Load tests send faster than a person: the per-chat rate limit would only slow them.
        env.put("CLAWFLEET_LIMITS_CHAT_MESSAGES_PER_MINUTE", "0");
        return launch(id, roles, httpPort, clusterPort, env);
    }

    private Node launch(String id, String roles, int httpPort, int clusterPort, Map<String, String> env) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"));
        command.addAll(Arrays.asList(System.getProperty("clawfleet.test.jdkFlags", "").trim().split("\\s+")));
        if (Runtime.version().feature() >= 24) {
            command.add("--sun-misc-unsafe-memory-access=allow");
        }
        command.addAll(List.of("-Dhazelcast.phone.home.enabled=false", "-Dhazelcast.logging.type=slf4j",
                "-jar", jar().toString(), "node"));
        command.removeIf(String::isEmpty);
        Path log = logs.resolve(id + ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().keySet().removeIf(k -> k.startsWith("CLAWFLEET_"));
        builder.environment().putAll(env);
        Node node = new Node(id, roles, httpPort, clusterPort, builder.start(), log);
        nodes.put(id, node);
        return node;
    }

    static Path jar() {
        Path jar = Path.of(System.getProperty("clawfleet.jar", "target/clawfleet.jar"));
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("cluster tests need the packaged jar at " + jar.toAbsolutePath() + " (run 'mvn verify')");
        }
        return jar;
    }

    void awaitReady(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Node node : nodes.values()) {
            while (!ready(node)) {
                if (!node.process().isAlive()) {
                    throw new IllegalStateException("node " + node.id() + " exited with " + node.process().exitValue()
                            + "; see " + node.log().toAbsolutePath());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("node " + node.id() + " not ready within " + timeout + "; see " + node.log().toAbsolutePath());
                }
                Thread.sleep(100);
            }
        }
    }

    boolean ready(Node node) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(node.url() + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    JsonObject cluster(Node gateway) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/cluster"))
                .header("authorization", "Bearer " + API_KEY).build(), HttpResponse.BodyHandlers.ofString());
        return new JsonObject(response.body());
    }

    Node node(String id) {
        return nodes.get(id);
    }

    /** SIGTERM: the node drains, hands off and leaves. */
    void stop(String id) throws InterruptedException {
        Node node = nodes.remove(id);
        node.process().destroy();
        if (!node.process().waitFor(40, java.util.concurrent.TimeUnit.SECONDS)) {
            node.process().destroyForcibly();
        }
    }

    @Override
    public void close() throws InterruptedException {
        for (Node node : nodes.values()) {
            node.process().destroy();
        }
        for (Node node : nodes.values()) {
            if (!node.process().waitFor(40, java.util.concurrent.TimeUnit.SECONDS)) {
                node.process().destroyForcibly();
            }
        }
        nodes.clear();
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
