package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Many conversations in flight at once: N new chats each send one message as fast as the gateway
 * takes them, the (slow) mock model counts how many of its calls were open at once, and then every
 * chat must have exactly its one correct reply. Each message's latency runs from just before its send
 * to its reply's commit time ({@code at}, the same host's clock): the replies are read only after all
 * sends, so the time of the read would measure the sends, not the reply.
 */
final class InFlightCheck {

    private static final int CONCURRENCY = 256;

    private final Context context;
    private final HttpClientAgent http;
    private final String gateway;
    private final MockLlmServer model;
    private final BenchReport report;
    private final Map<String, Long> errors = new TreeMap<>();
    private final Latencies latencies = new Latencies();
    private long[] sentAtMicros = new long[0];
    private String example;

    InFlightCheck(Vertx vertx, String gateway, MockLlmServer model, BenchReport report) {
        this.context = vertx.getOrCreateContext();
        this.http = vertx.createHttpClient(new HttpClientOptions().setTcpNoDelay(true).setKeepAlive(true),
                new PoolOptions().setHttp1MaxSize(CONCURRENCY));
        this.gateway = gateway;
        this.model = model;
        this.report = report;
    }

    void run(int chats, Duration timeout, Map<String, ClusterHarness.Node> nodes, PostgresStats pg) throws Exception {
        try (RssSampler rss = new RssSampler(nodes, pg)) {
            pg.resetStatements();
            run(chats, timeout, new CpuReadings(nodes, pg));
            pg.topStatements(12, chats).forEach(s -> report.note("statement per chat " + s));
            for (String id : nodes.keySet()) {
                report.add("RSS during the check (peak), " + id, rss.peakMib(id), "MiB");
            }
            report.add("RSS during the check (peak), " + RssSampler.POSTGRES, rss.peakMib(RssSampler.POSTGRES), "MiB");
        }
    }

    private void run(int chats, Duration timeout, CpuReadings cpu) throws Exception {
        sentAtMicros = new long[chats];
        long modelCallsBefore = model.requestCount();
        Map<String, Map<String, Long>> threadsAtStart = LoadFigures.threadCpu(cpu.nodes);
        Map<String, Long> cpuAtStart = cpu.read();
        long start = System.nanoTime();
        long[] acceptedAt = new long[1];
        Map<String, Long> cpuAtAccepted = new LinkedHashMap<>();
        int[] answered = new int[1];
        Promise<Void> done = Promise.promise();
        context.runOnContext(v -> bounded(chats, this::send)
                .compose(x -> {
                    acceptedAt[0] = System.nanoTime();
                    cpuAtAccepted.putAll(cpu.read()); // /proc reads only: a few milliseconds on this loop, once
                    return bounded(chats, i -> read(i).map(ok -> {
                        if (ok) {
                            answered[0]++;
                        }
                        return null;
                    }));
                })
                .onComplete(done));
        done.future().toCompletionStage().toCompletableFuture().get(timeout.toMillis() + 300_000, TimeUnit.MILLISECONDS);
        long end = System.nanoTime();
        Map<String, Long> cpuAtEnd = cpu.read();
        http.close();
        report.add("chats sending one message at once", chats, "");
        report.add("time to accept all", (acceptedAt[0] - start) / 1_000_000, "ms");
        report.add("peak model calls in flight at once", model.peakInFlight(), "", ">= 10000 (2 s model latency)");
        report.add("model calls made", model.requestCount() - modelCallsBefore, "");
        report.add("chats answered correctly", answered[0], "");
        report.add("errors", errors.values().stream().mapToLong(Long::longValue).sum(), "", "0");
        errors.forEach((kind, count) -> report.note("error '" + kind + "': " + count));
        report.add("time until all answered", (end - start) / 1_000_000, "ms");
        report.add("latency send to reply committed, p50", latencies.percentileMs(0.50), "ms");
        report.add("latency send to reply committed, p99", latencies.percentileMs(0.99), "ms", "<= 2500 (2 s model latency)");
        report.add("latency send to reply committed, max", latencies.percentileMs(1.0), "ms");
        // Where a new chat's CPU goes, per process: the 10,000 needs 5,000 new chats a second on two cores,
        // so about 0.4 ms per chat for everything; the split says which process stands in the way.
        cpuPerChat("while the gateway accepted them", cpuAtStart, cpuAtAccepted, chats);
        cpuPerChat("from the first send to the last reply", cpuAtStart, cpuAtEnd, chats);
        LoadFigures.threadNotes(report, "chat", threadsAtStart, LoadFigures.threadCpu(cpu.nodes), chats);
        if (example != null) {
            report.note("example of a wrong answer: " + (example.length() > 400 ? example.substring(0, 400) + "..." : example));
        }
    }

