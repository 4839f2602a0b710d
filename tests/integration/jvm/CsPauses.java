// The JDK's own HTTP server (com.sun.net.httpserver) with a quick handler
// on a fixed pool, and a JVM that pauses on a schedule: a live set held
// for the whole run (a full collection has it all to mark and compact),
// full collections forced every GC_MS, thread dumps (a VM operation that
// is no collection) every DUMP_MS, and ALLOC_CHUNKS arrays of 64 KiB
// allocated every millisecond (young collections), each kept until 192
// newer ones replace it: a young collection has up to 12 MB of them to
// copy, a pause of milliseconds. 0 turns each off.
//
//   java CsPauses PORT POOL_THREADS LIVE_MB GC_MS DUMP_MS ALLOC_CHUNKS
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public class CsPauses {
    static byte[][] live;
    static final byte[][] young = new byte[192][];
    static int next;

    static void every(long ms, Runnable work) {
        if (ms <= 0)
            return;
        Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(ms);
                } catch (InterruptedException e) {
                    return;
                }
                work.run();
            }
        });
        t.setDaemon(true);
        t.start();
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int poolThreads = Integer.parseInt(args[1]);
        int liveMb = Integer.parseInt(args[2]);
        long gcMs = Long.parseLong(args[3]);
        long dumpMs = Long.parseLong(args[4]);
        int allocChunks = Integer.parseInt(args[5]);

        // 1 KiB arrays: many objects to mark, as a real heap has.
        live = new byte[liveMb * 1024][];
        for (int i = 0; i < live.length; i++)
            live[i] = new byte[1024];

        byte[] body = "ok\n".getBytes(StandardCharsets.US_ASCII);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
        server.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(poolThreads));
        server.start();

        every(gcMs, System::gc);
        every(dumpMs, Thread::getAllStackTraces);
        every(allocChunks > 0 ? 1 : 0, () -> {
            for (int i = 0; i < allocChunks; i++) {
                young[next] = new byte[64 * 1024];
                next = (next + 1) % young.length;
            }
        });
    }
}
