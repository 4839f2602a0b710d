// The JDK's own HTTP server (com.sun.net.httpserver) with a virtual thread
// per request (Executors.newVirtualThreadPerTaskExecutor, JDK 21 or
// later): requests to /spin run SPIN_MS on the CPU, the others answer at
// once. With one carrier (-Djdk.virtualThreadScheduler.parallelism=1), a
// spinning virtual thread holds it: it is not preempted.
//
//   java CsLoom PORT SPIN_MS
import com.sun.net.httpserver.HttpServer;
import java.io.FileInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public class CsLoom {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        long spinNs = Long.parseLong(args[1]) * 1_000_000L;
        String fifo = args[2];
        byte[] body = "ok\n".getBytes(StandardCharsets.US_ASCII);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
        server.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            if (exchange.getRequestURI().getPath().startsWith("/spin")) {
                long end = System.nanoTime() + spinNs;
                while (System.nanoTime() < end) {
                    Thread.onSpinWait();
                }
            } else if (exchange.getRequestURI().getPath().startsWith("/fifo")) {
                try (FileInputStream in = new FileInputStream(fifo)) {
                    in.read();
                }
            }
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.start();
    }
}
