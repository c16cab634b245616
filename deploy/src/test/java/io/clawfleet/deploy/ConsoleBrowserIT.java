package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The operator console in a real headless browser (issue 17), against a cluster of two JVMs (a gateway with a worker,
 * and a second worker): Debian's chromium driven by playwright-core signs in as the operator with the keyboard alone,
 * sees both members and the partitions split between them, watches a partition move to the gateway's worker when the
 * other worker is stopped (live, no reload), suspends and resumes a tenant, is refused a tenant's transcript; then
 * signs in as the tenant's admin, opens a transcript, replays a dead letter and sees it answered. The screenshots it
 * takes are the ones in docs/OPERATIONS.md. {@code ./clawfleet test} installs chromium (apt) and playwright-core
 * (npm); without them this test skips and says why.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class ConsoleBrowserIT {

    private static final Path PEERS = Path.of("src", "test", "node");
    private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");

    private TestCluster fixture;
    private ClusterHarness cluster;
    private String chromium;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(Files.isDirectory(PEERS.resolve("node_modules/playwright-core")),
                "playwright-core is not installed (./clawfleet test installs it with npm)");
        Optional<String> browser = WebChatBrowserTest.chromium();
        assumeTrue(browser.isPresent(), "no chromium on this machine (./clawfleet test installs Debian's chromium with apt)");
        chromium = browser.get();
        fixture = new TestCluster(0, 2, harness -> harness.env("CLAWFLEET_LLM_MAX_RETRIES", "1")
                .env("CLAWFLEET_LLM_RETRY_BACKOFF_MS", "10").env("CLAWFLEET_CONSOLE_LIVE_MS", "500"),
                "gateway-1:gateway,worker", "worker-2:worker");
        cluster = fixture.harness;
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void anOperatorWatchesTheFleetAndATenantAdminReplaysADeadLetter() throws Exception {
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        Await.until("both workers to own partitions", Duration.ofSeconds(90), () -> cluster.partitionsByOwner(gateway).size() == 2);
        ApiChat tenant = new ApiChat(gateway.url(), ClusterHarness.API_KEY);
        ApiChat operator = new ApiChat(gateway.url(), ClusterHarness.OPERATOR_KEY);
        String chatOk = "console-chat-" + UUID.randomUUID().toString().substring(0, 8);
        assertThat(tenant.ask(chatOk, "hello console")).isEqualTo("echo: hello console");
        assertThat(operator.call("POST", "/admin/v1/tenants", new JsonObject().put("id", "acme").put("name", "Acme Ltd"))
                .statusCode()).isEqualTo(201);

        // a message whose turn fails while the model is down becomes a dead letter
        String chatDead = "console-dead-" + UUID.randomUUID().toString().substring(0, 8);
        String deadText = "please retry me";
        fixture.model.outage(503);
        try {
            tenant.call("POST", "/api/v1/messages", new JsonObject().put("chatId", chatDead).put("senderId", "u")
                    .put("messageId", UUID.randomUUID().toString()).put("text", deadText));
            Await.until("a dead letter", Duration.ofSeconds(60), () -> {
                try {
                    JsonArray letters = new JsonObject(tenant.call("GET", "/api/v1/dead-letters", null).body())
                            .getJsonArray("deadLetters");
                    return letters.stream().map(JsonObject.class::cast).anyMatch(d -> chatDead.equals(d.getString("chatId")));
                } catch (Exception e) {
                    return false;
                }
            });
        } finally {
            fixture.model.outage(0);
        }

        Files.createDirectories(SCREENSHOTS);
        ProcessBuilder builder = new ProcessBuilder("node", "console-browser.mjs").directory(PEERS.toFile());
        builder.environment().put("CONSOLE_URL", gateway.url() + "/console");
        builder.environment().put("OPERATOR_KEY", ClusterHarness.OPERATOR_KEY);
        builder.environment().put("TENANT_KEY", ClusterHarness.API_KEY);
        builder.environment().put("TENANT_ID", "default");
        builder.environment().put("OTHER_TENANT_ID", "acme");
        builder.environment().put("BOT", "main");
        builder.environment().put("CHAT_OK", chatOk);
        builder.environment().put("CHAT_DEAD", chatDead);
        builder.environment().put("DEAD_TEXT", deadText);
        builder.environment().put("WORKER", "worker-2");
        builder.environment().put("GATEWAY_NODE", "gateway-1");
        builder.environment().put("CHROMIUM", chromium);
        builder.environment().put("SCREENSHOTS", SCREENSHOTS.toAbsolutePath().toString());
        builder.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process browser = builder.start();
        List<String> out = new ArrayList<>();
        boolean stoppedWorker = false;
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(browser.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                System.out.println("console-browser: " + line);
                out.add(line);
                if (line.strip().equals("STOP_WORKER")) {
                    // The browser watches the cluster page while the worker hands its partitions over and leaves.
                    cluster.stop("worker-2");
                    stoppedWorker = true;
                }
            }
        }
        assertThat(browser.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(browser.exitValue()).as(String.join("\n", out)).isZero();
        assertThat(stoppedWorker).as("the browser saw both workers and asked for one to stop").isTrue();
        JsonObject seen = new JsonObject(out.getLast());

        assertThat(seen.getJsonArray("membersBefore").getList()).contains("gateway-1", "worker-2");
        assertThat(seen.getJsonArray("membersAfter").getList()).contains("gateway-1").doesNotContain("worker-2");
        assertThat(seen.getJsonObject("ownersBefore").getInteger("worker-2")).isPositive();
        assertThat(seen.getJsonObject("ownersAfter").fieldNames()).containsExactly("gateway-1");
        assertThat(seen.getValue("movedPartition")).as("a partition seen moving from worker-2 to gateway-1").isNotNull();
        assertThat(seen.getBoolean("rowsKeptInPlace")).as("the cluster page updated its rows in place").isTrue();
        assertThat(seen.getJsonArray("rebalanced").getList()).as("the recent rebalances").contains(seen.getValue("movedPartition"));
        assertThat(seen.getBoolean("suspendResume")).isTrue();
        assertThat(seen.getBoolean("operatorContentHidden")).isTrue();
        assertThat(seen.getJsonArray("transcript").getList()).containsSubsequence("user:hello console",
                "assistant:echo: hello console");
        assertThat(seen.getValue("deadLetterId")).isNotNull();
        assertThat(seen.getString("replayAnswer")).isEqualTo("echo: " + deadText);
        assertThat(seen.getJsonArray("auditTypes").getList()).contains("content_viewed", "http_write");
        assertThat(seen.getBoolean("noReload")).as("the console never reloaded the page").isTrue();
        JsonObject accessibility = seen.getJsonObject("accessibility");
        assertThat(accessibility.fieldNames()).as("pages checked by axe-core")
                .contains("login", "cluster", "tenants", "transcript", "dead-letters", "audit");
        for (String page : accessibility.fieldNames()) {
            assertThat(accessibility.getJsonArray(page).getList()).as("WCAG 2.1 A/AA violations on " + page).isEmpty();
            assertThat(seen.getJsonObject("accessibilityPassed").getInteger(page)).as("axe rules passed on " + page).isGreaterThan(5);
        }
        assertThat(seen.getJsonArray("consoleErrors").getList()).isEmpty();
        for (String shot : List.of("console-login.png", "console-cluster.png", "console-rebalanced.png", "console-tenants.png", "console-transcript.png",
                "console-dead-letters.png", "console-audit.png")) {
            assertThat(SCREENSHOTS.resolve(shot)).as(shot).isNotEmptyFile();
        }
        // and the server agrees: the replayed letter is marked, the operator's changes are in the tenant's trail
        JsonArray letters = new JsonObject(tenant.call("GET", "/api/v1/dead-letters", null).body()).getJsonArray("deadLetters");
        assertThat(letters.stream().map(JsonObject.class::cast).filter(d -> chatDead.equals(d.getString("chatId")))
                .findFirst().orElseThrow().getString("replayedAt")).isNotNull();
    }
}
