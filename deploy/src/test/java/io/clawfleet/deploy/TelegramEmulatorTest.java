package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Clawfleet as a Telegram bot against a real protocol peer: telegram-test-api, an emulated Bot API
 * server (installed by './clawfleet test' with npm; skipped where Node.js is not available).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TelegramEmulatorTest {

    private static final Path PEERS = Path.of("src", "test", "node");
    private static final String TOKEN = "424242:emulated-token-ABCDEFGHIJ";
    private static final String API_KEY = "telegram-emulator-key-01234";

    private Process emulator;
    private String emulatorUrl;
    private int gatewayPort;
    private Vertx vertx;
    private NodeRuntime node;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        assumeTrue(Files.isDirectory(PEERS.resolve("node_modules/telegram-test-api")),
                "telegram-test-api is not installed (./clawfleet test installs it with npm)");
        int port = FreePorts.take();
        ProcessBuilder builder = new ProcessBuilder("node", "telegram-emulator.js").directory(PEERS.toFile()).redirectErrorStream(true);
        builder.environment().put("PORT", Integer.toString(port));
        emulator = builder.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(emulator.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertThat(line).as("emulator start").isEqualTo("ready " + port);
        emulatorUrl = "http://127.0.0.1:" + port;

        vertx = Vertx.vertx();
        gatewayPort = FreePorts.take();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        ClawfleetConfig config = TestNodes.config("gateway,worker", Map.of("apiKey", API_KEY,
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock",
                "telegram.botToken", TOKEN, "telegram.apiUrl", emulatorUrl,
                "http.port", Integer.toString(gatewayPort), "http.publicUrl", "http://127.0.0.1:" + gatewayPort));
        node = TestNodes.start(config, TestDatabases.freshEmpty(), Roles.of(config));
    }

    @AfterAll
    void stop() throws Exception {
        if (node != null) {
            result(node.stop(), Duration.ofSeconds(60));
        }
        if (vertx != null) {
            result(vertx.close());
        }
        if (emulator != null) {
            emulator.destroy();
            emulator.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private JsonObject post(String path, JsonObject body) throws Exception {
        return new JsonObject(http.send(HttpRequest.newBuilder(URI.create(emulatorUrl + path)).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    /** A Telegram user writes to the bot, through the emulator's client API. */
    private void userSays(long userId, String text) throws Exception {
        JsonObject user = new JsonObject().put("id", userId).put("first_name", "User" + userId).put("username", "user" + userId)
                .put("is_bot", false);
        post("/sendMessage", new JsonObject().put("botToken", TOKEN).put("from", user)
                .put("chat", new JsonObject().put("id", userId).put("type", "private").put("first_name", "User" + userId))
                .put("date", System.currentTimeMillis() / 1000).put("text", text));
    }

    @Test
    void usersTalkToTheBotAndGetTheirAnswersInOrder() throws Exception {
        // given two Telegram users writing to the bot
        for (int i = 0; i < 4; i++) {
            userSays(7001, "alpha " + i);
            userSays(7002, "beta " + i);
        }
        // then each gets the model's answer to each message, in order, in their own chat
        assertThat(botMessagesTo(7001, 4)).containsExactly("echo: alpha 0", "echo: alpha 1", "echo: alpha 2", "echo: alpha 3");
        assertThat(botMessagesTo(7002, 4)).containsExactly("echo: beta 0", "echo: beta 1", "echo: beta 2", "echo: beta 3");
    }

    /** The gateway's API, as the default tenant. */
    private HttpResponse<String> api(String method, String path, JsonObject body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gatewayPort + path))
                .header("authorization", "Bearer " + API_KEY).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30)).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theBotSwitchesToWebhookModeAndBackWithoutLosingAMessage() throws Exception {
        long[] channel = {0};
        Await.until("the default bot registered", Duration.ofSeconds(20), () -> {
            try {
                JsonArray channels = new JsonObject(api("GET", "/api/v1/channels", null).body()).getJsonArray("channels");
                channel[0] = channels.isEmpty() ? 0 : channels.getJsonObject(0).getLong("id");
                return channel[0] != 0;
            } catch (Exception e) {
                return false;
            }
        });
        String path = "/api/v1/channels/" + channel[0];
        try {
            // when the bot is switched to webhook mode / then the emulator posts each user's message to the gateway
            HttpResponse<String> hooked = api("PATCH", path, new JsonObject().put("mode", "webhook"));
            assertThat(hooked.statusCode()).as(hooked.body()).isEqualTo(200);
            for (int i = 0; i < 3; i++) {
                userSays(7003, "hooked " + i);
            }
            assertThat(botMessagesTo(7003, 3)).containsExactly("echo: hooked 0", "echo: hooked 1", "echo: hooked 2");
            // and back to polling: the gateway asks for updates again
            HttpResponse<String> polled = api("PATCH", path, new JsonObject().put("mode", "polling"));
            assertThat(polled.statusCode()).as(polled.body()).isEqualTo(200);
            userSays(7003, "polled");
            assertThat(botMessagesTo(7003, 1)).containsExactly("echo: polled");
        } finally {
            api("PATCH", path, new JsonObject().put("mode", "polling"));
        }
    }

    private List<String> botMessagesTo(long chatId, int count) {
        List<String> texts = new ArrayList<>();
        Await.until(count + " bot messages to " + chatId, Duration.ofSeconds(30), () -> {
            try {
                JsonArray updates = post("/getUpdates", new JsonObject().put("token", TOKEN).put("chatId", chatId)).getJsonArray("result");
                updates.forEach(update -> texts.add(((JsonObject) update).getJsonObject("message").getString("text")));
                return texts.size() >= count;
            } catch (Exception e) {
                return false;
            }
        });
        return texts;
    }
}
