package io.clawfleet.deploy.chaos;

import java.util.ArrayList;
import java.util.List;

/** The JVM flags a Clawfleet node needs (Hazelcast and Netty reach into JDK internals). */
public final class JvmFlags {

    private JvmFlags() {
    }

    public static List<String> forNodes() {
        // No --add-modules java.se (Hazelcast's documented set): a jar on the class path resolves every java.se module
        // already, and naming one turns off the JDK archive's full module graph (about 15 ms of each launch).
        List<String> flags = new ArrayList<>(List.of(
                "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
                "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens", "java.management/sun.management=ALL-UNNAMED",
                "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
                "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--enable-native-access=ALL-UNNAMED",
                "-Dhazelcast.phone.home.enabled=false",
                "-Dhazelcast.logging.type=slf4j"));
        if (Runtime.version().feature() >= 24) {
            flags.add("--sun-misc-unsafe-memory-access=allow");
        }
        return flags;
    }
}
