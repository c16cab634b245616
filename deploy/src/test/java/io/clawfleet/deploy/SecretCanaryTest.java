package io.clawfleet.deploy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's provider key as a canary (issue 14): after a run that uses it (model calls with it, a shell tool on the
 * sandbox, an export, a failing call), it is in no row of a logical dump of every table, no file of the database's
 * data directory (tables, indexes, WAL, dead rows: all of what a backup could hold) or of its server log, no log line, no message the worker sent over the bus (the
 * sandbox's requests among them), no tool's environment, no answer. A plaintext marker sent the same way is found
 * by the same scans, so they can fail.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretCanaryTest {

    private static final String KEY = "canary-e2e-key-0123456789";
    private final String canary = "sk-canary-" + HexFormat.of().formatHex(randomBytes(12));
    private final String marker = "plain-marker-" + HexFormat.of().formatHex(randomBytes(8));
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final List<String> busMessages = Collections.synchronizedList(new ArrayList<>());

    private Path dir;
    private Vertx vertx;
    private MockLlmServer model;
    private EmbeddedDatabase server;
    private DbUrl db;
    private NodeRuntime node;
    private ApiChat api;

    @BeforeAll
    void start() throws IOException {
        dir = Files.createTempDirectory("clawfleet-canary");
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        vertx = Vertx.vertx();
        model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        // a server of its own, so its data directory can be searched
        server = EmbeddedDatabase.start(dir.resolve("pgdata"));
        db = server.createDatabase("canary");
        ClawfleetConfig config = TestNodes.config("gateway,worker,sandbox", Map.of("apiKey", KEY, "agent.autonomy", "full",
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock", "allowShell", "true",
                "egress.allowedHosts", "127.0.0.1"));
        node = TestNodes.start(config, db, Roles.of(config));
        // every message sent on the bus, as it would go on the wire
        node.vertx().eventBus().addOutboundInterceptor(delivery -> {
            Object body = delivery.message().body();
            busMessages.add(delivery.message().address() + " " + (body instanceof io.clawfleet.shared.message.Versioned
                    ? Json.toString(body) : String.valueOf(body)));
            delivery.next();
        });
        api = new ApiChat("http://127.0.0.1:" + node.httpPort(), KEY);
    }

    @AfterAll
    void stop() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        result(node.stop(), Duration.ofSeconds(60));
        server.close();
        result(vertx.close());
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }

    @Test
    void aProviderKeyUsedInTurnsIsNowhereButWhereItIsSent() throws Exception {
        // given the default bot's own provider, with the canary as its key
        HttpResponse<String> put = api.call("PUT", "/api/v1/providers", new JsonObject().put("providers", new JsonObject()
                .put("own", new JsonObject().put("type", "openai").put("baseUrl", "http://127.0.0.1:" + model.port() + "/v1")
                        .put("model", "mock").put("apiKey", canary))));
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);

        // when chats use it: a plain turn (with the marker), a shell tool on the sandbox, a call that fails
        String chat = "canary-" + UUID.randomUUID();
        assertThat(api.ask(chat, "hello " + marker)).contains(marker);
        assertThat(model.lastCredential()).isEqualTo("Bearer " + canary);
        assertThat(api.call("PUT", "/api/v1/chats/api/" + chat + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
        String env = api.ask(chat, "call:shell_exec " + new JsonObject().put("command", "env").encode());
        assertThat(env).contains("PATH=");
        String failed = api.ask(chat, "fail:401");
        List<String> answers = new ArrayList<>(List.of(put.body(), env, failed,
                api.call("GET", "/api/v1/providers", null).body(), api.call("GET", "/api/v1/usage", null).body(),
                api.call("GET", "/api/v1/audit", null).body()));
        HttpResponse<byte[]> export = api.bytes("/api/v1/export");
        assertThat(export.statusCode()).isEqualTo(200);
        answers.add(new String(export.body(), StandardCharsets.ISO_8859_1));

        // then no answer holds the key
        assertThat(answers).noneMatch(text -> text.contains(canary));
        // nor any message on the bus (the sandbox's requests among them), where the marker went
        assertThat(busMessages).anyMatch(m -> m.startsWith("clawfleet.sandbox.") && m.contains("shell_exec"));
        assertThat(busMessages).anyMatch(m -> m.contains(marker));
        assertThat(busMessages).noneMatch(m -> m.contains(canary));
        // nor any log line
        assertThat(logs.list).isNotEmpty();
        assertThat(logs.list).noneSatisfy(event -> assertThat(event.getFormattedMessage()
                + (event.getThrowableProxy() == null ? "" : ThrowableProxyUtil.asString(event.getThrowableProxy()))).contains(canary));
        // nor a logical dump of every table, as pg_dump would write their rows (values decompressed and de-TOASTed,
        // which a scan of files cannot see through), where the marker is
        Database database = Database.connect(vertx, db, 1, 5_000);
        String dump;
        try {
            dump = logicalDump(database);
            result(database.pool().query("CHECKPOINT").execute());
        } finally {
            result(database.close());
        }
        assertThat(dump).contains(marker, "bot_providers", "llm_usage");
        assertThat(dump).doesNotContain(canary);
        // nor any file of the database, WAL and dead rows included, where the marker is, nor the server's log beside it
        assertThat(filesHolding(dir.resolve("pgdata"), marker)).isNotEmpty();
        assertThat(EmbeddedDatabase.logFile(dir.resolve("pgdata"))).exists();
        assertThat(filesHolding(dir, canary)).isEmpty();
    }

    /**
     * Every row of every table of the schema as JSON text, table by table: the data a {@code pg_dump} holds. (pg_dump
     * itself cannot be used here: Debian's is version 15, the embedded server 17, and pg_dump refuses a newer server.)
     */
    private static String logicalDump(Database database) {
        StringBuilder dump = new StringBuilder();
        List<String> tables = new ArrayList<>();
        result(database.pool().query("""
                SELECT quote_ident(table_name) FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name""").execute())
                .forEach(row -> tables.add(row.getString(0)));
        for (String table : tables) {
            dump.append("-- ").append(table).append('\n');
            result(database.pool().query("SELECT row_to_json(t)::text FROM " + table + " t").execute())
                    .forEach(row -> dump.append(row.getString(0)).append('\n'));
        }
        return dump.toString();
    }

    /** The files under {@code root} whose bytes hold {@code text} (UTF-8). */
    private static List<Path> filesHolding(Path root, String text) throws IOException {
        byte[] needle = text.getBytes(StandardCharsets.UTF_8);
        List<Path> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                byte[] bytes;
                try {
                    bytes = Files.readAllBytes(file);
                } catch (IOException e) {
                    continue; // a file the server removed meanwhile
                }
                if (indexOf(bytes, needle) >= 0) {
                    found.add(root.relativize(file));
                }
            }
        }
        return found;
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        ThreadLocalRandom.current().nextBytes(bytes);
        return bytes;
    }
}
