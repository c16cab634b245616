package io.clawfleet.deploy;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sandbox as a new user meets it: all roles in one JVM (as {@code up}), the shell enabled, the
 * mock model asking for tools. An admin chat's allowed commands run and return their output; what
 * the policies refuse says so clearly; the two example code skills work end to end; and a secret in
 * the node's environment (the canary the build sets) never reaches a tool's output or the model.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SandboxAllInOneTest {

    private static final String KEY = "sandbox-e2e-key-0123456789";
    private static final String OPERATOR_KEY = "sandbox-e2e-operator-key-0123456789";
    private static final String CANARY_ENV = "CLAWFLEET_TEST_CANARY";

    private MockedNode fixture;
    private MockLlmServer model;
    private NodeRuntime node;
    private String base;
    private String admin;
    private ApiChat api;

    @BeforeAll
    void start() throws Exception {
        fixture = MockedNode.start("gateway,worker,sandbox", KEY, Map.of("agent.autonomy", "full", "allowShell", "true",
                "operatorKey", OPERATOR_KEY));
        model = fixture.model;
        node = fixture.node;
        base = fixture.base;
        api = fixture.api;
        // The operator grants the role (clawfleet admin grant --chat api:<chat>); no chat can take it.
        admin = fixture.adminChat();
        for (String skill : new String[] {"unit-convert", "text-tools"}) {
            upload(skill);
        }
    }

    @AfterAll
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
        return api.call(method, path, body);
    }

    private String ask(String chat, String text) throws Exception {
        return api.ask(chat, text);
    }

    private String shell(String chat, String command) throws Exception {
        return ask(chat, "call:shell_exec " + new JsonObject().put("command", command).encode());
    }

    private void upload(String skill) throws Exception {
        Path folder = Path.of("..", "examples", "skills", skill);
        try (Stream<Path> files = Files.list(folder)) {
            for (Path file : files.toList()) {
                HttpResponse<String> put = call("PUT", "/api/v1/workspace/files/skills/" + skill + "/" + file.getFileName(),
                        new JsonObject().put("content", Files.readString(file)));
                assertThat(put.statusCode()).as(put.body()).isIn(200, 201);
            }
        }
    }

    private static String canary() {
        String value = System.getenv(CANARY_ENV);
        assertThat(value).as(CANARY_ENV + " is set by deploy/pom.xml for this test").isNotBlank();
        return value;
    }

    @Test
    void anAdminChatsAllowedCommandRunsAndReturnsItsOutput() throws Exception {
        assertThat(shell(admin, "echo hello from the sandbox")).contains("hello from the sandbox");
    }

    @Test
    void aFileTheCommandWritesLandsInTheWorkspace() throws Exception {
        // given a workspace file / when a command copies it (the run works on a copy of the workspace)
        call("PUT", "/api/v1/workspace/files/notes/a.txt", new JsonObject().put("content", "tide tables\n"));
        String reply = shell(admin, "cp notes/a.txt notes/b.txt");
        // then what it wrote comes back into the workspace
        assertThat(reply).contains("saved notes/b.txt");
        assertThat(new JsonObject(call("GET", "/api/v1/workspace/files/notes/b.txt", null).body()).getString("content"))
                .isEqualTo("tide tables\n");
    }

    @Test
    void shellMetacharactersAreRefusedNotInterpreted() throws Exception {
        String reply = shell(admin, "echo hi; cat /etc/shadow");
        assertThat(reply).contains("error").doesNotContain("root:");
        assertThat(shell(admin, "echo $(id)")).doesNotContain("uid=");
    }

    @Test
    void aNormalChatCannotRunTheShell() throws Exception {
        String reply = shell("normal-" + UUID.randomUUID(), "echo should not run");
        assertThat(reply).contains("only allowed in an admin chat").doesNotContain("should not run\n");
    }

    @Test
    void theNodesEnvironmentAndProcessesStayHidden() throws Exception {
        String canary = canary();
        String env = shell(admin, "env");
        String proc = shell(admin, "ls /proc");
        String ownEnviron = shell(admin, "cat /proc/self/environ");
        assertThat(env).contains("PATH=").doesNotContain(canary).doesNotContain("CLAWFLEET_");
        assertThat(proc + ownEnviron).doesNotContain(canary);
        // the last request to the model carried the tool's result back: the canary is not in it either
        assertThat(model.lastRequestBody()).doesNotContain(canary);
    }

    @Test
    void webFetchRefusesTheMetadataServiceInEveryEncoding() throws Exception {
        for (String url : new String[] {"http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://0xa9fea9fe/",
                "http://[::ffff:169.254.169.254]/", "http://127.0.0.1:" + node.httpPort() + "/readyz"}) {
            String reply = ask(admin, "call:web_fetch " + new JsonObject().put("url", url).encode());
            assertThat(reply).as(url).contains("error (denied)");
        }
    }

    @Test
    void theNodeJsExampleSkillConverts() throws Exception {
        String reply = ask("skills-" + UUID.randomUUID(),
                "call:unit-convert__convert {\"value\":5,\"from\":\"km\",\"to\":\"m\"}");
        assertThat(reply).contains("\"success\":true").contains("5000");
    }

    @Test
    void theScriptExampleSkillCountsAndSavesANoteInAnAdminChat() throws Exception {
        assertThat(ask("skills-" + UUID.randomUUID(), "call:text-tools__count {\"text\":\"one two three\"}"))
                .contains("\"words\":3");
        String saved = ask(admin, "call:text-tools__save_note {\"title\":\"tide\",\"text\":\"high water at 06:12\"}");
        assertThat(saved).contains("saved memory/notes/tide.md");
        assertThat(new JsonObject(call("GET", "/api/v1/workspace/files/memory/notes/tide.md", null).body()).getString("content"))
                .isEqualTo("high water at 06:12\n");
    }

    @Test
    void aSkillSeesOnlyItsOwnFilesAndNoneOfTheNodesEnvironment() throws Exception {
        // given a skill that reports every file and variable it can see, and a file outside it
        put("notes/private.txt", "not for skills");
        put("skills/peek/SKILL.md", """
                ---
                name: peek
                description: Report what a skill can see.
                entry: peek.sh
                code_tools:
                  - name: look
                    description: List the files and the environment the skill sees
                    parameters: {type: object, properties: {}}
                ---
                # Peek
                """);
        put("skills/peek/peek.sh", """
                #!/bin/sh
                files=$(find ../.. -type f | tr '\\n' ' ')
                vars=$(env | tr '\\n' ' ' | tr -d '"\\\\')
                printf '{"files":"%s","env":"%s"}' "$files" "$vars"
                """);
        // when a chat calls it
        String reply = ask("skills-" + UUID.randomUUID(), "call:peek__look {}");
        // then it saw its own folder and nothing else; no secret of the node
        assertThat(reply).contains("\"success\":true").contains("skills/peek/peek.sh")
                .doesNotContain("private.txt").doesNotContain("IDENTITY.md").doesNotContain("unit-convert")
                .doesNotContain(canary()).doesNotContain("CLAWFLEET_TEST_CANARY").doesNotContain("CLAWFLEET_API_KEY");
    }

    private void put(String path, String content) throws Exception {
        HttpResponse<String> put = call("PUT", "/api/v1/workspace/files/" + path, new JsonObject().put("content", content));
        assertThat(put.statusCode()).as(put.body()).isIn(200, 201);
    }

    @Test
    void aNormalChatsSkillRunCannotWriteWhereTheChatMayNot() throws Exception {
        // given a normal chat / when a skill it runs writes under memory/ (another chat's territory)
        String reply = ask("normal-" + UUID.randomUUID(), "call:text-tools__save_note {\"title\":\"sneaky\",\"text\":\"x\"}");
        // then the worker does not save it, and says so
        assertThat(reply).contains("not saved: memory/notes/sneaky.md");
        assertThat(call("GET", "/api/v1/workspace/files/memory/notes/sneaky.md", null).statusCode()).isEqualTo(404);
    }

    @Test
    void theClusterViewShowsTheSandboxsIsolationLevel() throws Exception {
        // given what this host offers (bubblewrap where the test scripts could install it, else the degraded level)
        ClawfleetConfig.Sandbox sandbox = TestNodes.config("sandbox", Map.of()).sandbox();
        String level = HostSupport.detect(sandbox.isolation(), sandbox.runAsUid(), sandbox.runAsGid()).isolation().id();
        // then the cluster view and /readyz say so
        JsonObject cluster = new JsonObject(new ApiChat(base, OPERATOR_KEY).call("GET", "/api/v1/cluster", null).body());
        assertThat(cluster.encode()).contains("\"isolation\":\"" + level + "\"");
        assertThat(call("GET", "/readyz", null).body()).contains("\"isolation\":\"" + level + "\"")
                // and whether runs get cgroup limits here (on a host with cgroup v2 delegation) or why not
                .containsPattern("\"cgroups\":\"(on|off)\"");
    }
}
