import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * "The internet" of EgressIsolationTest, run in a network namespace the test made: an HTTP server on
 * args[0]:args[1] that answers every request with "hello from outside", and, with args[2], a DNS server on
 * args[2]:53 that answers every A question with args[0]. Prints "listening" once both are bound.
 */
public class Outside {
    public static void main(String[] args) throws Exception {
        InetAddress http = InetAddress.getByName(args[0]);
        ServerSocket server = new ServerSocket(Integer.parseInt(args[1]), 50, http);
        if (args.length > 2) {
            DatagramSocket dns = new DatagramSocket(53, InetAddress.getByName(args[2]));
            Thread.ofPlatform().daemon().start(() -> answerDns(dns, http.getAddress()));
        }
        System.out.println("listening");
        System.out.flush();
        while (true) {
            try (Socket client = server.accept()) {
                // Read the request first: answering and closing before it arrived would reset the connection.
                var in = client.getInputStream();
                int last = 0;
                for (int read; (read = in.read()) >= 0; ) {
                    last = (last << 8) | read;
                    if (last == 0x0d0a0d0a) {
                        break;
                    }
                }
                byte[] body = "hello from outside".getBytes(StandardCharsets.US_ASCII);
                OutputStream out = client.getOutputStream();
                out.write(("HTTP/1.0 200 OK\r\nContent-Length: " + body.length + "\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
            }
        }
    }

    private static void answerDns(DatagramSocket socket, byte[] address) {
        byte[] buffer = new byte[512];
        while (true) {
            try {
                DatagramPacket query = new DatagramPacket(buffer, buffer.length);
                socket.receive(query);
                int end = 12;
                while (end < query.getLength() && buffer[end] != 0) {
                    end += (buffer[end] & 0xff) + 1;
                }
                end += 5; // the root label, QTYPE, QCLASS
                int qtype = ((buffer[end - 4] & 0xff) << 8) | (buffer[end - 3] & 0xff);
                byte[] reply = Arrays.copyOf(buffer, end + (qtype == 1 ? 16 : 0));
                reply[2] = (byte) 0x81;
                reply[3] = (byte) 0x80;
                reply[6] = 0;
                reply[7] = (byte) (qtype == 1 ? 1 : 0);
                reply[8] = reply[9] = reply[10] = reply[11] = 0;
                if (qtype == 1) {
                    byte[] answer = {(byte) 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, address[0], address[1], address[2], address[3]};
                    System.arraycopy(answer, 0, reply, end, 16);
                }
                socket.send(new DatagramPacket(reply, reply.length, query.getSocketAddress()));
            } catch (Exception e) {
                // One bad packet; keep answering.
            }
        }
    }
}
