package io.clawfleet.shared.node;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class FreePortsTest {

    @Test
    void portsAreBindableNeverRepeatedAndOutsideTheRangeOutgoingConnectionsUse() throws IOException {
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            int port = FreePorts.take();
            // then outgoing connections cannot be given it between now and the server's bind
            assertThat(port).isLessThan(FreePorts.ephemeralStart());
            assertThat(seen.add(port)).as("port %d handed out twice", port).isTrue();
            try (ServerSocket server = new ServerSocket()) {
                server.bind(new InetSocketAddress("127.0.0.1", port));
            }
        }
    }
}
