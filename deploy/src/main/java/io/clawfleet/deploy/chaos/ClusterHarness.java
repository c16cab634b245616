package io.clawfleet.deploy.chaos;

import io.clawfleet.deploy.Main;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.FreePorts;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Runs Clawfleet nodes as real separate JVMs from the packaged jar, on loopback, in one cluster
 * (random cluster name, TCP-IP join with every member's address known up front), and does to them
 * what operations and failures do: SIGTERM, kill -9, SIGSTOP/SIGCONT, restart.
 */
public final class ClusterHarness implements AutoCloseable {

    public static final String API_KEY = "cluster-test-key-0123456789";
    /** The operator's key on every gateway ({@code /api/v1/cluster}, {@code /admin/v1/*}). */
    public static final String OPERATOR_KEY = "cluster-test-operator-key-0123456789";
    /** The key that reads {@code /metrics} on every node. */
    public static final String METRICS_KEY = "cluster-test-metrics-key-0123456789";
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ClusterHarness.class);

    /** Secrets a sandbox-only node is started without, besides every {@code CLAWFLEET_LLM_*} setting. */
    private static final java.util.Set<String> SANDBOX_NEVER_GETS = java.util.Set.of("CLAWFLEET_DB_URL", "CLAWFLEET_API_KEY",
            "CLAWFLEET_ADMIN_BOOTSTRAP_KEY", "CLAWFLEET_MASTER_KEY", "CLAWFLEET_OPERATOR_KEY");

    /** A node: its fixed identity and ports, and its current process (replaced on restart). */
    public static final class Node {
        private final String id;
        private final String roles;
        private final int httpPort;
        /** The address its HTTP listens on: loopback, or its host's services address in a {@link NetLab}. */
        private final String httpHost;
        /** Its host in the network lab (from 1), or 0 on loopback. */
        private final int labHost;
        private final Map<String, String> env;
        private final Path log;
        private volatile Process process;
        private volatile boolean paused;
        private int memberLostRestarts;

        Node(String id, String roles, String httpHost, int httpPort, int labHost, Map<String, String> env, Path log) {
            this.id = id;
            this.roles = roles;
            this.httpHost = httpHost;
            this.httpPort = httpPort;
            this.labHost = labHost;
            this.env = env;
            this.log = log;
        }

        public String id() {
            return id;
        }

        public String roles() {
            return roles;
        }

        public String url() {
            return "http://" + httpHost + ":" + httpPort;
        }

        /** Its host in the harness's {@link NetLab} (from 1), or 0 when the nodes run on loopback. */
        public int labHost() {
            return labHost;
        }

        public Path log() {
            return log;
        }

        public boolean alive() {
            return process != null && process.isAlive();
        }

        public boolean paused() {
            return paused;
        }

        public long pid() {
            return process.pid();
        }

        /** The environment the node was started with (besides what the harness's JVM has outside {@code CLAWFLEET_*}). */
        public Map<String, String> env() {
            return Map.copyOf(env);
        }
    }

    private DbUrl db;
    private String llmBaseUrl;
    /** Where the nodes live when each has a host of its own, or null for all on loopback. */
    private NetLab lab;
    private final Path jar;
    private final String clusterName = "test-" + UUID.randomUUID();
    /** Every node of this harness shares it; a process joining without it cannot speak for them (issue 22). */
    private final String clusterSecret = java.util.HexFormat.of().formatHex(randomBytes(32));
    private final String masterKey = java.util.Base64.getEncoder().encodeToString(randomBytes(32));
    private final Map<String, Node> nodes = new LinkedHashMap<>();
    private final List<Integer> clusterPorts = new ArrayList<>();
    private final Map<String, String> extraEnv = new HashMap<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Path logs;
    /**
     * The sandbox nodes' run folders: one per harness, never the shared default under the system temporary
     * folder, which another run on the same host (a concurrent clone, a killed earlier run) also uses.
     */
    private final Path sandboxWork;
    /** The cluster CA of this harness: every node gets a certificate for its roles (the bus runs mutual TLS). */
    private final Path caDir;
    /** Small heaps and C1 only: chaos and cluster tests start many nodes and want them up fast, not fast-running. */
    private List<String> jvmOptions = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k");
    private java.util.function.Function<String, List<String>> nodeJvmOptions = id -> List.of();

    /**
     * @param expectedNodes how many nodes will be started; their cluster ports are reserved now
     */
    public ClusterHarness(DbUrl db, String llmBaseUrl, Path jar, Path logs, int expectedNodes) throws IOException {
        this.db = db;
        this.llmBaseUrl = llmBaseUrl;
        this.jar = jar;
        this.logs = logs;
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("cluster runs need the packaged jar at " + jar.toAbsolutePath() + " (run './clawfleet build')");
        }
        Files.createDirectories(logs);
        // Under the system temporary folder, not the checkout: a run drops to another uid, which must be able
        // to traverse every folder above its run directory (a checkout may sit under a private home).
        sandboxWork = Files.createTempDirectory("clawfleet-harness-");
        Files.setPosixFilePermissions(sandboxWork, PosixFilePermissions.fromString("rwx--x--x"));
        for (int i = 0; i < expectedNodes; i++) {
            clusterPorts.add(FreePorts.take());
        }
        caDir = Files.createTempDirectory("clawfleet-harness-ca-");
        io.clawfleet.deploy.certs.ClusterCa.create(caDir, clusterName, io.clawfleet.deploy.certs.ClusterCa.CA_DAYS);
    }

    /** The folder of this harness's cluster CA ({@code clawfleet certs} layout), to issue or rotate with. */
    public Path caDir() {
        return caDir;
    }

    private static byte[] randomBytes(int count) {
        byte[] bytes = new byte[count];
        new java.security.SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** The cluster secret every node signs bus messages with (what a taken-over node would hold). */
    public String clusterSecret() {
        return clusterSecret;
    }

    /** The cluster's name: what a process needs, with {@link #clusterMembers()}, to join it. */
    public String clusterName() {
        return clusterName;
    }

    /** The members' Hazelcast addresses, {@code 127.0.0.1:port} (or each one's mesh address in a {@link NetLab}). */
    public List<String> clusterMembers() {
        List<String> members = new ArrayList<>();
        for (int i = 0; i < clusterPorts.size(); i++) {
            members.add((lab == null ? "127.0.0.1" : lab.address(i + 1, NetLab.Link.MESH)) + ":" + clusterPorts.get(i));
        }
        return members;
    }

    /**
     * Starts every node from now on on a host of its own in {@code lab} (the n-th node started on host n): Hazelcast
     * and the event bus on the host's mesh link, HTTP on its services link, the database and the model at the given
     * URLs, which the hosts reach over their services link. Call before the first start.
     */
    public ClusterHarness inNetLab(NetLab lab, DbUrl dbOnServices, String llmOnServices) {
        if (!nodes.isEmpty()) {
            throw new IllegalStateException("a harness moves into a network lab before its first node starts");
        }
        this.lab = lab;
        this.db = dbOnServices;
        this.llmBaseUrl = llmOnServices;
        return this;
    }

    /** Configuration every node gets in addition to the defaults, as environment variables. */
    public ClusterHarness env(String name, String value) {
        extraEnv.put(name, value);
        return this;
    }

    /** Heap, GC and compiler options of the nodes started from now on (benchmarks want production-like ones). */
    public ClusterHarness jvmOptions(List<String> options) {
        this.jvmOptions = List.copyOf(options);
        return this;
    }

    /** Options of one node's JVM besides {@link #jvmOptions}, by node id (a class-data archive of its own, say). */
    public ClusterHarness nodeJvmOptions(java.util.function.Function<String, List<String>> options) {
        this.nodeJvmOptions = options;
        return this;
    }

    public Node start(String id, String roles) throws IOException {
        int clusterPort = clusterPorts.get(nodes.size());
        int httpPort = FreePorts.take();
        int labHost = lab == null ? 0 : nodes.size() + 1;
        String clusterHost = lab == null ? "127.0.0.1" : lab.address(labHost, NetLab.Link.MESH);
        String httpHost = lab == null ? "127.0.0.1" : lab.address(labHost, NetLab.Link.SERVICES);
        Map<String, String> env = new HashMap<>();
        env.put("CLAWFLEET_NODE_ID", id);
        env.put("CLAWFLEET_ROLES", roles);
        env.put("CLAWFLEET_DB_URL", db.url());
        env.put("CLAWFLEET_CLUSTER_NAME", clusterName);
        env.put("CLAWFLEET_CLUSTER_SECRET", clusterSecret);
        env.put("CLAWFLEET_CLUSTER_HOST", clusterHost);
        env.put("CLAWFLEET_CLUSTER_PORT", Integer.toString(clusterPort));
        env.put("CLAWFLEET_CLUSTER_MEMBERS", String.join(",", clusterMembers()));
        env.put("CLAWFLEET_HTTP_HOST", httpHost);
        env.put("CLAWFLEET_HTTP_PORT", Integer.toString(httpPort));
        env.put("CLAWFLEET_API_KEY", API_KEY);
        env.put("CLAWFLEET_OPERATOR_KEY", OPERATOR_KEY);
        env.put("CLAWFLEET_METRICS_KEY", METRICS_KEY);
        // Gateways seal tenant secrets (bot tokens, provider keys) under it and workers open provider keys with it; the
        // same on every node, like the cluster secret.
        env.put("CLAWFLEET_MASTER_KEY", masterKey);
        env.put("CLAWFLEET_LLM_BASE_URL", llmBaseUrl);
        env.put("CLAWFLEET_LLM_MODEL", "mock");
        env.put("CLAWFLEET_PARTITIONS", "64");
        // Load runs send faster than a person: the per-chat rate limit would only slow them.
        env.put("CLAWFLEET_LIMITS_CHAT_MESSAGES_PER_MINUTE", "0");
        env.put("CLAWFLEET_SANDBOX_WORK_DIR", sandboxWork.toString());
        env.putAll(extraEnv);
        if (!"true".equals(env.get("CLAWFLEET_CLUSTER_INSECURE")) && !env.containsKey("CLAWFLEET_CLUSTER_TLS_DIR")) {
            java.util.Set<io.clawfleet.shared.config.ClawfleetConfig.Role> nodeRoles = java.util.Arrays.stream(roles.split(","))
                    .map(r -> io.clawfleet.shared.config.ClawfleetConfig.Role.valueOf(r.strip().toUpperCase(java.util.Locale.ROOT)))
                    .collect(java.util.stream.Collectors.toSet());
            Path certs = caDir.resolve(id);
            if (!Files.exists(certs)) {
                io.clawfleet.deploy.certs.ClusterCa.open(caDir).issue(id, nodeRoles, List.of(),
                        io.clawfleet.deploy.certs.ClusterCa.NODE_DAYS);
            }
            env.put("CLAWFLEET_CLUSTER_TLS_DIR", certs.toString());
        }
        if (roles.strip().equals("sandbox")) {
            // As on a hardened sandbox host (docs/SANDBOX.md): the node most exposed to untrusted code holds no
            // database credentials, no model keys and no keys of tenants; it needs none of them.
            env.keySet().removeIf(name -> SANDBOX_NEVER_GETS.contains(name) || name.startsWith("CLAWFLEET_LLM_"));
        }
        Node node = new Node(id, roles, httpHost, httpPort, labHost, env, logs.resolve(id + ".log"));
        nodes.put(id, node);
        // Restarts append to it; a log left by an earlier harness with the same node names would mislead.
        Files.deleteIfExists(node.log);
        launch(node);
        return node;
    }

    private void launch(Node node) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(nodeJvmOptions.apply(node.id));
        command.addAll(JvmFlags.forNodes());
        // The node ends with this JVM, even when this one is killed and runs no shutdown hook.
        command.add("-D" + Main.EXIT_WITH_PARENT + "=" + ProcessHandle.current().pid());
        command.addAll(List.of("-jar", jar.toString(), "node"));
        if (node.labHost > 0) {
            // ip netns exec execs the JVM in the host's namespace: the process is the JVM, signals reach it.
            command = lab.onHost(node.labHost, command);
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(node.log.toFile()));
        builder.environment().keySet().removeIf(k -> k.startsWith("CLAWFLEET_"));
        builder.environment().putAll(node.env);
        node.paused = false;
        node.process = builder.start();
    }

    /** Waits until every live node answers /readyz. */
    public void awaitReady(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Node node : nodes.values()) {
            if (!node.alive() && !restartIfMemberLost(node)) {
                continue;
            }
            awaitReady(node, deadline);
        }
    }

    /**
     * Waits until every live node sees every live node as a member ({@code clawfleet_cluster_members}): nodes started
     * together may first form parts of their own, which Hazelcast merges within seconds, and until then the bus does not
     * cross between them. A test of what crosses the bus starts from a cluster in one piece.
     */
    public void awaitOnePiece(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Node> live = nodes.values().stream().filter(node -> node.alive() && !node.paused()).toList();
        Map<String, Integer> seen = new java.util.TreeMap<>();
        while (true) {
            for (Node node : live) {
                seen.put(node.id, members(node));
            }
            if (seen.values().stream().allMatch(count -> count == live.size())) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the cluster is not in one piece after " + timeout.toSeconds() + " s: members each node sees "
                        + seen + ", " + live.size() + " nodes live");
            }
            Thread.sleep(100);
        }
    }

    /** The members a node sees, from its {@code /metrics}; -1 when it does not answer. */
    private int members(Node node) {
        try {
            for (String line : metrics(node).split("\n")) {
                if (line.startsWith("clawfleet_cluster_members")) {
                    return (int) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    public void awaitReady(Node node, long deadlineNanos) throws InterruptedException {
        while (!ready(node)) {
            if (!node.alive() && !restartIfMemberLost(node)) {
                throw new IllegalStateException("node " + node.id + " exited with " + node.process.exitValue()
                        + "; the end of " + node.log.toAbsolutePath() + ":\n" + tail(node.log, 40));
            }
            if (System.nanoTime() > deadlineNanos) {
                throw new IllegalStateException("node " + node.id + " not ready in time; the end of "
                        + node.log.toAbsolutePath() + ":\n" + tail(node.log, 40));
            }
            Thread.sleep(100);
        }
    }

    /**
     * Starts a node again that exited because the cluster shut its member down ({@link Main#EXIT_MEMBER_LOST}), as
     * a supervisor's restart policy would; at most twice per node, so a node that keeps losing its member still fails
     * the run.
     */
    private boolean restartIfMemberLost(Node node) {
        if (node.process == null || node.process.isAlive() || node.process.exitValue() != Main.EXIT_MEMBER_LOST
                || node.memberLostRestarts >= 2) {
            return false;
        }
        node.memberLostRestarts++;
        LOG.warn("node {} exited with {} (the cluster shut its member down); starting it again", node.id, Main.EXIT_MEMBER_LOST);
        try {
            launch(node);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return true;
    }

    /** The last {@code lines} lines of a log, for failure messages (a child JVM's log is not in the test report). */
    public static String tail(Path log, int lines) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(the log cannot be read: " + e + ")";
        }
    }

    public boolean ready(Node node) {
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

    public JsonObject cluster(Node gateway) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(gateway.url() + "/api/v1/cluster"))
                .header("authorization", "Bearer " + OPERATOR_KEY).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        return new JsonObject(response.body());
    }

    /** Partitions per owner with a live lease, as a gateway's {@code /api/v1/cluster} reports them; empty when unreadable now. */
    public JsonObject partitionsByOwner(Node gateway) {
        try {
            return cluster(gateway).getJsonObject("partitionsByOwner");
        } catch (IOException | RuntimeException e) {
            return new JsonObject();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new JsonObject();
        }
    }

    /** How many partitions a {@link #partitionsByOwner} answer counts in all. */
    public static int ownedTotal(JsonObject byOwner) {
        return byOwner.stream().mapToInt(e -> (Integer) e.getValue()).sum();
    }

    /** A node's {@code /metrics}, read with the metrics key. */
    public String metrics(Node node) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(node.url() + "/metrics"))
                .header("authorization", "Bearer " + METRICS_KEY).timeout(Duration.ofSeconds(3)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException(node.url() + "/metrics answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }

    public Node node(String id) {
        return nodes.get(id);
    }

    public List<Node> nodes() {
        return List.copyOf(nodes.values());
    }

    /** SIGTERM and wait: the node drains, hands off and leaves. */
    public void stop(String id) throws InterruptedException {
        Node node = nodes.get(id);
        node.process.destroy();
        if (!node.process.waitFor(40, TimeUnit.SECONDS)) {
            node.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** kill -9: no goodbye, no handoff. */
    public void kill(String id) throws InterruptedException {
        Node node = nodes.get(id);
        node.process.destroyForcibly();
        node.process.waitFor(10, TimeUnit.SECONDS);
        node.paused = false;
    }

    /** SIGSTOP: the JVM freezes with its sockets open, like a long GC pause or a stalled host. */
    public void pause(String id) throws IOException, InterruptedException {
        Node node = nodes.get(id);
        signal(node, "STOP");
        node.paused = true;
    }

    /** SIGCONT: the frozen JVM carries on as if nothing happened. */
    public void resume(String id) throws IOException, InterruptedException {
        Node node = nodes.get(id);
        signal(node, "CONT");
        node.paused = false;
    }

    /**
     * Changes one variable of a node's environment for its next start ({@link #restart}); null removes it. An
     * operator's configuration change rolled out one node at a time (a new master key, say).
     */
    public void setEnv(String id, String name, String value) {
        Node node = nodes.get(id);
        if (value == null) {
            node.env.remove(name);
        } else {
            node.env.put(name, value);
        }
    }

    /** Starts a stopped or killed node again with the same id, ports and configuration. */
    public void restart(String id) throws IOException {
        Node node = nodes.get(id);
        if (node.alive()) {
            throw new IllegalStateException("node " + id + " is still running");
        }
        launch(node);
    }

    private static void signal(Node node, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(node.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + node.pid() + " failed");
        }
    }

    @Override
    public void close() throws InterruptedException {
        for (Node node : nodes.values()) {
            if (node.paused) {
                try {
                    signal(node, "CONT");
                } catch (IOException e) {
                    // It is being stopped anyway.
                }
            }
            if (node.process != null) {
                node.process.destroy();
            }
        }
        for (Node node : nodes.values()) {
            if (node.process != null && !node.process.waitFor(40, TimeUnit.SECONDS)) {
                node.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        deleteQuietly(sandboxWork);
        deleteQuietly(caDir);
    }

    private static void deleteQuietly(Path dir) {
        try (var paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException | UncheckedIOException e) {
            // A leftover folder under the temporary folder is harmless; the next harness makes its own.
        }
    }
}
