package dev.praetor.neo4jlauncher;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

/**
 * Runs a Neo4j 5.26 community DBMS in this JVM with Bolt on 127.0.0.1:PORT and
 * authentication disabled, until the process is killed. It exists so tests and
 * CI get a real Neo4j from Maven Central artifacts alone.
 *
 * <pre>
 * java -jar neo4j-launcher.jar [--port 7687] [--host 127.0.0.1] [--home DIR]
 *      [--ready FILE] [--conf key=value]...
 * </pre>
 *
 * When Bolt accepts connections the launcher prints the Bolt URI on stdout and,
 * with --ready, writes it to FILE (atomically), so a script can wait on either.
 * SIGTERM shuts the DBMS down cleanly.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        int port = 7687;
        String host = "127.0.0.1";
        Path home = Path.of("neo4j-home");
        Path ready = null;
        Map<String, String> conf = new LinkedHashMap<>();
        // Test-friendly defaults; --conf overrides any of them.
        conf.put("dbms.security.auth_enabled", "false");
        conf.put("server.http.enabled", "false");
        conf.put("server.https.enabled", "false");
        conf.put("server.memory.pagecache.size", "512m");
        conf.put("db.tx_log.rotation.retention_policy", "2 files");
        conf.put("dbms.usage_report.enabled", "false");

        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--port" -> port = Integer.parseInt(value(args, ++i, a));
                case "--host" -> host = value(args, ++i, a);
                case "--home" -> home = Path.of(value(args, ++i, a));
                case "--ready" -> ready = Path.of(value(args, ++i, a));
                case "--conf" -> {
                    String kv = value(args, ++i, a);
                    int eq = kv.indexOf('=');
                    if (eq <= 0) {
                        usage("--conf wants key=value, got " + kv);
                    }
                    conf.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                case "-h", "--help" -> usage(null);
                default -> usage("unknown argument " + a);
            }
        }
        conf.put("server.bolt.enabled", "true");
        conf.put("server.bolt.listen_address", host + ":" + port);
        conf.put("server.bolt.advertised_address", host + ":" + port);

        if (ready != null) {
            Files.deleteIfExists(ready);
        }
        Files.createDirectories(home);
        // The public builder takes raw settings only from a file, so the
        // settings are written as the neo4j.conf of this home.
        Path confFile = home.resolve("neo4j.conf");
        StringBuilder text = new StringBuilder("# written by neo4j-launcher at every start\n");
        conf.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(confFile, text, StandardCharsets.UTF_8);

        long t0 = System.nanoTime();
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home.toAbsolutePath())
                .loadPropertiesFromFile(confFile.toAbsolutePath())
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("neo4j-launcher: shutting down");
            try {
                dbms.shutdown();
            } finally {
                stopped.countDown();
            }
        }, "neo4j-launcher-shutdown"));

        GraphDatabaseService db = dbms.database("neo4j");
        if (!db.isAvailable(120_000)) {
            System.err.println("neo4j-launcher: database 'neo4j' not available after 120 s; see " + home + "/logs");
            System.exit(1);
        }
        waitForBolt(host, port);
        String uri = "bolt://" + host + ":" + port;
        if (ready != null) {
            Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
            Files.writeString(tmp, uri + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, ready, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
        System.err.printf("neo4j-launcher: Neo4j ready on %s in %d ms (home %s)%n",
                uri, (System.nanoTime() - t0) / 1_000_000, home.toAbsolutePath());
        System.out.println(uri);
        System.out.flush();
        stopped.await();
    }

    private static void waitForBolt(String host, int port) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 1000);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("neo4j-launcher: Bolt did not open on " + host + ":" + port + ": " + e);
                    System.exit(1);
                }
                Thread.sleep(100);
            }
        }
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) {
            usage(flag + " needs a value");
        }
        return args[i];
    }

    private static void usage(String problem) {
        if (problem != null) {
            System.err.println("neo4j-launcher: " + problem);
        }
        System.err.println("usage: java -jar neo4j-launcher.jar [--port 7687] [--host 127.0.0.1] "
                + "[--home DIR] [--ready FILE] [--conf key=value]...");
        System.exit(problem == null ? 0 : 2);
    }
}
