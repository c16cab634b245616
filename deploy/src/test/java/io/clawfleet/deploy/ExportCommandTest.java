package io.clawfleet.deploy;

import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.KeyStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet export --out FILE} against an in-JVM gateway on embedded PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ExportCommandTest {

    private static final String KEY = "cli-export-key-0123456789abcdef";

    @TempDir
    Path temp;

    private NodeRuntime node;
    private String url;
    private String readKey;

    private record Run(int exit, String out, String err) {
    }

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY)), db, List.of(GatewayRole::new));
        url = "http://127.0.0.1:" + node.httpPort();
        Database database = Database.connect(node.vertx(), db, 1, 5_000);
        readKey = result(new KeyStore(database.pool()).create(GatewayRole.DEFAULT_TENANT, "ro", Set.of("read"), null, null))
                .orElseThrow().secret();
        result(database.close());
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
    }

    private Run run(String key, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        String[] full = Stream.concat(Stream.of(args), Stream.of("--url", url, "--api-key", key)).toArray(String[]::new);
        return new Run(cli.execute(full), out.toString(), err.toString());
    }

    @Test
    void theArchiveIsWrittenToTheFileAndItsCountsPrinted() throws Exception {
        Path file = temp.resolve("tenant.zip");
        Run run = run(KEY, "export", "--out", file.toString());
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("exported tenant default").contains("bots/main/workspace/");
        JsonObject manifest = ExportCommand.manifest(file);
        assertThat(manifest).isNotNull();
        assertThat(manifest.getString("tenant")).isEqualTo("default");
        assertThat(manifest.getJsonObject("entries").getLong("bots/main/workspace/")).isPositive();
        assertThat(Files.list(temp).map(p -> p.getFileName().toString())).containsExactly("tenant.zip");
    }

    @Test
    void anExistingFileIsKeptWithoutForce() throws Exception {
        Path file = temp.resolve("kept.zip");
        Files.writeString(file, "mine");
        Run run = run(KEY, "export", "--out", file.toString());
        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err()).contains("--force");
        assertThat(Files.readString(file)).isEqualTo("mine");
        assertThat(run(KEY, "export", "--out", file.toString(), "--force").exit()).isZero();
        assertThat(ExportCommand.manifest(file)).isNotNull();
    }

    @Test
    void aKeyWithoutTheAdminScopeGetsNoFile() {
        Path file = temp.resolve("refused.zip");
        Run run = run(readKey, "export", "--out", file.toString());
        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err()).contains("403");
        assertThat(Files.exists(file)).isFalse();
        assertThat(Files.exists(temp.resolve("refused.zip.part"))).isFalse();
    }
}
