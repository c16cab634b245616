package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 20, side effects on takeover, in separate JVMs: a worker dies (kill -9) after a tool that changes things had
 * its effect and before the turn committed. The tool is a counter on a remote MCP server in this JVM ({@code count},
 * no read-only hint); the server counts the call, then holds its answer while every worker is killed. The worker
 * that takes the turn over finds the call started and not finished in the execution ledger and does not run it
 * again: the model is told it may have taken effect, the chat gets one reply, and the counter says 1. The next call
 * counts 2.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class SideEffectsIT {

    private static final String[] WORKERS = {"worker-1", "worker-2"};

    private TestCluster fixture;
    private ClusterHarness cluster;
    private HttpServer counter;
    private final AtomicInteger count = new AtomicInteger();
    private final AtomicInteger calls = new AtomicInteger();
    /** While set, the counter counts a call and never answers it (its worker is about to die). */
    private final AtomicBoolean holding = new AtomicBoolean();

    @BeforeAll
    void start() throws Exception {
        fixture = new TestCluster(20, 3, harness -> harness.env("CLAWFLEET_AGENT_AUTONOMY", "full")
                .env("CLAWFLEET_EGRESS_ALLOWED_HOSTS", "127.0.0.1"), "gateway-1:gateway", "worker-1:worker", "worker-2:worker");
        cluster = fixture.harness;
        counter = result(fixture.vertx.createHttpServer()
                .requestHandler(request -> request.body().onSuccess(body -> answer(request,
                        body.length() == 0 ? null : body.toJsonObject())))
                .listen(0, "127.0.0.1"));
    }

    @AfterAll
    void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void aToolThatRanBeforeItsWorkerDiedIsNotRunAgainByTheNextOwner() throws Exception {
        ApiChat api = new ApiChat(cluster.node("gateway-1").url(), ClusterHarness.API_KEY);
        HttpResponse<String> put = api.call("PUT", "/api/v1/bots/main/mcp-servers", new JsonObject().put("servers",
                new JsonObject().put("counter", new JsonObject().put("url", "http://127.0.0.1:" + counter.actualPort() + "/mcp")
                        .put("access", "everyone"))));
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        String chat = "side-effects-" + UUID.randomUUID();
        assertThat(api.ask(chat, "call:mcp__counter__count {}")).as("the tool works").contains("count 1");

        // given a call of the counter that had its effect, and whose answer is held
        holding.set(true);
        CompletableFuture<String> reply = CompletableFuture.supplyAsync(() -> {
            try {
                return api.ask(chat, "call:mcp__counter__count {}");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Await.until("the counter to count the second call", Duration.ofSeconds(60), () -> count.get() == 2);
        // when its worker dies before the turn commits (every worker: whichever runs the turn), and the workers come back
        holding.set(false);
        for (String worker : WORKERS) {
            cluster.kill(worker);
        }
        for (String worker : WORKERS) {
            cluster.restart(worker);
        }

        // then the next owner does not run the call again, tells the model why, and the chat gets one reply
        String text = reply.get(3, TimeUnit.MINUTES);
        assertThat(text).contains("tool mcp__counter__count said:", "may or may not have taken effect", "not run again");
        assertThat(count).as("the counter after the takeover").hasValue(2);
        assertThat(calls).as("calls the counter received").hasValue(2);
        JsonArray replies = new JsonObject(api.call("GET", "/api/v1/chats/" + chat + "/replies", null).body())
                .getJsonArray("replies");
        assertThat(replies).as("replies in the chat").hasSize(2);
        // and the next call counts on from there
        assertThat(api.ask(chat, "call:mcp__counter__count {}")).contains("count 3");
        assertThat(count).hasValue(3);
    }

    /** A scripted Streamable HTTP MCP server with one tool that changes state: {@code count}. */
    private void answer(HttpServerRequest request, JsonObject body) {
        if (request.method() == HttpMethod.GET) {
            request.response().setStatusCode(405).end();
            return;
        }
        if (request.method() == HttpMethod.DELETE || body == null || body.getString("method") == null
                || body.getValue("id") == null) {
            request.response().setStatusCode(request.method() == HttpMethod.DELETE ? 200 : 202).end();
            return;
        }
        JsonObject result = switch (body.getString("method")) {
            case "initialize" -> new JsonObject()
                    .put("protocolVersion", body.getJsonObject("params").getString("protocolVersion"))
                    .put("capabilities", new JsonObject().put("tools", new JsonObject()))
                    .put("serverInfo", new JsonObject().put("name", "counter").put("version", "1"));
            case "tools/list" -> new JsonObject().put("tools", new JsonArray().add(new JsonObject().put("name", "count")
                    .put("description", "Adds one and says the count.")
                    .put("inputSchema", new JsonObject().put("type", "object").put("properties", new JsonObject()))));
            case "tools/call" -> {
                calls.incrementAndGet();
                int now = count.incrementAndGet();
                if (holding.get()) {
                    yield null;
                }
                yield new JsonObject().put("content", new JsonArray().add(new JsonObject().put("type", "text")
                        .put("text", "count " + now)));
            }
            default -> new JsonObject();
        };
        if (result == null) {
            return; // counted, never answered: its worker dies first
        }
        request.response().putHeader("content-type", "application/json").putHeader("mcp-session-id", "s-1")
                .end(new JsonObject().put("jsonrpc", "2.0").put("id", body.getValue("id")).put("result", result).encode());
    }
}
