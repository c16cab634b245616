package io.clawfleet.deploy.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Separate hosts on one machine, for cutting the network between cluster nodes: each host is a Linux network namespace
 * with two links, each a veth pair into a bridge in the caller's namespace.
 * <ul>
 *   <li><b>mesh</b> ({@code 10.X.2.0/24}): node to node, Hazelcast and the event bus;</li>
 *   <li><b>services</b> ({@code 10.X.1.0/24}): PostgreSQL, the model and the caller's HTTP; the caller is
 *       {@code 10.X.1.1} on it.</li>
 * </ul>
 * A link is cut by setting the caller's end of its veth pair down: the host's packets on it are dropped silently, as on
 * a pulled cable or a dead switch port (no reset, no error; the peers find out by their own timeouts). Healing sets it
 * up again. Needs root (or CAP_NET_ADMIN) and iproute2; {@link #unavailable()} says why not where it cannot run.
 */
public final class NetLab implements AutoCloseable {

    public enum Link { MESH, SERVICES }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(NetLab.class);

    private final String id;
    private final int subnet;
    private final List<String> namespaces = new ArrayList<>();
    /** Links cut now, as {@code host:link}. */
    private final java.util.Set<String> cut = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private boolean closed;

    private NetLab(String id, int subnet) {
        this.id = id;
        this.subnet = subnet;
    }

    /** Why namespaces cannot be made here (not root, no iproute2, a kernel or sandbox that refuses), or empty. */
    public static Optional<String> unavailable() {
        String probe = "cfprobe" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        try {
            Result added = run(List.of("ip", "netns", "add", probe));
            if (added.code != 0) {
                return Optional.of("'ip netns add' failed (" + added.output.strip() + "): network namespaces need root");
            }
            Result veth = run(List.of("ip", "link", "add", probe + "a", "type", "veth", "peer", "name", probe + "b"));
            Result bridge = run(List.of("ip", "link", "add", probe + "c", "type", "bridge"));
            run(List.of("ip", "link", "del", probe + "a"));
            run(List.of("ip", "link", "del", probe + "c"));
            run(List.of("ip", "netns", "del", probe));
            if (veth.code != 0 || bridge.code != 0) {
                return Optional.of("veth pairs or bridges cannot be made here: " + veth.output.strip() + " " + bridge.output.strip());
            }
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("iproute2's 'ip' cannot be run: " + e.getMessage());
        }
    }

    /** Makes {@code hosts} hosts, numbered from 1, both links up. */
    public static NetLab create(int hosts) throws IOException {
        String id = String.format(Locale.ROOT, "%04x", ThreadLocalRandom.current().nextInt(0x10000));
        NetLab lab = new NetLab(id, freeSubnet());
        try {
            lab.build(hosts);
        } catch (IOException | RuntimeException e) {
            lab.close();
            throw e;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(lab::close, "netlab-cleanup"));
        return lab;
    }

    /** A second octet X whose 10.X.0.0/16 no route of this machine uses yet. */
    private static int freeSubnet() throws IOException {
        String routes = run(List.of("ip", "-4", "route", "show", "table", "all")).output;
        for (int attempt = 0; attempt < 50; attempt++) {
            int x = 100 + ThreadLocalRandom.current().nextInt(100);
            if (!routes.contains("10." + x + ".")) {
                return x;
            }
        }
        throw new IOException("no free 10.X.0.0/16 for a network lab; routes:\n" + routes);
    }

    private void build(int hosts) throws IOException {
        must("ip", "link", "add", bridge(Link.MESH), "type", "bridge");
        must("ip", "link", "add", bridge(Link.SERVICES), "type", "bridge");
        must("ip", "addr", "add", "10." + subnet + ".1.1/24", "dev", bridge(Link.SERVICES));
        must("ip", "link", "set", bridge(Link.MESH), "up");
        must("ip", "link", "set", bridge(Link.SERVICES), "up");
        for (int host = 1; host <= hosts; host++) {
            String ns = namespace(host);
            must("ip", "netns", "add", ns);
            namespaces.add(ns);
            must("ip", "-n", ns, "link", "set", "lo", "up");
            for (Link link : Link.values()) {
                String outer = outer(host, link);
                String inner = link == Link.MESH ? "mesh0" : "svc0";
                must("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns);
                must("ip", "link", "set", outer, "master", bridge(link));
                must("ip", "link", "set", outer, "up");
                must("ip", "-n", ns, "addr", "add", address(host, link) + "/24", "dev", inner);
                must("ip", "-n", ns, "link", "set", inner, "up");
            }
        }
        LOG.info("network lab {} ready: {} hosts, services 10.{}.1.0/24, mesh 10.{}.2.0/24", id, hosts, subnet, subnet);
    }

    /** The host's address on a link. */
    public String address(int host, Link link) {
        return "10." + subnet + "." + (link == Link.SERVICES ? 1 : 2) + "." + (10 + host);
    }

    /** The caller's own address on the services link: where it serves PostgreSQL and the model to the hosts. */
    public String servicesGateway() {
        return "10." + subnet + ".1.1";
    }

    /** The command that runs {@code command} on the host (in its namespace). */
    public List<String> onHost(int host, List<String> command) {
        List<String> out = new ArrayList<>(List.of("ip", "netns", "exec", namespace(host)));
        out.addAll(command);
        return out;
    }

    /** Cuts the host's link: from now on its packets on it go nowhere. */
    public void cut(int host, Link link) throws IOException {
        must("ip", "link", "set", outer(host, link), "down");
        cut.add(host + ":" + link);
        LOG.info("network lab {}: cut host {}'s {} link", id, host, link);
    }

    public void heal(int host, Link link) throws IOException {
        must("ip", "link", "set", outer(host, link), "up");
        cut.remove(host + ":" + link);
        LOG.info("network lab {}: healed host {}'s {} link", id, host, link);
    }

    /** Heals every link cut now; how many there were. */
    public int healAll() throws IOException {
        List<String> links = List.copyOf(cut);
        for (String hostLink : links) {
            String[] parts = hostLink.split(":");
            heal(Integer.parseInt(parts[0]), Link.valueOf(parts[1]));
        }
        return links.size();
    }

    private String namespace(int host) {
        return "cf" + id + "h" + host;
    }

    private String bridge(Link link) {
        return "cf" + id + (link == Link.MESH ? "bm" : "bs");
    }

    private String outer(int host, Link link) {
        return "cf" + id + (link == Link.MESH ? "m" : "s") + host;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        // Deleting a namespace deletes the veth ends in it, and with them their pairs.
        for (String ns : namespaces) {
            quietly("ip", "netns", "del", ns);
        }
        quietly("ip", "link", "del", bridge(Link.MESH));
        quietly("ip", "link", "del", bridge(Link.SERVICES));
    }

    private static void quietly(String... command) {
        try {
            run(List.of(command));
        } catch (IOException e) {
            // Cleaning up: what is left is named after this lab and harms no one.
        }
    }

    private static void must(String... command) throws IOException {
        Result result = run(List.of(command));
        if (result.code != 0) {
            throw new IOException(String.join(" ", command) + " failed with " + result.code + ": " + result.output.strip());
        }
    }

    private record Result(int code, String output) {
    }

    private static Result run(List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish in 20 s");
            }
            return new Result(process.exitValue(), output);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
