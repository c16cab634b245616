package io.clawfleet.shared.tracing;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.resources.Resource;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The node's OpenTelemetry tracing (docs/OPERATIONS.md#traces). Off unless the standard variables ask for it
 * ({@code OTEL_EXPORTER_OTLP_ENDPOINT}, {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}, or {@code OTEL_TRACES_EXPORTER}
 * other than {@code none}; {@code OTEL_SDK_DISABLED=true} wins): then the SDK is configured by the OTEL_* variables
 * (exporter, endpoint, headers, sampler, service name), traces only. Off, every span is the API's no-op and no
 * context travels: nothing is measured, stored or sent.
 *
 * <p>Context crosses nodes as a W3C {@code traceparent}: stored with the inbox row (a turn run again on another worker
 * after failover continues the same trace) and sent with tool calls to sandbox nodes.
 */
public final class Tracing {

    public static final String SCOPE = "io.clawfleet";
    public static final AttributeKey<String> TENANT = AttributeKey.stringKey("clawfleet.tenant");
    public static final AttributeKey<String> BOT = AttributeKey.stringKey("clawfleet.bot");
    public static final AttributeKey<String> CHAT = AttributeKey.stringKey("clawfleet.chat");
    public static final AttributeKey<String> CHANNEL = AttributeKey.stringKey("clawfleet.channel");
    public static final AttributeKey<Long> PARTITION = AttributeKey.longKey("clawfleet.partition");
    public static final AttributeKey<Long> INBOX = AttributeKey.longKey("clawfleet.inbox");
    public static final AttributeKey<String> NODE = AttributeKey.stringKey("clawfleet.node");

    private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final OpenTelemetry otel;
    private final Tracer tracer;
    private final boolean on;
    private final OpenTelemetrySdk sdk;

    private Tracing(OpenTelemetry otel, boolean on, OpenTelemetrySdk sdk) {
        this.otel = Objects.requireNonNull(otel);
        this.tracer = otel.getTracer(SCOPE);
        this.on = on;
        this.sdk = sdk;
    }

    /** No tracing. */
    public static Tracing off() {
        return new Tracing(OpenTelemetry.noop(), false, null);
    }

    /** Tracing through a given OpenTelemetry (tests, with an in-memory exporter). */
    public static Tracing of(OpenTelemetry otel) {
        return new Tracing(otel, true, null);
    }

    /** Whether {@code env} asks for traces. */
    public static boolean wanted(Map<String, String> env) {
        if ("true".equalsIgnoreCase(env.getOrDefault("OTEL_SDK_DISABLED", "").strip())) {
            return false;
        }
        String exporter = env.getOrDefault("OTEL_TRACES_EXPORTER", "").strip();
        if (!exporter.isEmpty()) {
            return !exporter.equalsIgnoreCase("none");
        }
        return !env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", "").isBlank()
                || !env.getOrDefault("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").isBlank();
    }

    /**
     * The SDK as the OTEL_* variables of {@code env} (and {@code otel.*} system properties) set it, when they ask for
     * traces; else off. Metrics and logs stay with Prometheus and standard error: their exporters default to none.
     */
    public static Tracing fromEnvironment(Map<String, String> env, String nodeId, Collection<String> roles) {
        if (!wanted(env)) {
            return off();
        }
        Map<String, String> defaults = new HashMap<>();
        defaults.put("otel.metrics.exporter", "none");
        defaults.put("otel.logs.exporter", "none");
        defaults.put("otel.service.name", "clawfleet");
        // OTLP over HTTP (port 4318), sent with the JDK's client: the build carries no gRPC sender.
        defaults.put("otel.exporter.otlp.protocol", "http/protobuf");
        OpenTelemetrySdk sdk = AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> defaults)
                .addResourceCustomizer((resource, config) -> resource.merge(Resource.builder()
                        .put("service.instance.id", nodeId)
                        .put(AttributeKey.stringArrayKey("clawfleet.roles"), List.copyOf(roles))
                        .build()))
                .disableShutdownHook()
                .build()
                .getOpenTelemetrySdk();
        return new Tracing(sdk, true, sdk);
    }

    public boolean on() {
        return on;
    }

    public Tracer tracer() {
        return tracer;
    }

    /** The W3C {@code traceparent} of {@code span}, or null when tracing is off or the span is not sampled in. */
    public String traceparent(Span span) {
        SpanContext context = span.getSpanContext();
        if (!on || !context.isValid()) {
            return null;
        }
        Map<String, String> carrier = new HashMap<>();
        W3CTraceContextPropagator.getInstance().inject(Context.root().with(span), carrier, Map::put);
        return carrier.get("traceparent");
    }

    /** A context whose span is the one {@code traceparent} names; the root context when it is null or malformed. */
    public Context parent(String traceparent) {
        if (!on || traceparent == null || traceparent.isBlank()) {
            return Context.root();
        }
        return W3CTraceContextPropagator.getInstance().extract(Context.root(), Map.of("traceparent", traceparent), GETTER);
    }

    /**
     * The log event with the span's {@code trace_id} and {@code span_id} as key-value pairs (fields of JSON log lines,
     * docs/OPERATIONS.md#logs), when the span is traced; unchanged otherwise.
     */
    public static org.slf4j.spi.LoggingEventBuilder ids(org.slf4j.spi.LoggingEventBuilder event, Span span) {
        SpanContext context = span.getSpanContext();
        return context.isValid() ? event.addKeyValue("trace_id", context.getTraceId()).addKeyValue("span_id", context.getSpanId())
                : event;
    }

    /** Sends what is buffered and stops (the node is stopping). */
    public void close() {
        if (sdk != null) {
            sdk.getSdkTracerProvider().forceFlush().join(5, TimeUnit.SECONDS);
            sdk.close();
        }
    }
}
