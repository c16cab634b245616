package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** One cluster member on an external PostgreSQL. */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = "Start one cluster member (CLAWFLEET_DB_URL names the PostgreSQL; migrations are applied on start).")
final class NodeCommand implements Callable<Integer> {

    /** Longest a node may take to join the cluster and start its roles. */
    static final long START_TIMEOUT_SECONDS = 60;

    @Option(names = "--roles", description = "Comma list of gateway, worker, sandbox, scheduler (default: all; env CLAWFLEET_ROLES).")
    String roles;

    @Option(names = "--config", description = "YAML config file (env CLAWFLEET_CONFIG); environment variables override it.")
    Path config;

    @Option(names = "--http-port", description = "HTTP port of this node (env CLAWFLEET_HTTP_PORT, default 8080).")
    Integer httpPort;

    @Option(names = "--insecure-cluster", description = "Run the event bus in plain TCP without certificates (env "
            + "CLAWFLEET_CLUSTER_INSECURE=true). Anyone who reaches the cluster ports can then read and receive bus traffic; "
            + "logged loudly and shown in /api/v1/cluster.")
    boolean insecureCluster;

    /**
     * The exit status of a start that failed: {@link Main#EXIT_MEMBER_LOST} when the cluster upset the member during
     * the start (nodes started together first formed clusters of their own, and this one's merge into the others reset
     * it under the start, or failed); as for a member lost later, a restart joins afresh. Any other failure is
     * rethrown (status 1).
     */
    static int startFailed(java.util.concurrent.ExecutionException failure) throws java.util.concurrent.ExecutionException {
        if (failure.getCause() instanceof io.clawfleet.shared.cluster.MemberLostException lost) {
            org.slf4j.LoggerFactory.getLogger(NodeCommand.class).error("{}; exiting with status {} so that its"
                    + " supervisor restarts it", lost.getMessage(), Main.EXIT_MEMBER_LOST);
            return Main.EXIT_MEMBER_LOST;
        }
        throw failure;
    }

    @Override
    public Integer call() throws Exception {
        Map<String, String> overrides = new HashMap<>();
        if (insecureCluster) {
            overrides.put("cluster.insecure", "true");
        }
        if (roles != null) {
            overrides.put("roles", roles);
        }
        if (httpPort != null) {
            overrides.put("http.port", httpPort.toString());
        }
        ClawfleetConfig cfg = ConfigLoader.load(config, overrides);
        DbUrl db = cfg.db().url() == null ? null : DbUrl.parse(cfg.db().url());
        NodeRuntime runtime;
        try {
            runtime = NodeRuntime.start(cfg, db, true, Roles.of(cfg))
                    .toCompletionStage().toCompletableFuture().get(START_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return startFailed(e);
        } catch (java.util.concurrent.TimeoutException e) {
            // Better to exit and be restarted by the supervisor than to hang half-joined.
            throw new IllegalStateException("the node did not start within " + START_TIMEOUT_SECONDS
                    + " s (cluster join or database); exiting so it can be restarted");
        }
        Shutdown.onExit(runtime, null);
        String node = runtime.nodeId();
        runtime.membership().onLost(() -> {
            // Hazelcast shut this node's member down (it could not merge back into the cluster after the nodes
            // started as separate clusters, say): nothing brings it back in this JVM, and /readyz says so forever.
            // A restart joins afresh, so exit and let the supervisor (Kubernetes, systemd) start it again.
            org.slf4j.LoggerFactory.getLogger(NodeCommand.class).error("the cluster member of node {} was shut down by the"
                    + " cluster, not by the node; exiting with status {} so that its supervisor restarts it", node, Main.EXIT_MEMBER_LOST);
            new Thread(() -> System.exit(Main.EXIT_MEMBER_LOST), "clawfleet-member-lost").start();
        });
        return 0;
    }
}
