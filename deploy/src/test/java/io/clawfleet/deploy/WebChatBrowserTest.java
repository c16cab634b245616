package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The web chat widget in a real headless browser (issue 15): Debian's chromium, driven by playwright-core, opens a
 * page of the tenant's site (another origin than the gateway's) carrying the widget's one script tag; the visitor
 * (anonymous: the account allows it) opens the chat, sends a message, sees the reply streamed in by a real worker and
 * then committed; after a reload the page shows the history. {@code ./clawfleet test} installs chromium (apt) and
 * playwright-core (npm); without them this test skips and says why.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WebChatBrowserTest {

    private static final Path PEERS = Path.of("src", "test", "node");
    private static final String KEY = "webchat-browser-key-0123456789";

    private Vertx vertx;
    private NodeRuntime node;
    private HttpServer site;
    private String chromium;

    @BeforeAll
    void start() {
        assumeTrue(Files.isDirectory(PEERS.resolve("node_modules/playwright-core")),
                "playwright-core is not installed (./clawfleet test installs it with npm)");
        Optional<String> browser = chromium();
        assumeTrue(browser.isPresent(), "no chromium on this machine (./clawfleet test installs Debian's chromium with apt)");
        chromium = browser.get();
        vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        ClawfleetConfig config = TestNodes.config("gateway,worker", Map.of("apiKey", KEY,
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock"));
        node = TestNodes.start(config, TestDatabases.freshEmpty(), Roles.of(config));
    }

    @AfterAll
    void stop() {
        if (site != null) {
            result(site.close());
        }
        if (node != null) {
            result(node.stop(), Duration.ofSeconds(60));
        }
        if (vertx != null) {
            result(vertx.close());
        }
    }

    /** {@code CLAWFLEET_CHROMIUM}, else chromium on the PATH or where Debian and Ubuntu put it. */
    static Optional<String> chromium() {
        String given = System.getenv("CLAWFLEET_CHROMIUM");
        if (given != null && !given.isBlank()) {
            return Optional.of(given);
        }
        Stream<Path> onPath = Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .flatMap(dir -> Stream.of(Path.of(dir, "chromium"), Path.of(dir, "chromium-browser")));
        return Stream.concat(onPath, Stream.of(Path.of("/usr/bin/chromium"), Path.of("/usr/lib/chromium/chromium")))
                .filter(Files::isExecutable).map(Path::toString).findFirst();
    }

    @Test
    void aVisitorSendsAMessageSeesTheReplyStreamedAndAfterAReloadTheHistory() throws Exception {
        String gateway = "http://127.0.0.1:" + node.httpPort();
        // The tenant's site: another origin, whose page carries the script tag the API hands out.
        site = vertx.createHttpServer();
        String[] page = {""};
        site.requestHandler(request -> request.response().putHeader("content-type", "text/html; charset=utf-8").end(page[0]));
        result(site.listen(0, "127.0.0.1"));
        String origin = "http://127.0.0.1:" + site.actualPort();

        HttpResponse<String> created = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(gateway
                        + "/api/v1/channels/webchat")).header("authorization", "Bearer " + KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("allowedOrigins", new JsonArray().add(origin))
                        .put("anonymousUsers", true).encode())).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String scriptTag = new JsonObject(created.body()).getString("widgetScript");
        // No public URL is set here: the tag's path is relative, and a site puts the gateway's address in front.
        page[0] = "<!doctype html><html><head><title>Shop</title></head><body><h1>A shop</h1>"
                + scriptTag.replace("src=\"/", "src=\"" + gateway + "/") + "</body></html>";

        ProcessBuilder builder = new ProcessBuilder("node", "webchat-browser.mjs").directory(PEERS.toFile());
        builder.environment().put("PAGE_URL", origin + "/");
        builder.environment().put("CHROMIUM", chromium);
        builder.environment().put("QUESTION", "where is my order 42?");
        builder.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process client = builder.start();
        String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(client.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(client.exitValue()).as(out).isZero();
        JsonObject seen = new JsonObject(List.of(out.split("\n")).getLast());
        System.out.println("WebChatBrowserTest: the browser saw " + seen.encode());

        assertThat(seen.getString("reply")).isEqualTo("echo: where is my order 42?");
        assertThat(seen.getInteger("deltas")).as("pieces of the reply streamed in before it was committed").isPositive();
        assertThat(seen.getBoolean("streamedThenCommitted")).isTrue();
        assertThat(seen.getInteger("userAcked")).isEqualTo(1);
        assertThat(seen.getJsonArray("history").getList())
                .containsExactly("user:where is my order 42?", "assistant:echo: where is my order 42?");
        assertThat(seen.getJsonArray("consoleErrors").getList()).isEmpty();
    }
}
