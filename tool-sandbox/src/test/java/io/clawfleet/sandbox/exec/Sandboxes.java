package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import org.junit.jupiter.api.Assumptions;

import java.nio.file.Path;
import java.util.Map;

/** Process sandboxes for tests, at the isolation level asked for; a level this host lacks skips the test. */
public final class Sandboxes {

    /** Set in this test JVM's environment by the build (surefire), so tests can look for it in what runs see. */
    public static final String CANARY_ENV = "CLAWFLEET_TEST_CANARY";

    private Sandboxes() {
    }

    /** @param overrides configuration keys as written in a file ({@code sandbox.cpuSeconds}) */
    public static ClawfleetConfig.Sandbox config(Map<String, String> overrides) {
        return ConfigLoader.load(null, Map.of(), overrides).sandbox();
    }

    /** What this host offers at {@code isolation}; skips the test when it cannot. */
    public static HostSupport host(Isolation isolation, ClawfleetConfig.Sandbox config) {
        HostSupport host;
        try {
            host = HostSupport.detect(isolation.id(), config.runAsUid(), config.runAsGid());
        } catch (IllegalStateException e) {
            Assumptions.abort("bubblewrap does not work on this host: " + e.getMessage());
            throw e;
        }
        Assumptions.assumeTrue(host.isolation() == isolation, () -> "this host cannot run at " + isolation + ": " + host.reason());
        return host;
    }

    public static ProcessSandbox sandbox(Isolation isolation, Path workRoot, Map<String, String> overrides) {
        ClawfleetConfig.Sandbox config = config(overrides);
        return new ProcessSandbox(host(isolation, config), config, workRoot);
    }

    /** The canary's value; the build sets it, so its absence is a broken build, not a skip. */
    public static String canary() {
        String value = System.getenv(CANARY_ENV);
        if (value == null || value.length() < 16) {
            throw new IllegalStateException(CANARY_ENV + " is not set in the test environment (see tool-sandbox/pom.xml)");
        }
        return value;
    }
}