    private void cpuPerChat(String window, Map<String, Long> from, Map<String, Long> to, int chats) {
        double total = 0;
        for (Map.Entry<String, Long> before : from.entrySet()) {
            long after = to.getOrDefault(before.getKey(), -1L);
            if (before.getValue() < 0 || after < 0) {
                continue; // not on this machine's /proc (a PostgreSQL elsewhere) or gone
            }
            double perChat = (after - before.getValue()) / (double) chats;
            total += perChat;
            report.add("CPU per chat " + window + ", " + before.getKey(), perChat, "ms");
        }
        report.add("CPU per chat " + window + ", all", total, "ms", "<= 0.4 (5,000 new chats a second on 2 cores)");
    }

    /** CPU milliseconds so far of every process the check runs on: the nodes, this JVM and PostgreSQL (/proc only). */
    private record CpuReadings(Map<String, ClusterHarness.Node> nodes, PostgresStats pg) {
        Map<String, Long> read() {
            Map<String, Long> cpu = LoadFigures.cpu(nodes);
            cpu.put("load generator + mock model (this JVM)", ProcessStats.cpuMillis(ProcessHandle.current().pid()));
            cpu.put(RssSampler.POSTGRES, pg.serverCpuMillis());
            return cpu;
        }
    }

    private Future<Void> send(int i) {
        JsonObject body = new JsonObject().put("chatId", "flight-" + i).put("senderId", "bench").put("messageId", "m-1")
                .put("text", "flight " + i);
        sentAtMicros[i] = micros(java.time.Instant.now());
        return request(HttpMethod.POST, "/api/v1/messages", body).map(r -> {
            if (!r.succeeded()) {
                count(r.error());
            }
            return null;
        });
    }

    /** Whether the chat has exactly one reply, the right one (waiting for it up to 60 s). */
    private Future<Boolean> read(int i) {
        return request(HttpMethod.GET, "/api/v1/chats/flight-" + i + "/replies?after=0&wait=60", null).map(r -> {
            if (!r.succeeded()) {
                count("read " + r.error());
                return false;
            }
            JsonArray replies = new JsonObject(r.body()).getJsonArray("replies");
            boolean ok = replies.size() == 1 && replies.getJsonObject(0).getString("text").equals("echo: flight " + i);
            if (ok) {
                latencies.add(micros(java.time.Instant.parse(replies.getJsonObject(0).getString("at"))) - sentAtMicros[i]);
            }
            if (!ok) {
                count(replies.isEmpty() ? "no reply" : "wrong replies");
                if (!replies.isEmpty() && example == null) {
                    example = "chat flight-" + i + " got " + replies.encode();
                }
            }
            return ok;
        });
    }

    private static long micros(java.time.Instant at) {
        return at.getEpochSecond() * 1_000_000 + at.getNano() / 1_000;
    }

    private void count(String kind) {
        errors.merge(kind, 1L, Long::sum);
    }

    /** Runs task(0..n-1) with at most CONCURRENCY at a time; completes when all have. */
    private Future<Void> bounded(int n, IntFunction<Future<?>> task) {
        Promise<Void> all = Promise.promise();
        int[] next = {0};
        int[] running = {0};
        Runnable[] pump = new Runnable[1];
        pump[0] = () -> {
            while (running[0] < CONCURRENCY && next[0] < n) {
                running[0]++;
                task.apply(next[0]++).onComplete(r -> {
                    running[0]--;
                    if (r.failed()) {
                        count(r.cause().getClass().getSimpleName());
                    }
                    pump[0].run();
                });
            }
            if (running[0] == 0 && next[0] >= n) {
                all.tryComplete();
            }
        };
        pump[0].run();
        return all.future();
    }

    private record Response(int status, String body) {
        boolean succeeded() {
            return status == 200 || status == 202;
        }

        String error() {
            return "http " + status;
        }
    }

    private Future<Response> request(HttpMethod method, String path, JsonObject body) {
        RequestOptions options = new RequestOptions().setMethod(method).setAbsoluteURI(gateway + path)
                .putHeader("authorization", "Bearer " + ClusterHarness.API_KEY).setTimeout(90_000);
        if (body != null) {
            options.putHeader("content-type", "application/json");
        }
        return http.request(options)
                .compose(request -> body == null ? request.send() : request.send(Buffer.buffer(body.encode())))
                .compose(response -> response.body().map(b -> new Response(response.statusCode(), b.toString())));
    }
}
