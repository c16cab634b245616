package io.clawfleet.shared.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.event.KeyValuePair;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class LogEncoderTest {

    private final LoggerContext context = new LoggerContext();
    private final Logger logger = context.getLogger("io.clawfleet.worker.PartitionOwnership");

    LogEncoderTest() {
        context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
    }

    @AfterEach
    void reset() {
        LogEncoder.reset();
    }

    private LogEncoder encoder(String format) {
        LogEncoder encoder = new LogEncoder();
        encoder.setContext(context);
        encoder.setFormat(format);
        encoder.start();
        return encoder;
    }

    private LoggingEvent event(Level level, String message, Throwable thrown, Object... arguments) {
        LoggingEvent event = new LoggingEvent("test", logger, level, message, thrown, arguments);
        event.setTimeStamp(1_764_460_800_123L);
        event.setThreadName("vert.x-eventloop-thread-1");
        return event;
    }

    private static String line(LogEncoder encoder, LoggingEvent event) {
        return new String(encoder.encode(event), StandardCharsets.UTF_8);
    }

    @Test
    void aJsonLineCarriesTheNodeAndTheMessagesContextAsFields() {
        LogEncoder.node("worker-1", List.of("gateway", "worker"));
        String line = line(encoder("json"), event(Level.INFO,
                "a message started {} times before runs alone [tenant: {}, chat: {}, partition: {}, inbox: {}]", null,
                3, "acme", "tg:42", 17, 9001));

        assertThat(line).endsWith("}\n").doesNotContain("\n{");
        JsonObject json = new JsonObject(line);
        assertThat(json.getString("ts")).isEqualTo("2025-11-30T00:00:00.123Z");
        assertThat(json.getString("level")).isEqualTo("INFO");
        assertThat(json.getString("logger")).isEqualTo("io.clawfleet.worker.PartitionOwnership");
        assertThat(json.getString("thread")).isEqualTo("vert.x-eventloop-thread-1");
        assertThat(json.getString("node")).isEqualTo("worker-1");
        assertThat(json.getJsonArray("roles").getList()).containsExactly("gateway", "worker");
        assertThat(json.getString("msg")).isEqualTo("a message started 3 times before runs alone "
                + "[tenant: acme, chat: tg:42, partition: 17, inbox: 9001]");
        assertThat(json.getString("tenant")).isEqualTo("acme");
        assertThat(json.getString("chat")).isEqualTo("tg:42");
        assertThat(json.getString("partition")).isEqualTo("17");
        assertThat(json.getString("inbox")).isEqualTo("9001");
    }

    @Test
    void contextKeysOfManyWordsBecomeSnakeCaseAndTheLinesOwnFieldsWin() {
        LogEncoder.node("gw-1", List.of("gateway"));
        JsonObject json = new JsonObject(line(encoder("json"), event(Level.INFO,
                "tenant deleted [tenant: {}, node: {}, rows so far: {}, msg: {}]", null, "big", "gw-2", 20000, "x")));
        assertThat(json.getString("rows_so_far")).isEqualTo("20000");
        assertThat(json.getString("node")).as("the JVM's node, not a value the message names").isEqualTo("gw-1");
        assertThat(json.getString("msg")).startsWith("tenant deleted [");
    }

    @Test
    void aValueWithCommasAndAReasonAfterTheGroupAreKeptApart() {
        Map<String, String> fields = LogEncoder.context(
                "code skill not offered [tenant: acme, file: skills/a, b.py]: it declares no tools [sic]");
        assertThat(fields).containsExactly(Map.entry("tenant", "acme"), Map.entry("file", "skills/a, b.py"));
        assertThat(LogEncoder.context("event bus over mutual TLS [certificate: O=clawfleet,CN=worker, members: [worker, gateway], "
                + "expires: 2027-12-31T21:26:38Z]")).containsExactly(Map.entry("certificate", "O=clawfleet,CN=worker"),
                Map.entry("members", "[worker, gateway]"), Map.entry("expires", "2027-12-31T21:26:38Z"));
        assertThat(LogEncoder.context("no context here")).isEmpty();
        assertThat(LogEncoder.context("a list [1, 2, 3] then [bot: b1]")).containsExactly(Map.entry("bot", "b1"));
    }

    @Test
    void anErrorCarriesItsStackTraceAndQuotesAndNewLinesAreEscaped() {
        String line = line(encoder("json"), event(Level.ERROR, "sandbox node failed a run [tenant: {}]: {}",
                new IllegalStateException("disk \"full\"\nreally"), "acme", "no space"));
        assertThat(line.indexOf('\n')).isEqualTo(line.length() - 1);
        JsonObject json = new JsonObject(line);
        assertThat(json.getString("level")).isEqualTo("ERROR");
        assertThat(json.getString("error")).startsWith("java.lang.IllegalStateException: disk \"full\"\nreally")
                .contains("at io.clawfleet.shared.logging.LogEncoderTest");
        assertThat(json.containsKey("node")).as("no node named yet").isFalse();
    }

    @Test
    void mdcEntriesAndKeyValuePairsAreFieldsToo() {
        LoggingEvent event = event(Level.WARN, "reply late", null);
        event.setMDCPropertyMap(Map.of("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"));
        event.addKeyValuePair(new KeyValuePair("bot", "b7"));
        event.addKeyValuePair(new KeyValuePair("level", "spoofed"));
        JsonObject json = new JsonObject(line(encoder("json"), event));
        assertThat(json.getString("trace_id")).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(json.getString("bot")).isEqualTo("b7");
        assertThat(json.getString("level")).isEqualTo("WARN");
    }

    @Test
    void textIsTheDefaultAndTheNodesChoiceSwitchesEveryEncoder() {
        LogEncoder encoder = encoder(null);
        assertThat(line(encoder, event(Level.INFO, "partitions acquired [node: {}]", null, "w-1")))
                .matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  \\[vert.x-eventloop-thread-1] i.c.w.PartitionOwnership"
                        + " - partitions acquired \\[node: w-1]\\n");
        LogEncoder.use("JSON");
        assertThat(new JsonObject(line(encoder, event(Level.INFO, "x", null))).getString("msg")).isEqualTo("x");
    }

    @Test
    void anUnknownFormatIsNamedAndTheLinesStayReadable() {
        assertThat(LogEncoder.check("xml")).isEqualTo("CLAWFLEET_LOG_FORMAT must be text or json, not 'xml'");
        assertThat(LogEncoder.check(" Json ")).isNull();
        assertThat(LogEncoder.check(null)).isNull();
        LogEncoder encoder = encoder("xml");
        assertThat(encoder.getFormat()).isEqualTo("text");
        assertThat(context.getStatusManager().getCopyOfStatusList()).anySatisfy(status ->
                assertThat(status.getMessage()).contains("not 'xml'"));
        assertThat(line(encoder, event(Level.INFO, "still here", null))).endsWith(" - still here\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> LogEncoder.use("yaml"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not 'yaml'");
    }
}
