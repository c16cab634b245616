package io.clawfleet.gateway;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The lines every logger of the JVM writes while attached: for tests that a secret reaches no log. */
final class CapturedLogs {

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    private CapturedLogs() {
    }

    static CapturedLogs attach() {
        CapturedLogs logs = new CapturedLogs();
        logs.appender.start();
        root().addAppender(logs.appender);
        return logs;
    }

    void detach() {
        root().detachAppender(appender);
    }

    List<ILoggingEvent> lines() {
        return appender.list;
    }

    /** Asserts that no line holds {@code secret}, in its message or its stack trace. */
    void assertNoneContains(String secret) {
        assertThat(appender.list).noneSatisfy(event -> assertThat(event.getFormattedMessage()
                + (event.getThrowableProxy() == null ? "" : ThrowableProxyUtil.asString(event.getThrowableProxy()))).contains(secret));
    }

    private static Logger root() {
        return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    }
}
