package io.clawfleet.shared.logging;

import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.encoder.EncoderBase;
import io.vertx.core.json.JsonObject;
import org.slf4j.event.KeyValuePair;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The nodes' log lines, in one of two formats chosen by {@code CLAWFLEET_LOG_FORMAT}:
 * <ul>
 *   <li>{@code text} (the default): one human line, {@code 12:00:00.000 INFO  [thread] logger - message [tenant: acme, chat: 42]};</li>
 *   <li>{@code json}: one JSON object a line for log collectors, with {@code ts} (UTC, ISO-8601), {@code level},
 *       {@code logger}, {@code thread}, {@code node} and {@code roles} of the JVM, {@code msg}, the message's
 *       bracketed context as fields of their own ({@code tenant}, {@code bot}, {@code chat}, {@code partition}, ...),
 *       MDC entries and SLF4J key-value pairs as fields too, and {@code error} with the stack trace.</li>
 * </ul>
 * Messages follow the code's convention of a lowercase sentence and one {@code [key: value, ...]} group of context;
 * no message text or secret is ever put in a log line, so the JSON carries none either.
 */
public final class LogEncoder extends EncoderBase<ILoggingEvent> {

    public static final String TEXT = "text";
    public static final String JSON = "json";
    /** The variable that chooses the format. */
    public static final String FORMAT_ENV = "CLAWFLEET_LOG_FORMAT";
    static final String TEXT_PATTERN = "%d{HH:mm:ss.SSS} %-5level [%thread] %logger{24} - %msg%n";

    /** A bracketed group of {@code key: value} pairs; keys are lowercase words; values may hold one level of [...]. */
    private static final Pattern CONTEXT = Pattern.compile("\\[([a-z][a-z _]*: (?:[^\\[\\]]|\\[[^\\[\\]]*])*)]");
    private static final Pattern PAIR_START = Pattern.compile("(?:^|, )([a-z][a-z _]*): ");
    private static final Set<String> RESERVED = Set.of("ts", "level", "logger", "thread", "node", "roles", "msg", "error");

    private static volatile String node;
    private static volatile List<String> roles = List.of();
    /** The format the node's configuration chose ({@code log.format}), over the encoder's own; null until then. */
    private static volatile String chosen;

    private String format = TEXT;
    private PatternLayout text;

    /** Names the node (and its roles) in every JSON line of this JVM from now on. */
    public static void node(String nodeId, List<String> nodeRoles) {
        node = nodeId;
        roles = List.copyOf(nodeRoles);
    }

    /**
     * Writes every line of this JVM in {@code format} from now on: a node's configuration file may set
     * {@code log.format}, which the logging set-up (reading only the environment) cannot see.
     */
    public static void use(String format) {
        if (check(format) != null) {
            throw new IllegalArgumentException(check(format));
        }
        chosen = format.strip().toLowerCase(Locale.ROOT);
    }

    /** Back to each encoder's own format, and no node named (for tests). */
    static void reset() {
        chosen = null;
        node = null;
        roles = List.of();
    }

    /** @return null when {@code value} (the variable's value, possibly null) names a format, else why not */
    public static String check(String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        String v = value.strip().toLowerCase(Locale.ROOT);
        return v.equals(TEXT) || v.equals(JSON) ? null
                : FORMAT_ENV + " must be " + TEXT + " or " + JSON + ", not '" + value.strip() + "'";
    }

    /** Set from the configuration file; an unknown value is reported and the text format used. */
    public void setFormat(String value) {
        String problem = check(value);
        if (problem != null) {
            addError(problem + "; writing text");
            format = TEXT;
        } else {
            format = value == null || value.isBlank() ? TEXT : value.strip().toLowerCase(Locale.ROOT);
        }
    }

    public String getFormat() {
        return format;
    }

    @Override
    public void start() {
        text = new PatternLayout();
        text.setContext(getContext());
        text.setPattern(TEXT_PATTERN);
        text.start();
        super.start();
    }

    @Override
    public void stop() {
        if (text != null) {
            text.stop();
        }
        super.stop();
    }

    @Override
    public byte[] headerBytes() {
        return null;
    }

    @Override
    public byte[] footerBytes() {
        return null;
    }

    @Override
    public byte[] encode(ILoggingEvent event) {
        String effective = chosen != null ? chosen : format;
        String line = JSON.equals(effective) ? json(event) + "\n" : text.doLayout(event);
        return line.getBytes(StandardCharsets.UTF_8);
    }

    /** The event as one JSON object (without the line end). */
    static String json(ILoggingEvent event) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("ts", Instant.ofEpochMilli(event.getTimeStamp()).toString());
        out.put("level", event.getLevel().toString());
        out.put("logger", event.getLoggerName());
        out.put("thread", event.getThreadName());
        if (node != null) {
            out.put("node", node);
            out.put("roles", roles);
        }
        String message = event.getFormattedMessage();
        out.put("msg", message);
        context(message).forEach((key, value) -> out.putIfAbsent(key, value));
        Map<String, String> mdc = event.getMDCPropertyMap();
        if (mdc != null) {
            mdc.forEach((key, value) -> put(out, key, value));
        }
        List<KeyValuePair> pairs = event.getKeyValuePairs();
        if (pairs != null) {
            pairs.forEach(pair -> put(out, pair.key, pair.value == null ? null : String.valueOf(pair.value)));
        }
        IThrowableProxy thrown = event.getThrowableProxy();
        if (thrown != null) {
            out.put("error", ThrowableProxyUtil.asString(thrown));
        }
        return new JsonObject(out).encode();
    }

    private static void put(Map<String, Object> out, String key, String value) {
        if (!RESERVED.contains(key)) {
            out.put(key, value);
        }
    }

    /**
     * The first {@code [key: value, ...]} group of a message as fields: keys in snake case, reserved names
     * ({@code node}, {@code msg}, ...) left to the line's own fields.
     */
    static Map<String, String> context(String message) {
        Map<String, String> fields = new LinkedHashMap<>();
        if (message == null) {
            return fields;
        }
        Matcher group = CONTEXT.matcher(message);
        if (!group.find()) {
            return fields;
        }
        String body = group.group(1);
        Matcher start = PAIR_START.matcher(body);
        String key = null;
        int valueFrom = 0;
        while (start.find()) {
            if (key != null) {
                add(fields, key, body.substring(valueFrom, start.start()));
            }
            key = start.group(1);
            valueFrom = start.end();
        }
        if (key != null) {
            add(fields, key, body.substring(valueFrom));
        }
        return fields;
    }

    private static void add(Map<String, String> fields, String key, String value) {
        String name = key.strip().replace(' ', '_');
        if (!RESERVED.contains(name)) {
            fields.putIfAbsent(name, value.strip());
        }
    }
}
