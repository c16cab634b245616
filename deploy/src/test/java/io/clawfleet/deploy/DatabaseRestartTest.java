package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.EmbeddedDatabase;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** PostgreSQL restarted under load: the outage is reported and refused clearly, then everything resumes. */
class DatabaseRestartTest {

    private static final String KEY = "db-restart-key-0123456789";

    /** The data folder's parent: the server's password and log files go beside the data folder, so inside this one. */
    @TempDir
    Path folder;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    @Timeout(value = 4, unit = TimeUnit.MINUTES)
    void nothingAcknowledgedIsLostAndIntakeResumesByItself() throws Exception {
        int port = FreePorts.take();
        Path data = folder.resolve("postgres");
        EmbeddedDatabase postgres = EmbeddedDatabase.start(data, port);
        Vertx vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 10);
        result(model.start("127.0.0.1", 0));
        ClawfleetConfig config = TestNodes.config("gateway,worker", Map.of("apiKey", KEY,
                "llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock",
                "limits.chatMessagesPerMinute", "0"));
        NodeRuntime node = TestNodes.start(config, postgres.url(), Roles.of(config));
        String base = "http://127.0.0.1:" + node.httpPort();
        ChatLoad load = new ChatLoad(() -> base, KEY, "dbr");
        try {
            // given chats sending steadily
            load.start(20, Integer.MAX_VALUE, 200);
            Await.until("the load to be flowing", Duration.ofSeconds(30), () -> load.sent() >= 100);

            // when PostgreSQL stops
            postgres.close();
            // then readiness reports it and intake refuses with 503 + Retry-After, accepting nothing
            Await.until("/readyz to report the database down", Duration.ofSeconds(10), () -> readyz(base).contains("\"database\":\"down\""));
            HttpResponse<String> refused = post(base, "dbr-probe", "during outage");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("retry-after")).isPresent();
            // Not a wait for anything: the outage lasts a while, with the chats still sending into it.
            Thread.sleep(5_000);

            // when it comes back on the same port and data
            postgres = EmbeddedDatabase.start(data, port);
            // then the node is ready again by itself and intake resumes
            Await.until("/readyz to be ready again", Duration.ofSeconds(30), () -> readyz(base).contains("\"status\":\"ready\""));
            int before = load.sent();
            Await.until("messages to be accepted after the restart", Duration.ofSeconds(30), () -> load.sent() > before + 120);
            load.stopSending();
            load.awaitSent(Duration.ofMinutes(1));

            // and every acknowledged message is answered exactly once, in order
            ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(1));
            assertThat(verdict.messages()).isGreaterThan(200);
            assertThat(verdict.lost()).as("lost").isEmpty();
            assertThat(verdict.duplicated()).as("duplicated").isEmpty();
            assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
        } finally {
            load.close();
            result(node.stop(), Duration.ofSeconds(60));
            postgres.close();
            result(vertx.close());
        }
    }

    private String readyz(String base) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(base + "/readyz")).timeout(Duration.ofSeconds(3)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return "";
        }
    }

    private HttpResponse<String> post(String base, String chat, String text) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/messages")).header("authorization", "Bearer " + KEY)
                .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("chatId", chat).put("senderId", "u")
                        .put("messageId", "p").put("text", text).encode())).build(), HttpResponse.BodyHandlers.ofString());
    }
}
