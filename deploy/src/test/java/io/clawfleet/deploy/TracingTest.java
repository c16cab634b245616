package io.clawfleet.deploy;

import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.tracing.Tracing;
import io.clawfleet.testkit.FakeTelegram;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Traces, part one (issue 17): a message's intake on the gateway, its turn on the worker, the model call and the tool
 * call make one trace with the right parents, the turn continuing the trace through the traceparent kept with the
 * inbox row; model spans follow the GenAI conventions; a sandbox run joins the trace of the tool call that asked for it;
 * no message text, argument or answer is in any span. (Nodes in one JVM here; the multi-JVM OTLP test is still to come.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class TracingTest {

    private static final String KEY = "tracing-key-0123456789abcdef";

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private MockedNode fixture;
    private Vertx vertx;
    private MockLlmServer model;
    private NodeRuntime node;
    private ApiChat api;
    private String admin;

    @BeforeAll
    void start() throws Exception {
        OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                .build();
        fixture = MockedNode.start("gateway,worker,sandbox,scheduler", KEY, Map.of("agent.autonomy", "full",
                "allowShell", "true", "egress.allowedHosts", "127.0.0.1"), TestDatabases.freshEmpty(), Tracing.of(sdk));
        vertx = fixture.vertx;
        model = fixture.model;
        node = fixture.node;
        api = fixture.api;
        // shell_exec is an admin's tool; the tenant grants the role (clawfleet admin grant)
        admin = fixture.adminChat();
    }

    @AfterAll
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void aMessagesIntakeTurnModelAndToolCallsAreOneTrace() throws Exception {
        // when a message asks the model for a tool call, and the model answers with its result
        String chat = "traced-" + UUID.randomUUID();
        String secretWords = "call:fs_list {}";
        assertThat(api.ask(chat, secretWords)).isNotBlank();
        Await.until("the turn's span ended", Duration.ofSeconds(20),
                () -> spans.getFinishedSpanItems().stream().anyMatch(s -> s.getName().equals("clawfleet turn")
                        && chat.equals(s.getAttributes().get(Tracing.CHAT))));

        // then the intake is the root, the turn its child, the model and tool calls the turn's children, one trace
        List<SpanData> all = spans.getFinishedSpanItems();
        SpanData ingest = all.stream().filter(s -> s.getName().equals("clawfleet ingest")
                && chat.equals(s.getAttributes().get(Tracing.CHAT))).findFirst().orElseThrow();
        assertThat(ingest.getKind()).isEqualTo(SpanKind.SERVER);
        assertThat(ingest.getParentSpanContext().isValid()).as("the intake starts the trace").isFalse();
        assertThat(ingest.getAttributes().get(Tracing.TENANT)).isEqualTo("default");
        String trace = ingest.getTraceId();
        List<SpanData> traced = all.stream().filter(s -> s.getTraceId().equals(trace)).toList();
        SpanData turn = traced.stream().filter(s -> s.getName().equals("clawfleet turn")).findFirst().orElseThrow();
        assertThat(turn.getParentSpanId()).isEqualTo(ingest.getSpanId());
        assertThat(turn.getKind()).isEqualTo(SpanKind.CONSUMER);
        assertThat(turn.getAttributes().get(Tracing.INBOX)).isEqualTo(ingest.getAttributes().get(Tracing.INBOX));
        assertThat(turn.getAttributes().get(AttributeKey.stringKey("clawfleet.outcome"))).isEqualTo("committed");

        List<SpanData> modelCalls = traced.stream().filter(s -> s.getName().startsWith("chat")).toList();
        assertThat(modelCalls).as("a call that asked for the tool, one that answered").hasSize(2)
                .allSatisfy(call -> {
                    assertThat(call.getParentSpanId()).isEqualTo(turn.getSpanId());
                    assertThat(call.getKind()).isEqualTo(SpanKind.CLIENT);
                    assertThat(call.getAttributes().get(AttributeKey.stringKey("gen_ai.operation.name"))).isEqualTo("chat");
                    assertThat(call.getAttributes().get(AttributeKey.longKey("gen_ai.usage.input_tokens"))).isPositive();
                    assertThat(call.getAttributes().get(AttributeKey.stringKey("gen_ai.response.model"))).isNotBlank();
                });
        SpanData tool = traced.stream().filter(s -> s.getName().equals("execute_tool fs_list")).findFirst().orElseThrow();
        assertThat(tool.getParentSpanId()).isEqualTo(turn.getSpanId());
        assertThat(tool.getAttributes().get(AttributeKey.stringKey("gen_ai.tool.name"))).isEqualTo("fs_list");

        // and no span carries what was said
        assertThat(traced).allSatisfy(span -> assertThat(span.getAttributes().asMap().values())
                .noneMatch(value -> String.valueOf(value).contains("fs_list {}")));
    }

    @Test
    void aSandboxRunJoinsTheTraceOfTheToolCallThatAskedForIt() throws Exception {
        String reply = api.ask(admin, "call:shell_exec " + new io.vertx.core.json.JsonObject().put("command", "echo traced-run").encode());
        org.junit.jupiter.api.Assumptions.assumeFalse(reply.contains("cannot isolate"), "this host cannot isolate programs: " + reply);
        Await.until("the run's span ended", Duration.ofSeconds(20),
                () -> spans.getFinishedSpanItems().stream().anyMatch(s -> s.getName().equals("clawfleet sandbox shell_exec")));
        List<SpanData> all = spans.getFinishedSpanItems();
        SpanData run = all.stream().filter(s -> s.getName().equals("clawfleet sandbox shell_exec")).findFirst().orElseThrow();
        SpanData call = all.stream().filter(s -> s.getSpanId().equals(run.getParentSpanId())).findFirst().orElseThrow();
        assertThat(call.getName()).isEqualTo("execute_tool shell_exec");
        assertThat(run.getTraceId()).isEqualTo(call.getTraceId());
        assertThat(run.getKind()).isEqualTo(SpanKind.SERVER);
        assertThat(run.getAttributes().get(AttributeKey.stringKey("clawfleet.sandbox.status"))).isEqualTo("ok");
        assertThat(run.getAttributes().get(AttributeKey.longKey("process.exit.code"))).isZero();
        SpanData turn = all.stream().filter(s -> s.getSpanId().equals(call.getParentSpanId())).findFirst().orElseThrow();
        SpanData ingest = all.stream().filter(s -> s.getSpanId().equals(turn.getParentSpanId())).findFirst().orElseThrow();
        assertThat(ingest.getName()).isEqualTo("clawfleet ingest");
        assertThat(run.getAttributes().asMap().values()).noneMatch(value -> String.valueOf(value).contains("traced-run"));
    }

    @Test
    void aReplyDeliveredToAChannelIsTheLastSpanOfTheMessagesTrace() throws Exception {
        FakeTelegram telegram = new FakeTelegram(vertx);
        var registered = api.call("POST", "/api/v1/channels/telegram", new io.vertx.core.json.JsonObject()
                .put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        telegram.userSays(4242, "a question from telegram");
        Await.until("the reply sent to the chat", Duration.ofSeconds(30), () -> !telegram.sentTo(4242).isEmpty());
        Await.until("the delivery's span ended", Duration.ofSeconds(20), () -> spans.getFinishedSpanItems().stream()
                .anyMatch(s -> s.getName().equals("clawfleet deliver telegram")));

        List<SpanData> all = spans.getFinishedSpanItems();
        SpanData deliver = all.stream().filter(s -> s.getName().equals("clawfleet deliver telegram")).findFirst().orElseThrow();
        assertThat(deliver.getKind()).isEqualTo(SpanKind.CLIENT);
        assertThat(deliver.getAttributes().get(Tracing.CHANNEL)).isEqualTo("telegram");
        SpanData ingest = all.stream().filter(s -> s.getSpanId().equals(deliver.getParentSpanId())).findFirst().orElseThrow();
        assertThat(ingest.getName()).isEqualTo("clawfleet ingest");
        assertThat(all.stream().filter(s -> s.getTraceId().equals(deliver.getTraceId())).map(SpanData::getName))
                .contains("clawfleet turn", "chat mock");
        assertThat(deliver.getAttributes().asMap().values()).noneMatch(value -> String.valueOf(value).contains("question"));
    }

    @Test
    void aScheduledFiringStartsTheTraceItsTurnGoesOn() throws Exception {
        String chat = "scheduled-" + UUID.randomUUID();
        api.ask(chat, "hello");
        var created = api.call("POST", "/api/v1/tasks", new io.vertx.core.json.JsonObject().put("chatId", chat)
                .put("prompt", "time for the report").put("scheduleType", "once")
                .put("scheduleValue", java.time.Instant.now().plusSeconds(1).toString()));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        Await.until("the firing's turn ended", Duration.ofSeconds(30), () -> spans.getFinishedSpanItems().stream()
                .anyMatch(s -> s.getName().equals("clawfleet task fire") && chat.equals(s.getAttributes().get(Tracing.CHAT))
                        && spans.getFinishedSpanItems().stream().anyMatch(t -> t.getName().equals("clawfleet turn")
                        && t.getParentSpanId().equals(s.getSpanId()))));
        SpanData fire = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("clawfleet task fire")
                && chat.equals(s.getAttributes().get(Tracing.CHAT))).findFirst().orElseThrow();
        assertThat(fire.getKind()).isEqualTo(SpanKind.PRODUCER);
        assertThat(fire.getParentSpanContext().isValid()).as("the firing starts its trace").isFalse();
        assertThat(fire.getAttributes().get(AttributeKey.stringKey("clawfleet.task.run"))).isEqualTo("pending");
        assertThat(fire.getAttributes().asMap().values()).noneMatch(value -> String.valueOf(value).contains("report"));
    }

    @Test
    void offTracingCostsNoContextAndStoresNoTraceparent() {
        Tracing off = Tracing.off();
        var span = off.tracer().spanBuilder("x").startSpan();
        assertThat(off.on()).isFalse();
        assertThat(off.traceparent(span)).isNull();
        assertThat(Tracing.wanted(Map.of())).isFalse();
        assertThat(Tracing.wanted(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"))).isTrue();
        assertThat(Tracing.wanted(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_SDK_DISABLED", "true")))
                .isFalse();
        assertThat(Tracing.wanted(Map.of("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")))
                .isFalse();
        assertThat(Tracing.wanted(Map.of("OTEL_TRACES_EXPORTER", "console"))).isTrue();
    }
}
