package io.clawfleet.shared.tracing;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The traceparent kept with a message names its span, and log lines written in a traced turn carry its ids. */
class TracingIdsTest {

    // A provider without a span processor hands out invalid (no-op) spans: the exporter makes it real.
    private final Tracing tracing = Tracing.of(OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
            .addSpanProcessor(SimpleSpanProcessor.create(InMemorySpanExporter.create())).build()).build());

    @Test
    void aTraceparentNamesItsSpanAndContinuesItsTrace() {
        Span intake = tracing.tracer().spanBuilder("clawfleet ingest").startSpan();
        String traceparent = tracing.traceparent(intake);
        assertThat(traceparent).matches("00-" + intake.getSpanContext().getTraceId() + "-" + intake.getSpanContext().getSpanId() + "-[0-9a-f]{2}");
        Span turn = tracing.tracer().spanBuilder("clawfleet turn").setParent(tracing.parent(traceparent)).startSpan();
        assertThat(turn.getSpanContext().getTraceId()).isEqualTo(intake.getSpanContext().getTraceId());
        assertThat(Span.fromContext(tracing.parent("not-a-traceparent")).getSpanContext().isValid()).isFalse();
        assertThat(Span.fromContext(tracing.parent(null)).getSpanContext().isValid()).isFalse();
    }

    @Test
    void logLinesOfATracedSpanCarryItsIdsAndOthersNone() {
        LoggerContext context = new LoggerContext();
        Logger log = context.getLogger("test");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.setContext(context);
        lines.start();
        log.addAppender(lines);
        Span span = tracing.tracer().spanBuilder("clawfleet turn").startSpan();

        Tracing.ids(log.atWarn(), span).log("turn failed [tenant: {}]: {}", "acme", "503");
        Tracing.ids(log.atWarn(), Span.getInvalid()).log("turn failed [tenant: {}]: {}", "acme", "503");

        assertThat(lines.list.get(0).getFormattedMessage()).isEqualTo("turn failed [tenant: acme]: 503");
        assertThat(lines.list.get(0).getKeyValuePairs()).extracting(pair -> pair.key + "=" + pair.value).containsExactly(
                "trace_id=" + span.getSpanContext().getTraceId(), "span_id=" + span.getSpanContext().getSpanId());
        assertThat(lines.list.get(1).getKeyValuePairs()).isNullOrEmpty();
    }
}
