// A thread per connection, the threads virtual (JDK 21 or later): the main
// thread accepts, and each connection's virtual thread reads its requests
// blocking and answers each. A virtual thread's blocking read parks it;
// the JDK's poller wakes it when the socket is ready, and it reads on a
// carrier. With -Djdk.pollerMode=1 the pollers are platform threads of
// their own (Read-Poller, Write-Poller); by default they run on the
// carriers.
//
//   java CsVtSockets PORT
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

public class CsVtSockets {
    private static final byte[] ANSWER =
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n".getBytes(StandardCharsets.US_ASCII);

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(args[0]);
        try (ServerSocket listener = new ServerSocket(port, 128, InetAddress.getLoopbackAddress())) {
            while (true) {
                Socket connection = listener.accept();
                Thread.ofVirtual().start(() -> serve(connection));
            }
        }
    }

    // Requests without bodies (csload's GETs): a request ends at its empty line.
    private static void serve(Socket connection) {
        try (connection) {
            BufferedReader in = new BufferedReader(
                new InputStreamReader(connection.getInputStream(), StandardCharsets.US_ASCII));
            OutputStream out = connection.getOutputStream();
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.isEmpty()) {
                    out.write(ANSWER);
                    out.flush();
                }
            }
        } catch (IOException closed) {
            // the client went away: nothing to answer
        }
    }
}
