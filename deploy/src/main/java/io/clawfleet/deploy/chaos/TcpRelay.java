package io.clawfleet.deploy.chaos;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Passes TCP connections from one address to another, byte for byte: how hosts of a {@link NetLab} reach a service that
 * listens on this machine's loopback only (the embedded PostgreSQL). Each accepted connection gets its own connection
 * to the target; either side closing closes both.
 *
 * <p>It can also {@link #stall} like a cut link where namespaces cannot be made: nothing is passed on in either
 * direction and new connections are accepted but go nowhere, with no reset, until {@link #flow}.
 */
public final class TcpRelay implements AutoCloseable {

    private final NetServer server;
    private final NetClient client;
    private final String targetHost;
    private final int targetPort;
    private final Set<NetSocket> sockets = ConcurrentHashMap.newKeySet();
    private final List<NetSocket> held = new CopyOnWriteArrayList<>();
    private volatile boolean stalled;

    private TcpRelay(Vertx vertx, String targetHost, int targetPort) {
        this.server = vertx.createNetServer();
        this.client = vertx.createNetClient();
        this.targetHost = targetHost;
        this.targetPort = targetPort;
    }

    /** Listens on {@code host} (a free port) and relays to {@code targetHost:targetPort}. */
    public static Future<TcpRelay> start(Vertx vertx, String host, String targetHost, int targetPort) {
        TcpRelay relay = new TcpRelay(vertx, targetHost, targetPort);
        relay.server.connectHandler(relay::accept);
        return relay.server.listen(0, host).map(s -> relay);
    }

    public int port() {
        return server.actualPort();
    }

    /** Stops passing anything on, as a link whose packets vanish: connections stay open and silent. */
    public void stall() {
        stalled = true;
        sockets.forEach(NetSocket::pause);
    }

    /** Passes bytes on again, and connects what was accepted while stalled. */
    public void flow() {
        stalled = false;
        sockets.forEach(NetSocket::resume);
        held.forEach(socket -> {
            held.remove(socket);
            relay(socket);
        });
    }

    private void accept(NetSocket inbound) {
        inbound.pause();
        if (stalled) {
            held.add(inbound);
            return;
        }
        relay(inbound);
    }

    private void relay(NetSocket inbound) {
        client.connect(targetPort, targetHost).onComplete(connected -> {
            if (connected.failed()) {
                inbound.close();
                return;
            }
            NetSocket outbound = connected.result();
            sockets.add(inbound);
            sockets.add(outbound);
            inbound.closeHandler(v -> sockets.remove(inbound));
            outbound.closeHandler(v -> sockets.remove(outbound));
            pass(inbound, outbound);
            pass(outbound, inbound);
            if (stalled) {
                outbound.pause();
            } else {
                inbound.resume();
            }
        });
    }

    /** One direction, with back-pressure; a drain does not resume a side that is stalled. */
    private void pass(NetSocket from, NetSocket to) {
        from.handler(bytes -> {
            to.write(bytes);
            if (to.writeQueueFull()) {
                from.pause();
                to.drainHandler(v -> {
                    if (!stalled) {
                        from.resume();
                    }
                });
            }
        });
        from.endHandler(v -> to.close());
        from.exceptionHandler(e -> from.close());
    }

    @Override
    public void close() {
        server.close();
        client.close();
    }
}
