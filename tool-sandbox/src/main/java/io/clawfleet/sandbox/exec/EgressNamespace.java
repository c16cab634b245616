package io.clawfleet.sandbox.exec;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The network a run granted egress gets: a network namespace of its own, connected to the internet by
 * pasta (package passt), a user-mode TCP/IP translator that opens ordinary sockets on the host for the
 * run's connections. In that namespace, before the run starts, policy rules make every private, link-local,
 * loopback and metadata range, and every address of the host, unreachable; the namespace's loopback is its
 * own (pasta forwards no port either way), so the host's loopback services (the embedded PostgreSQL, the
 * cluster and HTTP ports) are out of reach. DNS goes to {@link #DNS}, which pasta answers by forwarding to
 * the host's resolver. The rules belong to the namespace's owner; the run itself runs in a nested user
 * namespace of bubblewrap, without capabilities, and cannot change them.
 */
public final class EgressNamespace {

    private static final Logger LOG = LoggerFactory.getLogger(EgressNamespace.class);

    /** The resolver address runs see in /etc/resolv.conf; pasta forwards UDP port 53 there to the host's resolver. */
    public static final String DNS = "169.254.0.53";

    /** Ranges no run with egress may reach (the host's own addresses are added per run). */
    static final List<String> BLOCKED_V4 = List.of("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
            "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/3");
    static final List<String> BLOCKED_V6 = List.of("::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "fc00::/7",
            "fe80::/10", "fec0::/10", "ff00::/8");

    /** What a run's stderr starts with when its namespace could not be set up (the run never started). */
    static final String SETUP_FAILED = "sandbox-egress: the network rules of the run could not be set";

    /** Before every blocking rule (pref 100); only pasta's DNS forwarder, by UDP port 53, is let through. */
    private static final int ALLOW_PREF = 90;
    private static final int BLOCK_PREF = 100;

    private EgressNamespace() {
    }

    /**
     * The command that puts {@code inner} (bubblewrap with {@code --share-net}) into a fresh network
     * namespace with egress: pasta, leading a process group of its own (a pasta that fails leaves its namespace
     * child behind, which only the group's kill reaches), then a shell that adds the rules and execs
     * {@code inner}, or fails (and the run never starts) when a rule cannot be added.
     *
     * @param programs setsid, pasta, ip and sh, then options for pasta, as {@link HostSupport#egress()} found them
     */
    static List<String> wrap(List<String> programs, List<String> inner) {
        String ip = programs.get(2);
        List<String> command = new ArrayList<>(List.of(programs.get(0), programs.get(1)));
        command.addAll(programs.subList(4, programs.size()));
        command.addAll(List.of("--quiet", "--foreground", "--config-net", "--no-map-gw",
                // No port forwarded into the namespace, nor from its loopback to the host's.
                "--tcp-ports", "none", "--udp-ports", "none", "--tcp-ns", "none", "--udp-ns", "none",
                "--dns-forward", DNS, "--", programs.get(3), "-c", script(ip, hostAddresses()), "sandbox-egress"));
        command.addAll(inner);
        return command;
    }

    /**
     * A fixed script (no input of a run reaches it): two {@code ip -batch} calls, IPv4 then IPv6, then exec;
     * when a rule fails, {@link #SETUP_FAILED} and exit 125.
     * Addresses are the host's own, formatted by the JDK.
     */
    static String script(String ip, Set<String> hostAddresses) {
        StringBuilder v4 = new StringBuilder("rule add pref " + ALLOW_PREF + " to " + DNS + "/32 ipproto udp dport 53 lookup main\n");
        StringBuilder v6 = new StringBuilder();
        for (String range : BLOCKED_V4) {
            v4.append(block(range));
        }
        for (String range : BLOCKED_V6) {
            v6.append(block(range));
        }
        for (String address : hostAddresses) {
            if (address.contains(":")) {
                v6.append(block(address + "/128"));
            } else {
                v4.append(block(address + "/32"));
            }
        }
        return ip + " -4 -batch - <<'V4' && " + ip + " -6 -batch - <<'V6' || { echo '" + SETUP_FAILED + "' >&2; exit 125; }\n"
                + v4 + "V4\n" + v6 + "V6\nexec \"$@\"\n";
    }

    private static String block(String range) {
        return "rule add pref " + BLOCK_PREF + " to " + range + " unreachable\n";
    }

    /** Every address of every interface of the host, as the JDK sees them now (they can change: DHCP, new links). */
    static Set<String> hostAddresses() {
        Set<String> addresses = new TreeSet<>();
        try {
            for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                for (InetAddress address : Collections.list(nic.getInetAddresses())) {
                    if (address.isLoopbackAddress() || address.isLinkLocalAddress()) {
                        continue; // blocked as ranges already
                    }
                    String text = address.getHostAddress();
                    int zone = text.indexOf('%');
                    addresses.add(address instanceof Inet4Address || zone < 0 ? text : text.substring(0, zone));
                }
            }
        } catch (SocketException e) {
            // The ranges still apply; a public address of the host would be reachable like any other.
            LOG.warn("cannot list the host's addresses to keep runs with egress away from them: {}", e.toString());
        }
        return addresses;
    }
}
