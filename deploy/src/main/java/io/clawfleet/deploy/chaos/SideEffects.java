package io.clawfleet.deploy.chaos;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Side effects among the chaos faults (issue 20): chats whose every message calls a tool that changes things, a
 * counter on a remote MCP server in the run's JVM ({@code count}, no read-only hint), with a key per message. The
 * counter counts a call as it arrives and answers after {@link #HOLD_MS}, so a worker killed or frozen mid-turn often
 * dies between the effect and the commit. Whatever the faults, no key may be counted twice: the next owner of an
 * interrupted turn finds the call started in the execution ledger and does not run it again (it tells the model the
 * call may or may not have taken effect), and a call whose result was saved is replayed, not made. A message answered
 * with the counter's own words was counted exactly once.
 */
public final class SideEffects {

    /** How long the counter holds each answer after counting: the window a fault must hit. */
    static final long HOLD_MS = 400;
    /** What the worker tells the model of a call it will not run again (AgentLoop). */
    static final String INTERRUPTED = "may or may not have taken effect";

    /**
     * What the run found: messages answered, how (with the counter's words; told the call may or may not have taken
     * effect; told the call failed, say when the counter's answer did not reach a worker that was frozen), and keys
     * counted more than once.
     */
    public record Outcome(int messages, int counted, int interrupted, int failed, List<String> countedTwice,
                          List<String> wrong, ChatLoad.Verdict verdict) {

        public boolean held() {
            return verdict.clean() && countedTwice.isEmpty() && wrong.isEmpty();
        }

        public JsonObject toJson() {
            return new JsonObject().put("messages", messages).put("countedOnce", counted).put("interrupted", interrupted).put("failed", failed)
                    .put("countedTwice", new JsonArray(countedTwice.stream().limit(10).toList())).put("countedTwiceTotal", countedTwice.size())
                    .put("wrong", new JsonArray(wrong.stream().limit(10).toList())).put("wrongTotal", wrong.size())
                    .put("lost", verdict.lost().size()).put("duplicated", verdict.duplicated().size())
                    .put("outOfOrder", verdict.outOfOrder().size())
                    .put("examples", new JsonArray(java.util.stream.Stream.of(verdict.lost(), verdict.duplicated(),
                            verdict.outOfOrder()).flatMap(List::stream).limit(10).toList()))
                    .put("replyLatencyMs", new JsonObject().put("p50", verdict.p50LatencyMs()).put("p99", verdict.p99LatencyMs())
                            .put("max", verdict.maxLatencyMs()));
        }
    }

    private final Vertx vertx;
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    private HttpServer server;
    private String url;

    SideEffects(Vertx vertx) {
        this.vertx = vertx;
    }

    /** The text of message {@code m} of a chat: a call of the counter with a key of its own. */
    static String text(String chat, int m) {
        return "call:mcp__counter__count " + new JsonObject().put("key", chat + "/" + m).encode();
    }

    /**
     * A reply answers such a message when it carries the counter's words for its key, or the worker's about that call
     * (cut off, or failed); the judge has matched it to the message already.
     */
    static boolean answers(String text, String reply) {
        return reply.contains(counted(key(text))) || reply.contains(SAID);
    }

    /** How the mock model passes a tool's result on (MockScript). */
    private static final String SAID = "tool mcp__counter__count said:";

    /** The counter's words for a key (with the count after them, so that key 1 is not found in key 10's). */
    private static String counted(String key) {
        return "counted " + key + " (";
    }

    private static String key(String text) {
        return new JsonObject(text.substring(text.indexOf('{'))).getString("key");
    }

    /** Starts the counter on {@code host}. */
    SideEffects start(String host) throws Exception {
        server = vertx.createHttpServer()
                .requestHandler(request -> request.body().onSuccess(body -> answer(request,
                        body.length() == 0 ? null : body.toJsonObject())))
                .listen(0, host).toCompletionStage().toCompletableFuture().get();
        url = "http://" + host + ":" + server.actualPort() + "/mcp";
        return this;
    }

    /** Gives the chaos tenant's bot the counter, as its operator would. */
    void configure(String gateway, String apiKey) throws Exception {
        HttpResponse<String> put = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create(gateway + "/api/v1/bots/main/mcp-servers"))
                .header("authorization", "Bearer " + apiKey).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .PUT(HttpRequest.BodyPublishers.ofString(new JsonObject().put("servers", new JsonObject().put("counter",
                        new JsonObject().put("url", url).put("access", "everyone"))).encode())).build(),
                HttpResponse.BodyHandlers.ofString());
        if (put.statusCode() != 200) {
            throw new IllegalStateException("could not give the bot the counter: " + put.statusCode() + " " + put.body());
        }
    }

    /** Judges the load's replies against the counter. */
    Outcome judge(ChatLoad load, ChatLoad.Verdict verdict) {
        List<String> twice = new ArrayList<>();
        counts.forEach((key, count) -> {
            if (count.get() > 1) {
                twice.add(key + " counted " + count.get() + " times");
            }
        });
        twice.sort(null);
        int counted = 0;
        int interrupted = 0;
        int failed = 0;
        List<String> wrong = new ArrayList<>();
        for (var answered : load.replyTexts().entrySet()) {
            String key = key(answered.getKey());
            int count = counts.getOrDefault(key, new AtomicInteger()).get();
            if (answered.getValue().contains(counted(key))) {
                counted++;
                if (count != 1) {
                    wrong.add(key + " answered with the counter's words but counted " + count + " times");
                }
            } else if (answered.getValue().contains(INTERRUPTED)) {
                interrupted++;
            } else {
                failed++;
            }
        }
        return new Outcome(verdict.messages(), counted, interrupted, failed, twice, wrong, verdict);
    }

    void close() {
        if (server != null) {
            server.close();
        }
    }

    /** A Streamable HTTP MCP server with one tool that changes state. */
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
        Future<JsonObject> result = switch (body.getString("method")) {
            case "initialize" -> Future.succeededFuture(new JsonObject()
                    .put("protocolVersion", body.getJsonObject("params").getString("protocolVersion"))
                    .put("capabilities", new JsonObject().put("tools", new JsonObject()))
                    .put("serverInfo", new JsonObject().put("name", "counter").put("version", "1")));
            case "tools/list" -> Future.succeededFuture(new JsonObject().put("tools", new JsonArray().add(new JsonObject()
                    .put("name", "count").put("description", "Counts one for the key and says so.")
                    .put("inputSchema", new JsonObject().put("type", "object").put("properties", new JsonObject()
                            .put("key", new JsonObject().put("type", "string"))).put("required", new JsonArray().add("key"))))));
            case "tools/call" -> {
                JsonObject arguments = body.getJsonObject("params", new JsonObject()).getJsonObject("arguments", new JsonObject());
                String key = arguments.getString("key", "");
                int now = counts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                io.vertx.core.Promise<JsonObject> later = io.vertx.core.Promise.promise();
                vertx.setTimer(HOLD_MS, id -> later.complete(new JsonObject().put("content", new JsonArray()
                        .add(new JsonObject().put("type", "text").put("text", "counted " + key + " (" + now + ")")))));
                yield later.future();
            }
            default -> Future.succeededFuture(new JsonObject());
        };
        result.onSuccess(json -> {
            if (!request.response().closed()) {
                request.response().putHeader("content-type", "application/json").putHeader("mcp-session-id", "s-1")
                        .end(new JsonObject().put("jsonrpc", "2.0").put("id", body.getValue("id")).put("result", json).encode());
            }
        });
    }
}
