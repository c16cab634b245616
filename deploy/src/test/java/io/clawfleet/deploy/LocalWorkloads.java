package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the workloads of a deployment file (a Compose service, a Kubernetes container) as local processes, for the
 * proof of the deployment files without a container engine ({@link WorkloadsAsProcessesIT}).
 *
 * <p>A container gives its process things a plain process on this machine lacks; each is made up for here by one
 * explicit translation, and nothing else about the workload is changed:
 * <ul>
 *   <li>its own network namespace: each workload gets its own address on the loopback interface (added with
 *       {@code ip addr add}, which needs root, and removed on {@link #close()}), so every node keeps the ports the
 *       file gives it, and {@code CLAWFLEET_HTTP_HOST} is that address, as is any value or argument 0.0.0.0 (the
 *       management listener's host, say: in a container 0.0.0.0 means that container's interfaces only). Added to an interface, not merely routed to {@code lo}: Hazelcast binds
 *       only to an address some interface has;</li>
 *   <li>the image: the Dockerfile's {@code ENTRYPOINT}, {@code CMD} and {@code JDK_JAVA_OPTIONS} are read from the
 *       Dockerfile itself, with its paths ({@code /opt/java/bin/java}, {@code /opt/clawfleet/clawfleet.jar}) put to
 *       this JDK and the jar just built;</li>
 *   <li>its file system: every mounted path (a volume, a tmpfs, a secret) becomes a folder of its own, in arguments
 *       and environment values alike;</li>
 *   <li>one property is added: the node ends with the test's JVM, even if that one is killed.</li>
 * </ul>
 */
final class LocalWorkloads implements AutoCloseable {

    /** The image's own paths, as the Dockerfiles write them. */
    static final String IMAGE_JAVA = "/opt/java/bin/java";
    static final String IMAGE_JAR = "/opt/clawfleet/clawfleet.jar";

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final SecureRandom RANDOM = new SecureRandom();

    /** One image, as its Dockerfile builds it: the exec-form {@code ENTRYPOINT} and {@code CMD}, and its JVM options. */
    record Image(List<String> entrypoint, List<String> cmd, String jdkJavaOptions) {

        static Image of(Path dockerfile) throws IOException {
            String text = Files.readString(dockerfile).replaceAll("\\\\\\n", " ");
            Matcher options = Pattern.compile("JDK_JAVA_OPTIONS=\"([^\"]*)\"").matcher(text);
            return new Image(execForm(text, "ENTRYPOINT"), execForm(text, "CMD"), options.find() ? options.group(1) : null);
        }

        /** The last top-level instruction's JSON array (a {@code CMD} inside {@code HEALTHCHECK} does not count). */
        private static List<String> execForm(String text, String instruction) {
            Matcher m = Pattern.compile("(?m)^" + instruction + "\\s+(\\[.*])\\s*$").matcher(text);
            String last = null;
            while (m.find()) {
                last = m.group(1);
            }
            if (last == null) {
                throw new IllegalStateException("no exec-form " + instruction + " in the Dockerfile");
            }
            return new JsonArray(last).stream().map(String.class::cast).toList();
        }
    }

    /** A workload as a container engine would start it: the whole command line and the whole environment. */
    record Workload(String name, String address, List<String> command, Map<String, String> env) {
    }

    /** A started workload. */
    static final class Running {
        final Workload workload;
        final Process process;
        final Path log;

        private Running(Workload workload, Process process, Path log) {
            this.workload = workload;
            this.process = process;
            this.log = log;
        }

        String name() {
            return workload.name();
        }

        /** {@code http://address:port} of its HTTP listener ({@code CLAWFLEET_HTTP_PORT}). */
        String url() {
            return "http://" + workload.address() + ":" + workload.env().getOrDefault("CLAWFLEET_HTTP_PORT", "8080");
        }

        boolean ready() {
            try {
                HttpResponse<Void> response = HTTP.send(HttpRequest.newBuilder(URI.create(url() + "/readyz"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding());
                return response.statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    private final Path logs;
    private final Path root;
    private final Path jar;
    private final Map<String, Running> running = new LinkedHashMap<>();
    private final Map<String, Integer> memberLostRestarts = new java.util.HashMap<>();
    private final List<String> added = new ArrayList<>();

    /**
     * @param logs a folder for the workloads' logs; their file systems are made in a new folder under the system's
     *             temporary folder, which every uid may traverse (a sandbox node run as root checks that the uid its
     *             runs drop to can reach its run folder), and removed on {@link #close()}
     */
    LocalWorkloads(Path logs, Path jar) throws IOException {
        this.logs = Files.createDirectories(logs);
        this.root = Files.createTempDirectory("clawfleet-workloads-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        this.jar = jar;
    }

    /**
     * Puts {@code address} (of 127.0.0.0/8) on the loopback interface, as a container's own interface; skips the
     * test (with the reason) where that is not allowed.
     */
    void addAddress(String address) throws IOException, InterruptedException {
        if (!address.startsWith("127.") || address.equals("127.0.0.1")) {
            throw new IllegalArgumentException("only 127.0.0.0/8 addresses other than 127.0.0.1: " + address);
        }
        Process ip;
        try {
            ip = new ProcessBuilder("ip", "address", "add", address + "/32", "dev", "lo").redirectErrorStream(true).start();
        } catch (IOException noIp) {
            org.junit.jupiter.api.Assumptions.abort("cannot give the workloads addresses of their own on lo: no `ip` command ("
                    + noIp.getMessage() + "); install iproute2");
            return;
        }
        String output = new String(ip.getInputStream().readAllBytes()).strip();
        // already there (a run killed before its cleanup): "File exists" in older iproute2, "Address already assigned" in newer
        if (ip.waitFor() != 0 && !output.contains("File exists") && !output.contains("already assigned")) {
            org.junit.jupiter.api.Assumptions.abort("cannot give the workloads addresses of their own on lo (`ip address add "
                    + address + "/32 dev lo`: " + output + "); this test needs root");
        }
        added.add(address);
    }

    /** The folder that stands for {@code path} (a mount point) in the workload {@code name}'s file system. */
    Path folder(String name, String path) throws IOException {
        return Files.createDirectories(root.resolve(name).resolve("fs" + path));
    }

    /**
     * The image's command line as a local one: {@code ENTRYPOINT} followed by {@code args} (a Compose
     * {@code command}, a container's {@code args}, else the image's {@code CMD}), with the image's paths put to this
     * JDK and the built jar, and each argument passed through {@code paths} (the mounts).
     */
    List<String> commandLine(Image image, List<String> args, UnaryOperator<String> paths) {
        List<String> command = new ArrayList<>();
        for (String part : image.entrypoint()) {
            command.add(switch (part) {
                case IMAGE_JAVA -> Path.of(System.getProperty("java.home"), "bin", "java").toString();
                case IMAGE_JAR -> jar.toString();
                default -> paths.apply(part);
            });
        }
        if (!command.getFirst().endsWith("/java")) {
            throw new IllegalStateException("the image's ENTRYPOINT does not start java: " + image.entrypoint());
        }
        command.add(1, "-D" + Main.EXIT_WITH_PARENT + "=" + ProcessHandle.current().pid());
        for (String arg : args == null ? image.cmd() : args) {
            command.add(paths.apply(arg));
        }
        return command;
    }

    /** Starts a workload; its output goes to {@code <root>/<name>.log}. */
    Running start(Workload workload) throws IOException {
        return start(workload, true);
    }

    /** @param freshLog false to append to the log of an earlier run of the workload (a restart) */
    Running start(Workload workload, boolean freshLog) throws IOException {
        Path log = logs.resolve(workload.name() + ".log");
        if (freshLog) {
            Files.deleteIfExists(log);
        }
        ProcessBuilder builder = new ProcessBuilder(workload.command()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .directory(Files.createDirectories(root.resolve(workload.name())).toFile());
        // Only what the file gives it (and PATH, HOME and the like from this machine): none of this JVM's settings.
        builder.environment().keySet().removeIf(k -> k.startsWith("CLAWFLEET_") || k.startsWith("JDK_JAVA_")
                || k.equals("JAVA_TOOL_OPTIONS") || k.equals("_JAVA_OPTIONS"));
        builder.environment().putAll(workload.env());
        Running run = new Running(workload, builder.start(), log);
        running.put(workload.name(), run);
        return run;
    }

    /**
     * Starts again, as the platform's restart policy would (at most twice each), every workload that exited because the
     * cluster shut its member down (status 3): a node that formed a cluster alone before the others listened, and whose
     * merge into them Hazelcast refused ("cluster state ... doesn't allow new members to join"). Called while waiting for
     * the cluster to form, after the workloads were ready once.
     */
    void restartMembersLost() throws IOException {
        for (Running run : List.copyOf(running.values())) {
            if (!run.process.isAlive() && run.process.exitValue() == Main.EXIT_MEMBER_LOST
                    && memberLostRestarts.merge(run.workload.name(), 1, Integer::sum) <= 2) {
                System.out.printf("%s exited with 3 (its cluster member was shut down); restarting it%n", run.workload.name());
                start(run.workload, false);
            }
        }
    }

    Running get(String name) {
        Running run = running.get(name);
        if (run == null) {
            throw new IllegalArgumentException("no workload " + name + " (started: " + running.keySet() + ")");
        }
        return run;
    }

    List<Running> all() {
        return List.copyOf(running.values());
    }

    /** Waits for a one-shot workload (a migration) and fails unless it exited 0. */
    void awaitSuccess(String name, Duration timeout) throws InterruptedException {
        Running run = get(name);
        if (!run.process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException(name + " did not finish within " + timeout + "\n" + tails());
        }
        if (run.process.exitValue() != 0) {
            throw new IllegalStateException(name + " exited with " + run.process.exitValue() + "\n" + tails());
        }
    }

    /**
     * Waits until every named workload answers {@code /readyz} with 200; fails at once if one exits, unless it exited
     * because the cluster shut its member down (status 3): that one is started again, as the platform's restart
     * policy would, at most twice.
     */
    void awaitReady(List<String> names, Duration timeout) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (String name : names) {
            Running run = get(name);
            int restarts = 0;
            while (!run.ready()) {
                if (!run.process.isAlive() && run.process.exitValue() == Main.EXIT_MEMBER_LOST && restarts < 2) {
                    restarts++;
                    System.out.printf("%s exited with 3 (its cluster member was shut down); restarting it%n", name);
                    run = start(run.workload, false);
                    continue;
                }
                if (!run.process.isAlive()) {
                    throw new IllegalStateException(name + " exited with " + run.process.exitValue() + "\n" + tails());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(name + " not ready within " + timeout + "\n" + tails());
                }
                Thread.sleep(250);
            }
        }
    }

    /** Waits until something accepts connections at {@code address:port}, as a TCP health check does. */
    void awaitListening(String name, String address, int port, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(address, port), 1_000);
                return;
            } catch (IOException e) {
                if (!get(name).process.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException(name + " does not listen on " + address + ":" + port + "\n" + tails());
                }
                Thread.sleep(250);
            }
        }
    }

    /** The last lines of every workload's log, for a failure's message. */
    String tails() {
        StringBuilder text = new StringBuilder();
        for (Running run : running.values()) {
            text.append("---- ").append(run.name()).append(" (").append(run.log).append(")\n")
                    .append(io.clawfleet.deploy.chaos.ClusterHarness.tail(run.log, 30)).append('\n');
        }
        return text.toString();
    }

    @Override
    public void close() throws InterruptedException {
        List<Running> reversed = new ArrayList<>(running.values());
        java.util.Collections.reverse(reversed);
        for (Running run : reversed) {
            run.process.destroy();
        }
        for (Running run : reversed) {
            if (!run.process.waitFor(40, TimeUnit.SECONDS)) {
                run.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        for (String address : added) {
            try {
                new ProcessBuilder("ip", "address", "del", address + "/32", "dev", "lo").inheritIO().start().waitFor();
            } catch (IOException e) {
                System.err.println("could not remove " + address + " from lo: " + e.getMessage());
            }
        }
        try (var files = Files.walk(root)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not remove " + root + ": " + e.getMessage());
        }
    }

    /**
     * Values for the empty settings of an {@code .env.example}, made as the comment above each says
     * ({@code # make it with: openssl rand -hex N} or {@code -base64 N}); settings with a value, and commented-out
     * ones, are left as they are (Compose then uses the file's defaults).
     */
    static Map<String, String> fillEnvExample(Path example) throws IOException {
        Map<String, String> env = new LinkedHashMap<>();
        Pattern recipe = Pattern.compile("make it with: openssl rand -(hex|base64) (\\d+)");
        Matcher last = null;
        for (String line : Files.readAllLines(example)) {
            Matcher m = recipe.matcher(line);
            if (m.find()) {
                last = m;
                continue;
            }
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int eq = line.indexOf('=');
            String name = line.substring(0, eq).strip();
            String value = line.substring(eq + 1).strip();
            if (value.isEmpty()) {
                if (last == null) {
                    throw new IllegalStateException(example + ": " + name + " is empty and no comment says how to make it");
                }
                byte[] bytes = new byte[Integer.parseInt(last.group(2))];
                RANDOM.nextBytes(bytes);
                value = last.group(1).equals("hex") ? HexFormat.of().formatHex(bytes) : Base64.getEncoder().encodeToString(bytes);
            }
            env.put(name, value);
            last = null;
        }
        return env;
    }

    /**
     * Compose's interpolation of one value: {@code ${NAME}}, {@code ${NAME:-default}}, {@code ${NAME:?error}} (fails
     * with the error when unset or empty) and {@code $$} for a dollar sign.
     */
    static String interpolate(String value, Map<String, String> env) {
        Matcher m = Pattern.compile("\\$\\$|\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\\?)([^}]*))?}").matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String replacement;
            if (m.group().equals("$$")) {
                replacement = "$";
            } else {
                String set = env.get(m.group(1));
                boolean empty = set == null || set.isEmpty();
                if (":?".equals(m.group(2)) && empty) {
                    throw new IllegalStateException("Compose refuses to start: " + m.group(3));
                }
                replacement = !empty ? set : ":-".equals(m.group(2)) ? m.group(3) : "";
            }
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** Applies {@link #interpolate} to every string of a parsed YAML tree. */
    @SuppressWarnings("unchecked")
    static Object interpolateAll(Object node, Map<String, String> env) {
        if (node instanceof String s) {
            return interpolate(s, env);
        }
        if (node instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            ((Map<String, Object>) map).forEach((k, v) -> copy.put(k, interpolateAll(v, env)));
            return copy;
        }
        if (node instanceof List<?> list) {
            return list.stream().map(v -> interpolateAll(v, env)).toList();
        }
        return node;
    }
}
