package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.security.MasterKeys;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** Everything in one JVM: every role, an embedded PostgreSQL in the data folder, a chat in the terminal. */
@Command(name = "up", mixinStandardHelpOptions = true,
        description = "Run every role in one JVM with an embedded PostgreSQL under the data folder, and chat in the terminal.")
final class UpCommand implements Callable<Integer> {

    static final String API_KEY_FILE = "api-key";
    static final String OPERATOR_KEY_FILE = "operator.key";
    static final String MASTER_KEY_FILE = "master.key";

    @Option(names = "--data-dir", description = "Data folder (default .clawfleet; env CLAWFLEET_DATA_DIR).")
    Path dataDir;

    @Option(names = "--http-port", description = "HTTP port (default 8080; env CLAWFLEET_HTTP_PORT).")
    Integer httpPort;

    @Option(names = "--no-chat", description = "Do not open the terminal chat (it is also skipped when stdin is not a terminal).")
    boolean noChat;

    @Option(names = "--config", description = "YAML config file (env CLAWFLEET_CONFIG); environment variables override it.")
    Path config;

    @Override
    public Integer call() throws Exception {
        Map<String, String> overrides = new HashMap<>();
        if (dataDir != null) {
            overrides.put("dataDir", dataDir.toString());
        }
        if (httpPort != null) {
            overrides.put("http.port", httpPort.toString());
        }
        // All-in-one is for one machine: listen on loopback unless told otherwise.
        ClawfleetConfig cfg = ConfigLoader.load(config, System.getenv(), overrides, Map.of("http.host", "127.0.0.1"));
        Path data = cfg.dataDir();
        Files.createDirectories(data);
        String apiKey = apiKey(cfg, data);
        overrides.put("apiKey", apiKey);
        Secret operatorKey = operatorKey(cfg, data);
        overrides.put("operatorKey", operatorKey.value());
        boolean masterKeyMade = false;
        if (cfg.security().masterKeys().isEmpty()) {
            // Tenant secrets (bot tokens) are encrypted under it; the first start makes it, owner-only.
            masterKeyMade = !Files.exists(data.resolve(MASTER_KEY_FILE));
            overrides.put("masterKeyFile", masterKeyFile(data).toString());
        }
        cfg = ConfigLoader.load(config, System.getenv(), overrides, Map.of("http.host", "127.0.0.1"));

        // Stopped by the exit hook below once the node has stopped, not by zonky's own hook beside it. It starts on a
        // thread of its own while the node makes Vert.x and its roles; the node connects once it is up.
        EmbeddedDatabase.Starting database = EmbeddedDatabase.startInBackground(data.resolve("postgres"), 0, Map.of(), false);
        NodeRuntime runtime;
        try {
            runtime = NodeRuntime.start(cfg, database.url(), database.database(), false, Roles.of(cfg))
                    .toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
        } catch (Exception e) {
            database.close();
            // The database's own error ("cannot start the embedded PostgreSQL in ..."), not the node's wrapping of it.
            if (database.database().isCompletedExceptionally()
                    && database.database().exceptionNow() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
        Shutdown.onExit(runtime, database::close);
        String url = "http://127.0.0.1:" + runtime.httpPort();
        System.out.println();
        System.out.println("Clawfleet is up.");
        System.out.println("  API:      " + url + "  (OpenAI-compatible at " + url + "/v1)");
        System.out.println("  API key:  " + apiKey + "  (stored in " + data.resolve(API_KEY_FILE) + ")");
        System.out.println("  Console:  " + url + "/console  (sign in with the operator key, or the API key for the default tenant)");
        if (operatorKey.made()) {
            System.out.println("  Operator: " + operatorKey.value() + "  (for /admin/v1 and 'clawfleet tenants'; shown once, "
                    + "stored in " + data.resolve(OPERATOR_KEY_FILE) + ")");
        } else {
            System.out.println("  Operator: key " + (Files.exists(data.resolve(OPERATOR_KEY_FILE))
                    ? "in " + data.resolve(OPERATOR_KEY_FILE) : "from CLAWFLEET_OPERATOR_KEY"));
        }
        if (masterKeyMade) {
            System.out.println("  Secrets:  encrypted under the master key made in " + data.resolve(MASTER_KEY_FILE)
                    + "; back it up apart from the data, without it bot tokens cannot be read");
        }
        System.out.println("  Data:     " + data.toAbsolutePath());
        if (!cfg.llm().configured()) {
            System.out.println("  Model:    none configured; set CLAWFLEET_LLM_BASE_URL, CLAWFLEET_LLM_API_KEY, CLAWFLEET_LLM_MODEL");
        }
        System.out.println("  Stop:     Ctrl-C");
        System.out.println();
        if (!noChat && System.console() != null) {
            new ChatClient(url, apiKey, "cli-" + System.getProperty("user.name", "user"), System.getProperty("user.name", "user"))
                    .run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), System.out);
            System.exit(0);
        }
        return 0;
    }

    /** A secret of the data folder, and whether this start made it. */
    private record Secret(String value, boolean made) {
    }

    /** CLAWFLEET_API_KEY, else the key stored in the data folder, else a new one (stored, owner-only). */
    private static String apiKey(ClawfleetConfig cfg, Path data) throws IOException {
        return cfg.apiKey() != null ? cfg.apiKey() : stored(data.resolve(API_KEY_FILE), "cf_").value();
    }

    /**
     * The operator's key (issue 13): CLAWFLEET_OPERATOR_KEY, else the key stored in the data folder, else a
     * new one, stored owner-only and shown once, on the start that made it.
     */
    private static Secret operatorKey(ClawfleetConfig cfg, Path data) throws IOException {
        return cfg.security().operatorKey() != null ? new Secret(cfg.security().operatorKey(), false)
                : stored(data.resolve(OPERATOR_KEY_FILE), "cfop_");
    }

    /** The master key file of the data folder (issue 14), made with one new key on the first start. */
    static Path masterKeyFile(Path data) throws IOException {
        Path file = data.resolve(MASTER_KEY_FILE);
        if (!Files.exists(file)) {
            createOwnerOnly(file);
            Files.writeString(file, "# Clawfleet master key: wraps every tenant's data key. Back it up; never share it.\n"
                    + MasterKeys.generate() + "\n");
        }
        return file;
    }

    private static void createOwnerOnly(Path file) throws IOException {
        try {
            // Created owner-only, never readable by others even for a moment.
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(file); // not a POSIX file system; the key is still only in the user's data folder
        }
    }

    /** The secret kept in {@code file}, or a new random one written there with owner-only permissions from the start. */
    private static Secret stored(Path file, String prefix) throws IOException {
        if (Files.isReadable(file)) {
            String stored = Files.readString(file).strip();
            if (!stored.isEmpty()) {
                return new Secret(stored, false);
            }
            Files.delete(file);
        }
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        String key = prefix + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        createOwnerOnly(file);
        Files.writeString(file, key + "\n");
        return new Secret(key, true);
    }
}
