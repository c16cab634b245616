package io.clawfleet.deploy;

import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.workspace.DefaultWorkspace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet workspace pull|push} against an in-JVM gateway on embedded PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class WorkspaceCommandTest {

    private static final String KEY = "cli-workspace-key-0123456789abcdef";
    // Tests that upload run as another tenant, so the round trip sees only its own changes.
    private static final String OTHER_KEY = "cli-other-tenant-key-0123456789abcdef";

    @TempDir
    Path temp;

    private NodeRuntime node;
    private String url;

    /** What a run printed and returned. */
    private record Run(int exit, String out, String err) {
    }

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY)), db, List.of(GatewayRole::new));
        url = "http://127.0.0.1:" + node.httpPort();
        Database database = Database.connect(node.vertx(), db, 1, 5_000);
        result(new TenantStore(database.pool()).ensure("other", "Other", OTHER_KEY));
        result(database.close());
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
    }

    private Run run(String... args) {
        return runAs(KEY, args);
    }

    private Run runAs(String key, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        String[] full = Stream.concat(Stream.of(args), Stream.of("--url", url, "--api-key", key)).toArray(String[]::new);
        int exit = cli.execute(full);
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void pullEditPushPullRoundTrip() throws IOException {
        // given a fresh workspace / when pulled / then the defaults are in the folder
        Path first = temp.resolve("first");
        Run pulled = run("workspace", "pull", first.toString());
        assertThat(pulled.exit()).as(pulled.err()).isZero();
        for (String path : DefaultWorkspace.paths()) {
            assertThat(first.resolve(path)).hasContent(DefaultWorkspace.files().get(path));
        }

        // when files are edited, added, removed, and a .git folder appears
        Files.writeString(first.resolve("IDENTITY.md"), "# Identity\n\nYou are Rex, a terse assistant.\n");
        write(first, "memory/notes/día 1.md", "ünïcode and a \"quote\"\r\nwindows line\n");
        write(first, "skills/weather/SKILL.md", "---\nname: weather\ndescription: Forecasts\nrequires:\n  env: [WEATHER_KEY]\n---\nUse web_fetch.\n");
        write(first, ".mcp.json", "{\"mcpServers\":{}}\n");
        write(first, ".git/config", "[core]\n");
        write(first, "empty.md", "");
        Files.delete(first.resolve("AGENTS.md"));

        // then push reports each file and uploads all but the dot-folder
        Run pushed = run("workspace", "push", first.toString());
        assertThat(pushed.exit()).as(pushed.out() + pushed.err()).isZero();
        assertThat(pushed.out())
                .contains("updated    IDENTITY.md")
                .contains("created    memory/notes/día 1.md")
                .contains("created    skills/weather/SKILL.md")
                .contains("created    .mcp.json")
                .contains("created    empty.md")
                .contains("unchanged  TOOLS.md")
                .contains("4 created, 1 updated, 4 unchanged, 0 deleted, 0 failed")
                .doesNotContain(".git/config")
                .doesNotContain("AGENTS.md");

        // when pushed again with --prune / then nothing changes but the file removed locally is deleted
        Run pruned = run("workspace", "push", "--prune", first.toString());
        assertThat(pruned.exit()).isZero();
        assertThat(pruned.out()).contains("deleted    AGENTS.md").contains("0 created, 0 updated, 9 unchanged, 1 deleted, 0 failed");

        // then a pull elsewhere gives the same files, byte for byte
        Path second = temp.resolve("second");
        assertThat(run("workspace", "pull", second.toString()).exit()).isZero();
        Map<String, String> expected = tree(first);
        expected.remove(".git/config");
        assertThat(tree(second)).isEqualTo(expected);
    }

    @Test
    void pullRefusesAFolderWithFilesUnlessForced() throws IOException {
        Path dir = temp.resolve("busy");
        write(dir, "mine.txt", "keep me");
        write(dir, ".git/HEAD", "ref");
        Run refused = run("workspace", "pull", dir.toString());
        assertThat(refused.exit()).isEqualTo(1);
        assertThat(refused.err()).contains("already has files").contains("--force");
        assertThat(dir.resolve("IDENTITY.md")).doesNotExist();

        Run forced = run("workspace", "pull", "--force", dir.toString());
        assertThat(forced.exit()).isZero();
        assertThat(dir.resolve("IDENTITY.md")).exists();
        assertThat(dir.resolve("mine.txt")).hasContent("keep me");

        // a folder holding only dot-folders (a fresh git clone of nothing) counts as empty
        Path repo = temp.resolve("repo");
        write(repo, ".git/HEAD", "ref");
        assertThat(run("workspace", "pull", repo.toString()).exit()).isZero();
    }

    @Test
    void pushReportsWhatCannotBeUploadedAndFails() throws IOException {
        Path dir = temp.resolve("bad");
        write(dir, "skills/broken/SKILL.md", "no frontmatter here");
        write(dir, "binary.dat", "");
        Files.write(dir.resolve("binary.dat"), new byte[] {(byte) 0xff, (byte) 0xfe, 0});
        write(dir, "fine.md", "ok");
        Run pushed = runAs(OTHER_KEY, "workspace", "push", dir.toString());
        assertThat(pushed.exit()).isEqualTo(1);
        assertThat(pushed.out())
                .contains("failed     skills/broken/SKILL.md: skills/broken/SKILL.md: must start with a YAML frontmatter")
                .contains("failed     binary.dat: not UTF-8 text")
                .contains("created    fine.md")
                .contains("2 failed");
    }

    @Test
    void aWrongKeyIsAClearError() {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute("workspace", "pull", temp.resolve("x").toString(), "--url", url, "--api-key", "wrong");
        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("invalid API key");
    }

    @Test
    void theCommandsExplainThemselves() {
        StringWriter out = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        assertThat(cli.execute("workspace")).isZero();
        assertThat(out.toString()).contains("pull").contains("push");
        assertThat(cli.execute("workspace", "push", "--help")).isZero();
        assertThat(out.toString()).contains("--prune").contains("--api-key").contains("dot-folders");
        assertThat(cli.execute("dead-letters", "list", "--help")).isZero();
        assertThat(out.toString()).contains("--after").contains("--url");
    }

    @Test
    void pathsAreEncodedSegmentBySegment() {
        assertThat(WorkspaceCommand.encodePath("memory/notes/día 1.md")).isEqualTo("memory/notes/d%C3%ADa%201.md");
        assertThat(WorkspaceCommand.encodePath("a%2e/b?c#d")).isEqualTo("a%252e/b%3Fc%23d");
    }

    private static void write(Path dir, String path, String content) throws IOException {
        Path file = dir.resolve(path);
        Files.createDirectories(file.getParent());
        Files.writeString(file, content, StandardCharsets.UTF_8);
    }

    private static Map<String, String> tree(Path root) throws IOException {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path file : walk.filter(Files::isRegularFile).toList()) {
                files.put(root.relativize(file).toString().replace('\\', '/'), Files.readString(file));
            }
        }
        return files;
    }
}
