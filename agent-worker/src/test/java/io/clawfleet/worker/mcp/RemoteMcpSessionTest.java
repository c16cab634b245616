package io.clawfleet.worker.mcp;

import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.testkit.McpPeers;
import io.clawfleet.worker.mcp.McpCallException.Kind;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static io.clawfleet.shared.testing.Await.until;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Streamable HTTP client against the real reference server ({@code @modelcontextprotocol/server-everything}, run
 * with node) and, for what it never does (server requests in a response stream, error statuses, expiry by 404, the GET
 * stream), against a hand-scripted Vert.x peer.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class RemoteMcpSessionTest {

    private static final String SECRET = "Bearer s3cret-value";
    private static final EgressGuard.Resolver RESOLVER = host -> {
        try {
            return Future.succeededFuture(List.of(InetAddress.getByName(host)));
        } catch (UnknownHostException e) {
            return Future.failedFuture(e);
        }
    };
    private static final EgressGuard LOOPBACK = new EgressGuard(List.of("127.0.0.1"), RESOLVER);

    private Vertx vertx;
    private HttpClient client;
    private final List<Process> processes = new CopyOnWriteArrayList<>();
    private URI everything;
    private final List<Map.Entry<String, JsonObject>> notifications = new CopyOnWriteArrayList<>();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true), new PoolOptions().setHttp1MaxSize(32));
        int port = freePort();
        startEverything(port);
        everything = URI.create("http://127.0.0.1:" + port + "/mcp");
    }

    @AfterAll
    void stop() {
        processes.forEach(Process::destroyForcibly);
        result(vertx.close());
    }

    private RemoteMcpSession session(URI url, EgressGuard guard, Map<String, String> headers, long timeoutMs, int maxBytes) {
        return new RemoteMcpSession(vertx, client, guard, url, headers, timeoutMs, maxBytes,
                (method, params) -> notifications.add(Map.entry(method, params)));
    }

    private RemoteMcpSession session(URI url) {
        return session(url, LOOPBACK, Map.of("Authorization", SECRET), 5_000, 1 << 20);
    }

    private static JsonObject text(JsonObject callResult) {
        return callResult.getJsonArray("content").getJsonObject(0);
    }

    // --- the reference server ------------------------------------------------------------------------------------

    @Test
    void listsTheReferenceServersToolsAfterInitializing() {
        // given a fresh session / when its tools are listed
        RemoteMcpSession session = session(everything);
        List<JsonObject> tools = result(session.listAll("tools/list", "tools", 10));
        // then the server's tools are there, and initialize told its capabilities
        assertThat(tools).extracting(tool -> tool.getString("name")).contains("echo", "get-sum");
        assertThat(result(session.capabilities()).containsKey("tools")).isTrue();
        result(session.close());
    }

    @Test
    void callsToolsAndGetsTheirResults() {
        RemoteMcpSession session = session(everything);
        // when echo and get-sum are called
        JsonObject echoed = result(session.request("tools/call", new JsonObject().put("name", "echo")
                .put("arguments", new JsonObject().put("message", "hello there"))));
        JsonObject sum = result(session.request("tools/call", new JsonObject().put("name", "get-sum")
                .put("arguments", new JsonObject().put("a", 2).put("b", 40))));
        // then their texts are the server's answers
        assertThat(text(echoed).getString("text")).isEqualTo("Echo: hello there");
        assertThat(text(sum).getString("text")).contains("is 42");
        result(session.close());
    }

    @Test
    void anUnknownToolIsAToolErrorResultButAnUnknownMethodAJsonRpcError() {
        RemoteMcpSession session = session(everything);
        // when a tool that does not exist is called: the reference server answers with a result flagged isError
        JsonObject missing = result(session.request("tools/call", new JsonObject().put("name", "no-such-tool")
                .put("arguments", new JsonObject())));
        assertThat(missing.getBoolean("isError")).isTrue();
        assertThat(text(missing).getString("text")).contains("no-such-tool").contains("not found");
        // when a method that does not exist is asked: a JSON-RPC error, with the server's code and message
        Throwable error = failure(session.request("no/such-method", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.ERROR);
            assertThat(e.code()).isEqualTo(-32601);
            assertThat(e.getMessage()).isEqualTo("Method not found");
            assertThat(e.serverFault()).isFalse();
        });
        result(session.close());
    }

    @Test
    void listsAndReadsResources() {
        RemoteMcpSession session = session(everything);
        // given the listed resources
        List<JsonObject> resources = result(session.listAll("resources/list", "resources", 10));
        JsonObject architecture = resources.stream().filter(r -> r.getString("name").equals("architecture.md")).findFirst().orElseThrow();
        // when one is read / then its text comes back under its URI
        JsonObject read = result(session.request("resources/read", new JsonObject().put("uri", architecture.getString("uri"))));
        JsonObject content = read.getJsonArray("contents").getJsonObject(0);
        assertThat(content.getString("uri")).isEqualTo(architecture.getString("uri"));
        assertThat(content.getString("text")).isNotBlank();
        result(session.close());
    }

    @Test
    void listsAndGetsPrompts() {
        RemoteMcpSession session = session(everything);
        List<JsonObject> prompts = result(session.listAll("prompts/list", "prompts", 10));
        assertThat(prompts).extracting(prompt -> prompt.getString("name")).contains("simple-prompt", "args-prompt");
        JsonObject prompt = result(session.request("prompts/get", new JsonObject().put("name", "simple-prompt")));
        assertThat(prompt.getJsonArray("messages").getJsonObject(0).getJsonObject("content").getString("text"))
                .isEqualTo("This is a simple prompt without arguments.");
        result(session.close());
    }

    @Test
    void anAnswerOverTheSizeLimitFailsTheCall() {
        // given a limit far below the reference server's initialize answer (it carries its instructions)
        RemoteMcpSession session = session(everything, LOOPBACK, Map.of(), 5_000, 256);
        Throwable error = failure(session.request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.TOO_LARGE);
            assertThat(e.serverFault()).isFalse();
        });
    }

    @Test
    void aGuardThatAllowsNothingRefusesBeforeConnecting() {
        RemoteMcpSession session = session(everything, new EgressGuard(List.of(), RESOLVER), Map.of(), 5_000, 1 << 20);
        Throwable error = failure(session.request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.REFUSED);
            assertThat(e.serverFault()).isFalse();
        });
    }

    @Test
    void aRestartedServerGetsANewSessionTransparently() throws Exception {
        // given a session with a server of its own
        int port = freePort();
        Process first = startEverything(port);
        RemoteMcpSession session = session(URI.create("http://127.0.0.1:" + port + "/mcp"));
        assertThat(result(session.listAll("tools/list", "tools", 10))).isNotEmpty();
        // when the server dies and another starts on its port (which knows nothing of the session)
        first.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        startEverything(port);
        // then the next call initializes again and succeeds
        JsonObject echoed = result(session.request("tools/call", new JsonObject().put("name", "echo")
                .put("arguments", new JsonObject().put("message", "again"))));
        assertThat(text(echoed).getString("text")).isEqualTo("Echo: again");
    }

    @Test
    void credentialsNeverShowInTheMessageOfAnUnreachableServer() throws IOException {
        // given a port where nothing listens
        RemoteMcpSession session = session(URI.create("http://127.0.0.1:" + freePort() + "/mcp?key=abc"));
        Throwable error = failure(session.request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.UNREACHABLE);
            assertThat(e.serverFault()).isTrue();
            assertThat(e.getMessage()).doesNotContain("s3cret-value").doesNotContain("key=abc");
        });
    }

    // --- a scripted peer -------------------------------------------------------------------------------------------

    @Test
    void aStreamedAnswerDeliversNotificationsAndAnswersPingsBeforeItsResponse() {
        // given a server that streams a notification and a ping, and answers only once the ping is answered
        Peer peer = new Peer();
        Promise<JsonObject> pingAnswer = Promise.promise();
        peer.onClientMessage = pingAnswer::tryComplete;
        peer.answers.put("tools/call", (request, body) -> {
            request.response().setChunked(true).putHeader("content-type", "text/event-stream")
                    .write("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{}}\n\n")
                    .compose(v -> request.response().write("data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n"));
            pingAnswer.future().onSuccess(answer -> request.response().end("id: 9\ndata: " + response(body,
                    new JsonObject().put("content", new JsonArray().add(new JsonObject().put("type", "text").put("text", "done")))) + "\n\n"));
        });
        RemoteMcpSession session = session(peer.url());
        // when a tool is called
        JsonObject called = result(session.request("tools/call", new JsonObject().put("name", "x")));
        // then the response came, the notification was handed on, the ping was answered with an empty result
        assertThat(text(called).getString("text")).isEqualTo("done");
        assertThat(notifications).contains(Map.entry("notifications/tools/list_changed", new JsonObject()));
        assertThat(result(pingAnswer.future())).isEqualTo(new JsonObject().put("jsonrpc", "2.0").put("id", "srv-1")
                .put("result", new JsonObject()));
        // and the call carried the session, the negotiated version, both content types and the caller's header
        MultiMap sent = peer.seen("tools/call").headers();
        assertThat(sent.get("mcp-session-id")).isEqualTo("s-1");
        assertThat(sent.get("mcp-protocol-version")).isEqualTo("2025-11-25");
        assertThat(sent.get("accept")).isEqualTo("application/json, text/event-stream");
        assertThat(sent.get("content-type")).isEqualTo("application/json");
        assertThat(sent.get("authorization")).isEqualTo(SECRET);
        assertThat(peer.seen("notifications/initialized").headers().get("mcp-session-id")).isEqualTo("s-1");
    }

    @Test
    void refusedCredentialsAreAProtocolErrorWithoutTheirValue() {
        Peer peer = new Peer();
        peer.answers.put("initialize", (request, body) -> request.response().setStatusCode(401).end("no: " + request.getHeader("authorization")));
        Throwable error = failure(session(peer.url()).request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.PROTOCOL);
            assertThat(e.code()).isEqualTo(401);
            assertThat(e.getMessage()).contains("refused the credentials").doesNotContain("s3cret-value");
        });
    }

    @Test
    void anotherClientErrorQuotesTheBodyWithTheCredentialsCutOut() {
        // given a server whose error echoes the credentials it was sent
        Peer peer = new Peer();
        peer.answers.put("tools/list", (request, body) -> request.response().setStatusCode(422)
                .end("you sent " + request.getHeader("authorization") + " and that token s3cret-value is wrong"));
        Throwable error = failure(session(peer.url()).request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.PROTOCOL);
            assertThat(e.code()).isEqualTo(422);
            assertThat(e.getMessage()).contains("422").contains("you sent [redacted]").contains("token [redacted] is wrong")
                    .doesNotContain("s3cret-value");
        });
    }

    @Test
    void aServerErrorIsUnreachableAndSaysWhenToRetry() {
        Peer peer = new Peer();
        peer.answers.put("tools/list", (request, body) -> request.response().setStatusCode(500).putHeader("retry-after", "7").end("oops"));
        Throwable error = failure(session(peer.url()).request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.UNREACHABLE);
            assertThat(e.code()).isEqualTo(500);
            assertThat(e.getMessage()).contains("retry after 7 s");
            assertThat(e.serverFault()).isTrue();
        });
    }

    @Test
    void aSessionTheServerNoLongerKnowsIsReplacedAndTheRequestRetriedOnce() {
        // given a server that forgets the first session at the first call (404, as the spec says)
        Peer peer = new Peer();
        AtomicInteger calls = new AtomicInteger();
        peer.answers.put("tools/list", (request, body) -> {
            if (calls.incrementAndGet() == 1) {
                request.response().setStatusCode(404).end();
            } else {
                json(request, response(body, new JsonObject().put("tools", new JsonArray())), null);
            }
        });
        RemoteMcpSession session = session(peer.url());
        // when a call is made / then it succeeds under a second session
        assertThat(result(session.listAll("tools/list", "tools", 3))).isEmpty();
        assertThat(peer.sessions.get()).isEqualTo(2);
        assertThat(peer.all("tools/list")).extracting(seen -> seen.headers().get("mcp-session-id")).containsExactly("s-1", "s-2");
    }

    @Test
    void aSessionLostAgainAfterRenewalFailsTheCall() {
        Peer peer = new Peer();
        peer.answers.put("tools/list", (request, body) -> request.response().setStatusCode(404).end());
        Throwable error = failure(session(peer.url()).request("tools/list", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> assertThat(e.kind()).isEqualTo(Kind.PROTOCOL));
        assertThat(peer.all("tools/list")).hasSize(2);
    }

    @Test
    void concurrentFirstCallsShareOneInitialize() {
        Peer peer = new Peer();
        peer.answers.put("tools/list", (request, body) -> json(request, response(body, new JsonObject().put("tools", new JsonArray())), null));
        RemoteMcpSession session = session(peer.url());
        List<Future<JsonObject>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            calls.add(session.request("tools/list", new JsonObject()));
        }
        result(Future.all(calls));
        assertThat(peer.all("initialize")).hasSize(1);
        assertThat(peer.all("tools/list")).extracting(seen -> seen.body().getLong("id")).doesNotHaveDuplicates();
    }

    @Test
    void aServerThatDoesNotAnswerInTimeFailsTheCall() {
        Peer peer = new Peer();
        peer.answers.put("tools/call", (request, body) -> request.response().setChunked(true)
                .putHeader("content-type", "text/event-stream").write(": thinking\n\n"));
        RemoteMcpSession session = session(peer.url(), LOOPBACK, Map.of(), 300, 1 << 20);
        Throwable error = failure(session.request("tools/call", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.TIMEOUT);
            assertThat(e.serverFault()).isTrue();
        });
    }

    @Test
    void aStreamThatEndsWithoutTheResponseIsAProtocolError() {
        Peer peer = new Peer();
        peer.answers.put("tools/call", (request, body) -> request.response().putHeader("content-type", "text/event-stream")
                .end("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"}}\n\n"));
        Throwable error = failure(session(peer.url()).request("tools/call", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.PROTOCOL);
            assertThat(e.getMessage()).contains("without the response");
        });
    }

    @Test
    void aRequestMerelyAcceptedIsAProtocolError() {
        Peer peer = new Peer();
        peer.answers.put("tools/call", (request, body) -> request.response().setStatusCode(202).end());
        Throwable error = failure(session(peer.url()).request("tools/call", new JsonObject()));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> assertThat(e.kind()).isEqualTo(Kind.PROTOCOL));
    }

    @Test
    void aServerThatWantsAnUnknownVersionIsRefusedSayingWhich() {
        Peer peer = new Peer();
        peer.answers.put("initialize", (request, body) -> json(request, response(body,
                new JsonObject().put("protocolVersion", "2024-11-05").put("capabilities", new JsonObject())), "s-x"));
        Throwable error = failure(session(peer.url()).capabilities());
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.PROTOCOL);
            assertThat(e.getMessage()).contains("2024-11-05");
        });
    }

    @Test
    void theNotificationStreamResumesAfterTheLastEventIdAndStopsAt405() {
        // given a server whose first GET stream sends one notification (id e-1) and ends, and offers no more after
        Peer peer = new Peer();
        AtomicInteger gets = new AtomicInteger();
        peer.onGet = request -> {
            if (gets.incrementAndGet() == 1) {
                request.response().putHeader("content-type", "text/event-stream")
                        .end("id: e-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n");
            } else {
                request.response().setStatusCode(405).end();
            }
        };
        RemoteMcpSession session = session(peer.url());
        // when it listens
        session.listen();
        session.listen();
        // then the notification arrives and the reconnection (after a second) names the last event
        until("the notification stream's notification", Duration.ofSeconds(5),
                () -> notifications.contains(Map.entry("notifications/resources/list_changed", new JsonObject())));
        until("the reconnection", Duration.ofSeconds(5), () -> peer.gets().size() == 2);
        assertThat(peer.gets().get(1).get("last-event-id")).isEqualTo("e-1");
        assertThat(peer.gets().get(0).get("mcp-session-id")).isEqualTo("s-1");
        assertThat(peer.gets().get(0).get("accept")).isEqualTo("text/event-stream");
    }

    @Test
    void closeEndsTheSessionOnTheServer() {
        Peer peer = new Peer();
        peer.answers.put("ping", (request, body) -> json(request, response(body, new JsonObject()), null));
        RemoteMcpSession session = session(peer.url());
        result(session.request("ping", null));
        result(session.close());
        result(session.close());
        assertThat(peer.deletes).containsExactly("s-1");
        Throwable error = failure(session.request("ping", null));
        assertThat(error).isInstanceOfSatisfying(McpCallException.class, e -> assertThat(e.kind()).isEqualTo(Kind.REFUSED));
    }

    // --- helpers ---------------------------------------------------------------------------------------------------

    private static JsonObject response(JsonObject request, JsonObject result) {
        return new JsonObject().put("jsonrpc", "2.0").put("id", request.getValue("id")).put("result", result);
    }

    private static void json(HttpServerRequest request, JsonObject body, String session) {
        if (session != null) {
            request.response().putHeader("mcp-session-id", session);
        }
        request.response().putHeader("content-type", "application/json").end(body.encode());
    }

    /** One request the peer saw: its method (HTTP), headers and JSON body (null when empty). */
    private record Seen(HttpMethod method, MultiMap headers, JsonObject body) {
    }

    /**
     * A hand-scripted MCP server on loopback: initialize gives sessions s-1, s-2...; the initialized notification and
     * the client's answers get 202; GET gets 405 unless scripted; other methods as {@link #answers} says.
     */
    private final class Peer {
        final Map<String, BiConsumer<HttpServerRequest, JsonObject>> answers = new ConcurrentHashMap<>();
        final List<Seen> seen = new CopyOnWriteArrayList<>();
        final List<String> deletes = new CopyOnWriteArrayList<>();
        final AtomicInteger sessions = new AtomicInteger();
        volatile Handler<JsonObject> onClientMessage = message -> {
        };
        volatile Handler<HttpServerRequest> onGet = request -> request.response().setStatusCode(405).end();
        private final HttpServer server;

        Peer() {
            answers.put("initialize", (request, body) -> json(request, response(body, new JsonObject()
                    .put("protocolVersion", body.getJsonObject("params").getString("protocolVersion"))
                    .put("capabilities", new JsonObject().put("tools", new JsonObject()))
                    .put("serverInfo", new JsonObject().put("name", "peer").put("version", "1"))), "s-" + sessions.incrementAndGet()));
            answers.put("notifications/initialized", (request, body) -> request.response().setStatusCode(202).end());
            server = result(vertx.createHttpServer().requestHandler(request -> request.body().onSuccess(buffer -> {
                JsonObject body = buffer.length() == 0 ? null : buffer.toJsonObject();
                seen.add(new Seen(request.method(), MultiMap.caseInsensitiveMultiMap().addAll(request.headers()), body));
                if (request.method() == HttpMethod.GET) {
                    onGet.handle(request);
                } else if (request.method() == HttpMethod.DELETE) {
                    deletes.add(request.getHeader("mcp-session-id"));
                    request.response().end();
                } else if (body.getString("method") == null) {
                    onClientMessage.handle(body);
                    request.response().setStatusCode(202).end();
                } else {
                    answers.getOrDefault(body.getString("method"), (r, b) -> r.response().setStatusCode(400).end("unscripted"))
                            .accept(request, body);
                }
            })).listen(0, "127.0.0.1"));
        }

        URI url() {
            return URI.create("http://127.0.0.1:" + server.actualPort() + "/mcp");
        }

        List<Seen> all(String method) {
            return seen.stream().filter(s -> s.body() != null && method.equals(s.body().getString("method"))).toList();
        }

        Seen seen(String method) {
            return all(method).getFirst();
        }

        List<MultiMap> gets() {
            return seen.stream().filter(s -> s.method() == HttpMethod.GET).map(Seen::headers).toList();
        }
    }

    private static int freePort() throws IOException {
        return McpPeers.freePort();
    }

    /** Starts the reference server's Streamable HTTP transport on {@code port}; returns once it says it listens. */
    private Process startEverything(int port) throws Exception {
        Process process = McpPeers.everythingHttp(port);
        processes.add(process);
        return process;
    }
}
