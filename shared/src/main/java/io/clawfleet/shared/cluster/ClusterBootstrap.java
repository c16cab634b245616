package io.clawfleet.shared.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;

import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

/**
 * Starts Vert.x, clustered through Hazelcast or on its own. Hazelcast joins by TCP-IP from
 * {@code cluster.members} (multicast and auto-detection off unless asked for), or through the
 * Kubernetes API when a service name is configured.
 */
public final class ClusterBootstrap {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ClusterBootstrap.class);

    /**
     * The seeds with host names replaced by their addresses ({@code host[:port]} each). Why: a node bound to one
     * interface ({@code cluster.host}) makes Hazelcast drop the seeds given by a name that resolves to another address,
     * so nodes seeded with service names (Compose, a headless Kubernetes service) would each form a cluster of one. A
     * name that does not resolve now is kept as it is (Hazelcast tries it again), with a warning.
     */
    static List<String> resolved(List<String> members) {
        List<String> out = new java.util.ArrayList<>();
        for (String member : members) {
            String seed = member.trim();
            String host = seed;
            String port = "";
            int colon = seed.lastIndexOf(':');
            if (seed.startsWith("[")) {
                int close = seed.indexOf(']');
                host = seed.substring(1, close);
                port = close + 1 < seed.length() ? seed.substring(close + 1) : "";
            } else if (colon > 0 && seed.indexOf(':') == colon) {
                host = seed.substring(0, colon);
                port = seed.substring(colon);
            }
            if (host.isEmpty() || Character.isDigit(host.charAt(0)) || host.contains(":")) {
                out.add(seed); // an address already
                continue;
            }
            try {
                for (java.net.InetAddress address : java.net.InetAddress.getAllByName(host)) {
                    String ip = address.getHostAddress();
                    String entry = (address instanceof java.net.Inet6Address ? "[" + ip + "]" : ip) + port;
                    if (!out.contains(entry)) {
                        out.add(entry);
                    }
                }
            } catch (java.net.UnknownHostException e) {
                LOG.warn("cluster seed '{}' does not resolve now; kept as a name (Hazelcast may drop it when it resolves to "
                        + "an address other than cluster.host's)", host);
                out.add(seed);
            }
        }
        return out;
    }

    /**
     * A started Vert.x and the membership view that goes with it; {@code upsets} says what happened to the member
     * meanwhile that the node did not do (a merge into another cluster, say), null when not clustered.
     */
    public record Started(Vertx vertx, Membership membership, MemberUpsets upsets) {
    }

    private ClusterBootstrap() {
    }

    /**
     * @param tls the node's event-bus certificate; null = plain TCP (alone, or {@code --insecure-cluster})
     */
    public static Future<Started> start(ClawfleetConfig config, Member self, boolean clustered, ClusterTls tls,
                                        VertxMetricsFactory metrics) {
        VertxOptions options = new VertxOptions()
                .setPreferNativeTransport(true)
                // Turns do real work between awaits (JSON, prompt building); warn only on real stalls.
                .setMaxEventLoopExecuteTime(2_000_000_000L)
                .setWarningExceptionTime(5_000_000_000L);
        options.getMetricsOptions().setEnabled(metrics != null);
        if (!clustered) {
            var builder = Vertx.builder().with(options);
            if (metrics != null) {
                builder.withMetrics(metrics);
            }
            Vertx vertx = builder.build();
            return Future.succeededFuture(new Started(vertx, new LocalMembership(self), null));
        }
        return join(config, self, bus -> tls == null ? bus : tls.apply(bus), options, metrics);
    }

    /**
     * Joins the cluster with event-bus transport settings of the caller's making. Nodes come through
     * {@link #start}; tools and tests that must speak like someone else (an intruder with a certificate of its own)
     * use this.
     */
    public static Future<Started> join(ClawfleetConfig config, Member self, UnaryOperator<EventBusOptions> transport,
                                       VertxOptions options, VertxMetricsFactory metrics) {
        ClawfleetConfig.Cluster cluster = config.cluster();
        EventBusOptions bus = new EventBusOptions()
                .setHost(cluster.host())
                .setPort(cluster.eventBusPort())
                .setClusterPublicHost(cluster.host());
        options.setEventBusOptions(transport.apply(bus));
        com.hazelcast.config.Config hz = hazelcastConfig(cluster, self);
        MemberUpsets upsets = new MemberUpsets();
        hz.addListenerConfig(new com.hazelcast.config.ListenerConfig(upsets));
        HazelcastClusterManager manager = new HazelcastClusterManager(hz);
        var builder = Vertx.builder().with(options).withClusterManager(manager);
        if (metrics != null) {
            builder.withMetrics(metrics);
        }
        return builder.buildClustered().compose(vertx -> {
            PartitionSnapshots.forgetLeftMembers(vertx, manager.getHazelcastInstance());
            return Future.succeededFuture(
                    new Started(vertx, new HazelcastMembership(vertx, manager.getHazelcastInstance(), self), upsets));
        }, failed -> {
            // Vert.x's own start (its node entry, its subscriptions) under a merge that reset the member: a restart
            // mends it; anything else is the failure it is.
            String what = upsets.first();
            return Future.failedFuture(what == null ? failed : new MemberLostException(self.nodeId(), what, failed));
        });
    }

    /**
     * Vert.x's own {@code default-cluster.xml}, built in code: reading it (XML parsed and checked against Hazelcast's
     * schema) took 0.6 s of every clustered start (docs/PERFORMANCE.md, "Start-up"). Everything else in it is
     * Hazelcast's default or set below. A {@code cluster.xml} of the operator's on the class path, or the
     * {@code vertx.hazelcast.config} system property, is still read as Vert.x reads it.
     */
    static Config baseConfig() {
        if (System.getProperty("vertx.hazelcast.config") != null
                || ClusterBootstrap.class.getClassLoader().getResource("cluster.xml") != null) {
            return ConfigUtil.loadConfig();
        }
        Config hz = new Config();
        hz.getMultiMapConfig("__vertx.subs").setBackupCount(1)
                .setValueCollectionType(com.hazelcast.config.MultiMapConfig.ValueCollectionType.SET);
        hz.getMapConfig("__vertx.haInfo").setBackupCount(1);
        hz.getMapConfig("__vertx.nodeInfo").setBackupCount(1);
        return hz;
    }

    static Config hazelcastConfig(ClawfleetConfig.Cluster cluster, Member self) {
        Config hz = baseConfig();
        hz.setClusterName(cluster.name());
        hz.setInstanceName("clawfleet-" + self.nodeId());
        hz.getMemberAttributeConfig().setAttribute(HazelcastMembership.ATTR_NODE_ID, self.nodeId());
        hz.getMemberAttributeConfig().setAttribute(HazelcastMembership.ATTR_ROLES, String.join(",", self.roles()));
        if (self.httpUrl() != null) {
            hz.getMemberAttributeConfig().setAttribute(HazelcastMembership.ATTR_HTTP, self.httpUrl());
        }
        self.attributes().forEach((key, value) ->
                hz.getMemberAttributeConfig().setAttribute(HazelcastMembership.ATTR_PREFIX + key, value));
        // Membership is a hint; leases decide ownership. A crashed process is seen at once (its
        // connections close), so the heartbeat detector can be patient: a member frozen for a few
        // seconds (GC, SIGSTOP, a stalled VM) is not thrown out, which would split the cluster.
        hz.setProperty("hazelcast.heartbeat.interval.seconds", "1");
        hz.setProperty("hazelcast.max.no.heartbeat.seconds", "15");
        hz.setProperty("hazelcast.max.join.seconds", "40");
        hz.setProperty("hazelcast.wait.seconds.before.join", System.getProperty("hazelcast.wait.seconds.before.join", "0"));
        hz.setProperty("hazelcast.merge.first.run.delay.seconds", "5");
        hz.setProperty("hazelcast.merge.next.run.delay.seconds", "5");
        // Bounded cluster operations: with a member frozen or split off, an operation (a joining
        // node's listener registration, say) fails in seconds instead of retrying for minutes.
        hz.setProperty("hazelcast.operation.call.timeout.millis", "15000");
        hz.setProperty("hazelcast.invocation.max.retry.count", "40");
        hz.setProperty("hazelcast.invocation.retry.pause.millis", "250");
        // The rejoin stall (issue 20): a migration whose source or destination died or froze holds the master's
        // repair of its partition table up for this long (Hazelcast's default is 300 s). Meanwhile the table names
        // departed members, every operation on their partitions fails, and a node restarted at its old address cannot
        // even write its own entry: it fails to join, again and again, for five minutes. Our maps are small; a live
        // migration takes milliseconds.
        hz.setProperty("hazelcast.partition.migration.timeout", "20");
        // A leave waits at most this long for its partitions to be safe elsewhere (default 600 s): a node whose join
        // failed, or whose stop finds the cluster stuck, exits within NodeRuntime's bounded leave instead of hanging.
        hz.setProperty("hazelcast.graceful.shutdown.max.wait", "8");
        hz.setProperty("hazelcast.phone.home.enabled", "false");
        hz.setProperty("hazelcast.shutdownhook.enabled", "false");
        hz.setProperty("hazelcast.logging.type", "slf4j");

        NetworkConfig network = hz.getNetworkConfig();
        network.setPort(cluster.port()).setPortAutoIncrement(cluster.port() != 0);
        if (!"0.0.0.0".equals(cluster.host())) {
            network.getInterfaces().setEnabled(true).setInterfaces(List.of(cluster.host()));
            hz.setProperty("hazelcast.socket.bind.any", "false");
            network.setPublicAddress(cluster.host());
        }
        JoinConfig join = network.getJoin();
        join.getAutoDetectionConfig().setEnabled(false);
        join.getMulticastConfig().setEnabled(cluster.multicast());
        if (cluster.kubernetesServiceDns() != null) {
            // Hazelcast's Kubernetes DNS discovery: the addresses the headless service's name resolves to (not-ready
            // pods included when the service publishes them), at the member port; no service account token.
            join.getTcpIpConfig().setEnabled(false);
            join.getKubernetesConfig().setEnabled(true)
                    .setProperty("service-dns", cluster.kubernetesServiceDns())
                    .setProperty("service-port", Integer.toString(cluster.port()))
                    .setProperty("service-dns-timeout", "5");
        } else if (cluster.kubernetesServiceName() != null) {
            join.getTcpIpConfig().setEnabled(false);
            var kubernetes = join.getKubernetesConfig().setEnabled(true)
                    .setProperty("service-name", cluster.kubernetesServiceName());
            if (cluster.kubernetesNamespace() != null) {
                kubernetes.setProperty("namespace", cluster.kubernetesNamespace());
            }
        } else if (!cluster.multicast()) {
            List<String> members = cluster.members().isEmpty()
                    ? List.of(cluster.host())
                    : cluster.members();
            join.getTcpIpConfig().setEnabled(true).setMembers(
                    "0.0.0.0".equals(cluster.host()) ? members.stream().map(String::trim).collect(Collectors.toList())
                            : resolved(members));
        }
        return hz;
    }
}
