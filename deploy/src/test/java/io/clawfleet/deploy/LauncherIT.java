package io.clawfleet.deploy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The launcher script picks the JDK without launching a JVM for it when the JDK says its version in its {@code release}
 * file (each {@code java -version} was 40-60 ms of every start, once per installed JDK without JAVA_HOME), and still
 * asks the JVM when there is no such file, whatever JAVA_TOOL_OPTIONS makes it print first.
 */
class LauncherIT {

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aJdkWithAReleaseFileIsTakenWithoutAskingItsJvmForTheVersion(@TempDir Path dir) throws Exception {
        // given JAVA_HOME at a JDK whose release file names its version
        Path jdk = fakeJdk(dir, "JAVA_VERSION=\"" + Runtime.version().feature() + ".0.1\"\n");

        // when the launcher runs a command
        Process launcher = launch(jdk, null);

        // then that JDK runs it, and its JVM was launched once: for the command, not for -version
        assertThat(launcher.waitFor(50, TimeUnit.SECONDS)).isTrue();
        assertThat(new String(launcher.getInputStream().readAllBytes())).contains("clawfleet");
        assertThat(launcher.exitValue()).isZero();
        List<String> calls = Files.readAllLines(jdk.resolve("calls"));
        assertThat(calls).hasSize(1);
        assertThat(calls.get(0)).contains("-jar").endsWith("--version");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void withoutAReleaseFileTheJvmIsAskedAndJavaToolOptionsDoNotHideItsVersion(@TempDir Path dir) throws Exception {
        // given JAVA_HOME at a JDK without a release file, and JAVA_TOOL_OPTIONS set (the JVM prints "Picked up" first)
        Path jdk = fakeJdk(dir, null);

        // when the launcher runs a command
        Process launcher = launch(jdk, "-Dclawfleet.launcher.test=1");

        // then it asked the JVM for its version, took that JDK, and ran the command with it
        assertThat(launcher.waitFor(50, TimeUnit.SECONDS)).isTrue();
        String output = new String(launcher.getInputStream().readAllBytes());
        assertThat(launcher.exitValue()).as(output).isZero();
        List<String> calls = Files.readAllLines(jdk.resolve("calls"));
        assertThat(calls).hasSize(2);
        assertThat(calls.get(0)).isEqualTo("-version");
        assertThat(calls.get(1)).contains("-jar").endsWith("--version");
    }

    /** A JDK folder whose bin/java records its arguments and runs this test's JVM; {@code release} null leaves none. */
    private static Path fakeJdk(Path dir, String release) throws Exception {
        Path jdk = Files.createDirectories(dir.resolve("jdk"));
        Path bin = Files.createDirectories(jdk.resolve("bin"));
        Path realJava = Path.of(System.getProperty("java.home"), "bin", "java");
        Files.writeString(bin.resolve("java"), "#!/bin/sh\necho \"$*\" >> '" + jdk.resolve("calls") + "'\nexec '"
                + realJava + "' \"$@\"\n");
        Files.writeString(bin.resolve("javac"), "#!/bin/sh\nexit 0\n");
        for (String tool : List.of("java", "javac")) {
            Files.setPosixFilePermissions(bin.resolve(tool), PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        if (release != null) {
            Files.writeString(jdk.resolve("release"), release);
        }
        return jdk;
    }

    private static Process launch(Path jdk, String javaToolOptions) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("bash", TestJar.launcher().toString(), "--version").redirectErrorStream(true);
        builder.environment().put("JAVA_HOME", jdk.toString());
        if (javaToolOptions != null) {
            builder.environment().put("JAVA_TOOL_OPTIONS", javaToolOptions);
        } else {
            builder.environment().remove("JAVA_TOOL_OPTIONS");
        }
        return builder.start();
    }
}
