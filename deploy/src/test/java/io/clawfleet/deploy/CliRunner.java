package io.clawfleet.deploy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.stream.Stream;

/** Runs a {@code clawfleet} client command in this JVM against a test gateway, capturing its exit code and output. */
final class CliRunner {

    /** What one command returned and printed. */
    record Run(int exit, String out, String err) {
    }

    private final String url;
    private final String keyOption;

    /** {@code keyOption} is how the commands take their key: {@code --api-key} or {@code --operator-key}. */
    CliRunner(String url, String keyOption) {
        this.url = Objects.requireNonNull(url);
        this.keyOption = Objects.requireNonNull(keyOption);
    }

    /** Runs {@code clawfleet COMMAND ARGS... --url URL KEY-OPTION KEY}. */
    Run run(String command, String key, String... args) {
        String[] full = Stream.of(Stream.of(command), Arrays.stream(args), Stream.of("--url", url, keyOption, key))
                .flatMap(part -> part).toArray(String[]::new);
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try {
            int exit = Main.commandLine().execute(full);
            return new Run(exit, stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
