package io.clawfleet.deploy.chaos;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;

/**
 * Passes TCP connections from one address to another, byte for byte: how hosts of a {@link NetLab} reach a service that
 * listens on this machine's loopback only (the embedded PostgreSQL). Each accepted connection gets its own connection
 * to the target; either side closing closes both.
 */
public final class TcpRelay implements AutoCloseable {

    private final Vertx vertx;
    private final NetServer server;
    private final NetClient client;
    private final String targetHost;
    private final int targetPort;

    private TcpRelay(Vertx vertx, String targetHost, int targetPort) {
        this.vertx = vertx;
        this.server = vertx.createNetServer();
        this.client = vertx.createNetClient();
        this.targetHost = targetHost;
        this.targetPort = targetPort;
    }

    /** Listens on {@code host} (a free port) and relays to {@code targetHost:targetPort}. */
    public static Future<TcpRelay> start(Vertx vertx, String host, String targetHost, int targetPort) {
        TcpRelay relay = new TcpRelay(vertx, targetHost, targetPort);
        relay.server.connectHandler(relay::relay);
        return relay.server.listen(0, host).map(s -> relay);
    }

    public int port() {
        return server.actualPort();
    }

    private void relay(NetSocket inbound) {
        inbound.pause();
        client.connect(targetPort, targetHost).onComplete(connected -> {
            if (connected.failed()) {
                inbound.close();
                return;
            }
            NetSocket outbound = connected.result();
            // Pipes keep back-pressure both ways and end the other side when one ends.
            inbound.pipeTo(outbound).onComplete(done -> outbound.close());
            outbound.pipeTo(inbound).onComplete(done -> inbound.close());
        });
    }

    @Override
    public void close() {
        server.close();
        client.close();
    }
}
