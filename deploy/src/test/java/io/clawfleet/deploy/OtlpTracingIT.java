package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Traces across JVMs (issue 17): nodes export OTLP/HTTP to a receiver in the test, as they would to a collector. One
 * trace id covers the gateway's intake, the worker's turn, model and tool calls, and the sandbox node's run, each
 * span the child of the one before; and a turn whose worker is killed (kill -9) mid-turn is run again by the other
 * worker under the same trace, the new turn span a child of the intake's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class OtlpTracingIT {

    /** A span as received, with the node (service.instance.id) that exported it. */
    record Received(String node, Span span) {
        String traceId() {
            return HexFormat.of().formatHex(span.getTraceId().toByteArray());
        }

        String spanId() {
            return HexFormat.of().formatHex(span.getSpanId().toByteArray());
        }

        String parentId() {
            return HexFormat.of().formatHex(span.getParentSpanId().toByteArray());
        }

        Optional<String> attribute(String key) {
            return span.getAttributesList().stream().filter(a -> a.getKey().equals(key)).findFirst()
                    .map(a -> a.getValue().hasIntValue() ? Long.toString(a.getValue().getIntValue()) : a.getValue().getStringValue());
        }
    }

    private final List<Received> received = new ArrayList<>();
    private Vertx vertx;
    private HttpServer receiver;
    private ClusterHarness cluster;
    private SandboxClusterChat api;
    private Database database;
    private String admin;

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        receiver = result(vertx.createHttpServer().requestHandler(request -> request.body().onSuccess(body -> {
            if (request.path().equals("/v1/traces")) {
                take(body);
            }
            request.response().putHeader("content-type", "application/x-protobuf")
                    .end(Buffer.buffer(ExportTraceServiceResponse.getDefaultInstance().toByteArray()));
        })).listen(0, "127.0.0.1"));
        // Slow enough that a turn is in its model call when its worker is killed.
        MockLlmServer model = new MockLlmServer(vertx, 1_500);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        database = Database.connect(vertx, db, 1, 5_000);
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 4)
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + receiver.actualPort())
                .env("OTEL_BSP_SCHEDULE_DELAY", "200")
                .env("CLAWFLEET_AGENT_AUTONOMY", "full")
                .env("CLAWFLEET_ALLOW_SHELL", "true");
        ClusterHarness.Node gateway = cluster.start("gateway-1", "gateway");
        cluster.start("worker-1", "worker");
        cluster.start("worker-2", "worker");
        cluster.start("sandbox-1", "sandbox");
        cluster.awaitReady(Duration.ofSeconds(120));
        api = new SandboxClusterChat(cluster, gateway);
        Await.until("the sandbox node in the cluster view", Duration.ofSeconds(60), () -> api.sandboxMembers() == 1);
        admin = "admin-" + UUID.randomUUID();
        api.ask(admin, "hello");
        assertThat(api.call("PUT", "/api/v1/chats/api/" + admin + "/role", new JsonObject().put("role", "admin")).statusCode())
                .isEqualTo(200);
    }

    @AfterAll
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (database != null) {
            result(database.close());
        }
        result(vertx.close());
    }

    private void take(Buffer body) {
        try {
            ExportTraceServiceRequest export = ExportTraceServiceRequest.parseFrom(body.getBytes());
            for (ResourceSpans resource : export.getResourceSpansList()) {
                String node = resource.getResource().getAttributesList().stream()
                        .filter(a -> a.getKey().equals("service.instance.id")).map(KeyValue::getValue)
                        .map(v -> v.getStringValue()).findFirst().orElse("?");
                for (ScopeSpans scope : resource.getScopeSpansList()) {
                    synchronized (received) {
                        scope.getSpansList().forEach(span -> received.add(new Received(node, span)));
                    }
                }
            }
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new IllegalStateException(e);
        }
    }

    private List<Received> spans() {
        synchronized (received) {
            return List.copyOf(received);
        }
    }

    private Received one(List<Received> spans, String name, String parentId) {
        return spans.stream().filter(s -> s.span().getName().equals(name) && s.parentId().equals(parentId)).findFirst()
                .orElseThrow(() -> new AssertionError("no span " + name + " under " + parentId + " in " + spans.stream()
                        .map(s -> s.node() + ":" + s.span().getName() + ":" + s.spanId() + "<" + s.parentId()).toList()));
    }

    @Test
    @Order(1)
    void oneTraceCoversTheGatewayTheWorkerAndTheSandboxNode() throws Exception {
        // when a message asks for a program run on the sandbox node
        String id = api.send(admin, "call:shell_exec " + new JsonObject().put("command", "echo traced").encode());
        assertThat(api.reply(admin, id)).contains("traced");

        // then the nodes export one trace: intake (gateway) > turn (worker) > tool call (worker) > run (sandbox)
        Await.until("the sandbox node's span received", Duration.ofSeconds(30),
                () -> spans().stream().anyMatch(s -> s.span().getName().equals("clawfleet sandbox shell_exec")));
        Await.until("the turn's span received", Duration.ofSeconds(30), () -> spans().stream()
                .anyMatch(s -> s.span().getName().equals("clawfleet turn") && s.attribute("clawfleet.inbox").orElse("").equals(id)));
        Received run = spans().stream().filter(s -> s.span().getName().equals("clawfleet sandbox shell_exec")).findFirst().orElseThrow();
        List<Received> trace = spans().stream().filter(s -> s.traceId().equals(run.traceId())).toList();
        Received ingest = trace.stream().filter(s -> s.span().getName().equals("clawfleet ingest")).findFirst().orElseThrow();
        assertThat(ingest.node()).isEqualTo("gateway-1");
        assertThat(ingest.span().getParentSpanId().isEmpty()).as("the intake is the root").isTrue();
        assertThat(ingest.attribute("clawfleet.inbox")).contains(id);
        Received turn = one(trace, "clawfleet turn", ingest.spanId());
        assertThat(turn.node()).isIn("worker-1", "worker-2");
        Received tool = one(trace, "execute_tool shell_exec", turn.spanId());
        assertThat(tool.node()).isEqualTo(turn.node());
        assertThat(run.parentId()).isEqualTo(tool.spanId());
        assertThat(run.node()).isEqualTo("sandbox-1");
        assertThat(trace.stream().filter(s -> s.span().getName().startsWith("chat") && s.parentId().equals(turn.spanId())))
                .as("the model call that asked for the run and the one that answered").hasSize(2)
                .allSatisfy(call -> assertThat(call.node()).isEqualTo(turn.node()));
    }

    @Test
    @Order(2)
    void aTurnRunAgainAfterItsWorkerIsKilledContinuesTheSameTrace() throws Exception {
        // given a message whose turn is in its (1.5 s) model call
        String chat = "killed-" + UUID.randomUUID();
        JsonObject sent = new JsonObject(api.call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat)
                .put("senderId", "u").put("messageId", "m1").put("text", "still there?")).body());
        String id = sent.getString("id");
        String owner = result(database.pool().preparedQuery("SELECT owner_node FROM partition_leases WHERE partition = $1")
                .execute(Tuple.of(sent.getInteger("partition")))).iterator().next().getString("owner_node");
        assertThat(owner).isIn("worker-1", "worker-2");
        Thread.sleep(500);

        // when its worker is killed
        cluster.kill(owner);

        // then the other worker answers it, in a turn span of the message's trace, under its intake
        assertThat(api.reply(chat, id)).isEqualTo("echo: still there?");
        String other = owner.equals("worker-1") ? "worker-2" : "worker-1";
        Await.until("the turn's span received", Duration.ofSeconds(30), () -> spans().stream()
                .anyMatch(s -> s.span().getName().equals("clawfleet turn") && s.attribute("clawfleet.inbox").orElse("").equals(id)));
        Received ingest = spans().stream().filter(s -> s.span().getName().equals("clawfleet ingest")
                && s.attribute("clawfleet.inbox").orElse("").equals(id)).findFirst().orElseThrow();
        Received turn = spans().stream().filter(s -> s.span().getName().equals("clawfleet turn")
                && s.attribute("clawfleet.inbox").orElse("").equals(id)).findFirst().orElseThrow();
        assertThat(turn.node()).isEqualTo(other);
        assertThat(turn.traceId()).isEqualTo(ingest.traceId());
        assertThat(turn.parentId()).isEqualTo(ingest.spanId());
        assertThat(turn.span().getEventsList()).as("the turn says it was taken over")
                .anyMatch(event -> event.getName().equals("turn taken over from an earlier owner"));
    }
}
