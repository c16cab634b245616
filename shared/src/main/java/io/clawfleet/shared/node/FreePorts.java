package io.clawfleet.shared.node;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for servers whose port must be known before they bind: a node's HTTP port when configured as 0 (it
 * goes into the node id and the membership record) and the cluster ports of the nodes a test harness starts.
 *
 * <p>A port from the kernel's ephemeral range (what {@code new ServerSocket(0)} hands out) is the worst
 * choice: between closing the probe and the real bind, any outgoing connection on the host may be given the
 * same port, and the server then fails with "address already in use". So ports are drawn at random from
 * below the ephemeral range (read from {@code /proc/sys/net/ipv4/ip_local_port_range}), never handed out
 * twice by this JVM, and checked by binding them. Only if no such range exists is the kernel asked.
 */
public final class FreePorts {
    /** Below this, ports are commonly fixed by other software (databases, brokers, dev servers). */
    private static final int LOWEST = 15_000;
    private static final Path EPHEMERAL_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private FreePorts() {
    }

    /** A port nothing listens on now and that the kernel does not give to outgoing connections. */
    public static int take() {
        int highest = ephemeralStart() - 1;
        if (highest - LOWEST >= 1_000) {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            for (int attempt = 0; attempt < 500; attempt++) {
                int port = LOWEST + random.nextInt(highest - LOWEST + 1);
                if (HANDED_OUT.add(port) && bindable(port)) {
                    return port;
                }
            }
        }
        try (ServerSocket socket = new ServerSocket(0)) {
            HANDED_OUT.add(socket.getLocalPort());
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("cannot find a free port: " + e.getMessage(), e);
        }
    }

    /** The first port of the ephemeral range; 32768 (the Linux default) when it cannot be read. */
    static int ephemeralStart() {
        try {
            // Read line by line: /proc files report a size of 0, which whole-file reads may trust.
            String[] range = Files.readAllLines(EPHEMERAL_RANGE).get(0).strip().split("\\s+");
            return Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }

    private static boolean bindable(int port) {
        // The wildcard bind fails if anything holds the port on any address, loopback included.
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
