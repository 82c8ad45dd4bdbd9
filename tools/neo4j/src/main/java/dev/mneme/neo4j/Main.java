package dev.mneme.neo4j;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;

/**
 * Runs Neo4j Community in-process with only the Bolt connector, for tests and development.
 *
 * <p>Usage: {@code Main <data-dir> [port]}; the port defaults to $MNEME_NEO4J_PORT, then 7687.
 * Auth is disabled and Bolt listens on 127.0.0.1 only, so this is never a production server.
 * Prints exactly one line {@code NEO4J READY bolt://127.0.0.1:<port>} on stdout once Bolt
 * accepts connections; SIGTERM (or Ctrl-C) shuts the DBMS down cleanly through a shutdown hook.
 */
public final class Main {
    private static final String HOST = "127.0.0.1";

    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Main <data-dir> [port]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = parsePort(args.length > 1 ? args[1] : System.getenv("MNEME_NEO4J_PORT"));
        Files.createDirectories(home);

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnectorInternalSettings.enable_local_connector, false)
                // Netty waits 5 s twice by default on shutdown; a test server has nothing to drain.
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                // No phoning home (the machine may have no internet) and no per-query log writes.
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseSettings.log_queries, GraphDatabaseSettings.LogQueryLevel.OFF)
                // The machine is shared: keep the footprint small and the disk use bounded.
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(128))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(16))
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "false")
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("NEO4J STOPPING");
            System.out.flush();
            try {
                dbms.shutdown();
            } finally {
                System.out.println("NEO4J STOPPED");
                System.out.flush();
                stopped.countDown();
            }
        }, "neo4j-shutdown"));

        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        if (!db.isAvailable(Duration.ofSeconds(120).toMillis())) {
            System.err.println("NEO4J FAILED: database '" + db.databaseName() + "' not available after 120 s");
            System.exit(1);
        }
        waitForBolt(port, Duration.ofSeconds(60));
        System.out.println("NEO4J READY bolt://" + HOST + ":" + port);
        System.out.flush();
        stopped.await();
    }

    private static int parsePort(String raw) {
        if (raw == null || raw.isBlank()) {
            return 7687;
        }
        try {
            int port = Integer.parseInt(raw.trim());
            if (port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
            return port;
        } catch (NumberFormatException e) {
            System.err.println("NEO4J FAILED: port must be 1..65535, got '" + raw + "'");
            System.exit(2);
            return -1;
        }
    }

    /** Bolt starts with the DBMS, but say READY only once a client can really connect. */
    private static void waitForBolt(int port, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(HOST, port), 500);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("NEO4J FAILED: Bolt not accepting on " + HOST + ":" + port);
                    System.exit(1);
                }
                TimeUnit.MILLISECONDS.sleep(100);
            }
        }
    }
}
