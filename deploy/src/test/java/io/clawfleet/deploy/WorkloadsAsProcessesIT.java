package io.clawfleet.deploy;

import io.clawfleet.deploy.LocalWorkloads.Image;
import io.clawfleet.deploy.LocalWorkloads.Running;
import io.clawfleet.deploy.LocalWorkloads.Workload;
import io.clawfleet.deploy.chaos.ChatLoad;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.clawfleet.deploy.YamlTree.kind;
import static io.clawfleet.deploy.YamlTree.list;
import static io.clawfleet.deploy.YamlTree.map;
import static io.clawfleet.deploy.YamlTree.maps;
import static io.clawfleet.deploy.YamlTree.name;
import static io.clawfleet.deploy.YamlTree.path;
import static io.clawfleet.deploy.YamlTree.selects;
import static io.clawfleet.deploy.YamlTree.yaml;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 18's proof of the deployment files without a container engine: the Compose file and the Kubernetes manifests
 * (rendered by {@code kubectl kustomize}) are read as Compose and the kubelet read them, and every Clawfleet workload
 * in them is started as a local process with the command, arguments and environment the files give it
 * ({@link LocalWorkloads} says what stands in for the container, and nothing else is changed), against embedded
 * PostgreSQL. Each test then checks that the cluster forms with the members the file declares, that messages sent
 * the way the file routes them are answered end to end, and that a worker stopped as the platform stops it (SIGTERM,
 * after the preStop hook, within the grace period) hands its partitions off with nothing lost, doubled or reordered.
 */
class WorkloadsAsProcessesIT {

    private static final Path DEPLOY = Files.isDirectory(Path.of("docker")) ? Path.of("") : Path.of("deploy");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final SecureRandom RANDOM = new SecureRandom();
    /** shell_exec offered to admin chats and run at once: the settings the test turns on to run a program. */
    private static final Map<String, String> SHELL_ON = Map.of("CLAWFLEET_ALLOW_SHELL", "true", "CLAWFLEET_AGENT_AUTONOMY", "full");
    private static final Pattern SERVICE_PORT = Pattern.compile("(?<![\\w.-])([a-z][a-z0-9-]*):(\\d+)");

    // ---------------------------------------------------------------------------------------------------------------
    // Compose

    @Test
    void theComposeFileRunsAsLocalProcesses() throws Exception {
        Map<String, String> dotEnv = LocalWorkloads.fillEnvExample(DEPLOY.resolve("compose/.env.example"));
        Map<String, Object> compose = map(LocalWorkloads.interpolateAll(
                yaml().load(Files.readString(DEPLOY.resolve("compose/compose.yaml"))), dotEnv));
        Map<String, Object> services = map(compose.get("services"));
        // The operator's compose.override.yaml for this trial: shell_exec on (it is off by default), without approvals.
        for (String service : List.of("worker-1", "worker-2", "sandbox")) {
            map(map(services.get(service)).get("environment")).putAll(SHELL_ON);
        }

        // PostgreSQL: the embedded server, with the database, user and password the file gives the postgres image.
        Map<String, Object> pgEnv = map(map(services.get("postgres")).get("environment"));
        DbUrl pg = TestDatabases.server().createOwnedDatabase((String) pgEnv.get("POSTGRES_DB"),
                (String) pgEnv.get("POSTGRES_USER"), (String) pgEnv.get("POSTGRES_PASSWORD"));

        // Every service its own address: its fixed one on the cluster network (172.28.0.N → 127.28.0.N), else one of
        // 127.28.1.0/24; a service's name (Compose's DNS) is put to that address wherever a value says NAME:PORT.
        Map<String, String> addresses = new LinkedHashMap<>();
        int other = 1;
        for (Map.Entry<String, Object> service : services.entrySet()) {
            Object fixed = path(map(service.getValue()), "networks", "cluster", "ipv4_address");
            addresses.put(service.getKey(), fixed != null ? composeAddress((String) fixed) : "127.28.1." + other++);
        }
        UnaryOperator<String> names = value -> {
            value = value.replaceAll("\\b172\\.28\\.0\\.(\\d+)\\b", "127.28.0.$1");
            return replaceServicePorts(value, (name, port) -> name.equals("postgres") ? "127.0.0.1:" + pg.port()
                    : addresses.containsKey(name) ? addresses.get(name) + ":" + port : null);
        };

        List<String> ours = new ArrayList<>();
        for (Map.Entry<String, Object> service : services.entrySet()) {
            Map<String, Object> s = map(service.getValue());
            if (!s.containsKey("profiles") && s.containsKey("build")) {
                ours.add(service.getKey());
            }
        }
        assertThat(ours).as("the services built from this repository")
                .contains("certs", "migrate", "gateway-1", "gateway-2", "worker-1", "worker-2", "scheduler", "sandbox", "mock-llm");

        Path root = Files.createDirectories(TestJar.logs().resolve("compose"));
        try (LocalWorkloads local = new LocalWorkloads(root, TestJar.path())) {
            for (String name : ours) {
                local.addAddress(addresses.get(name));
            }
            for (String name : startOrder(services, ours)) {
                Map<String, Object> service = map(services.get(name));
                // depends_on: wait for each dependency's condition first, as Compose does
                for (Map.Entry<String, Object> dependency : map(service.get("depends_on")).entrySet()) {
                    String condition = (String) map(dependency.getValue()).get("condition");
                    if (!ours.contains(dependency.getKey())) {
                        continue;   // postgres: the embedded server, up already
                    }
                    if ("service_completed_successfully".equals(condition)) {
                        local.awaitSuccess(dependency.getKey(), Duration.ofMinutes(2));
                    } else if ("service_healthy".equals(condition)) {
                        local.awaitReady(List.of(dependency.getKey()), Duration.ofMinutes(2));
                    }
                }
                local.start(composeWorkload(local, name, service, addresses.get(name), names));
            }
            // The one-shot services (restart: "no": the certificates, the migrations) and the mock model are not nodes.
            List<String> nodes = ours.stream().filter(n -> !"no".equals(String.valueOf(map(services.get(n)).get("restart")))
                    && !n.equals("mock-llm")).toList();
            local.awaitReady(nodes, Duration.ofMinutes(3));
            assertThat(local.get("migrate").process.exitValue()).as("migrate's exit code").isZero();
            assertThat(local.get("certs").process.exitValue()).as("certs' exit code").isZero();

            // The published port is nginx's round robin over its upstream servers: the load goes the same way.
            List<String> upstream = upstreamServers(DEPLOY.resolve("compose/nginx/clawfleet.conf"));
            assertThat(upstream).as("nginx's upstream servers").containsExactly("gateway-1:8080", "gateway-2:8080");
            List<String> gateways = upstream.stream().map(u -> "http://" + names.apply(u)).toList();
            String apiKey = dotEnv.get("CLAWFLEET_API_KEY");
            String operatorKey = dotEnv.get("CLAWFLEET_OPERATOR_KEY");

            awaitMembers(local, gateways.getFirst(), operatorKey,
                    nodes.stream().map(n -> (String) map(map(services.get(n)).get("environment")).get("CLAWFLEET_NODE_ID")).toList());

            assertThat(runThroughTheSandbox(gateways.getLast(), apiKey)).as("a program run on the sandbox node").contains("sandbox:x:65534");
            assertJsonLogs(local.get("worker-1").log, (String) map(map(services.get("worker-1")).get("environment")).get("CLAWFLEET_NODE_ID"));

            long grace = seconds((String) map(services.get("worker-1")).get("stop_grace_period"));
            stopAWorkerUnderLoad(local, gateways, apiKey, operatorKey, "worker-1", "worker-2", () -> {
                // docker compose stop worker-1: SIGTERM, SIGKILL after stop_grace_period
                local.get("worker-1").process.destroy();
                return grace;
            });
        }
    }

    /** Compose's command line and environment for one service, put to this machine. */
    private static Workload composeWorkload(LocalWorkloads local, String name, Map<String, Object> service, String address,
                                            UnaryOperator<String> names) throws IOException {
        Map<String, Object> build = map(service.get("build"));
        Image image = Image.of(DEPLOY.resolve("compose").resolve(String.valueOf(build.get("context")))
                .resolve(String.valueOf(build.get("dockerfile"))).normalize());
        // tmpfs and volumes: a folder each
        Map<String, Path> mounts = new LinkedHashMap<>();
        for (Object tmpfs : list(service.get("tmpfs"))) {
            String mount = ((String) tmpfs).split(":", 2)[0];
            mounts.put(mount, local.folder(name, mount));
        }
        for (Object volume : list(service.get("volumes"))) {
            String[] parts = ((String) volume).split(":");
            String mount = parts[1];
            // A named volume is one folder for every service that mounts it; a bind mount a folder of the service's.
            boolean named = !parts[0].startsWith(".") && !parts[0].startsWith("/");
            mounts.put(mount, named ? local.folder("volumes", "/" + parts[0]) : local.folder(name, mount));
        }
        // A volume mounted inside another's mount point (the certs service's role folders inside the CA's folder):
        // there in the outer folder, as the kernel shows it, through a link.
        for (Map.Entry<String, Path> outer : mounts.entrySet()) {
            for (Map.Entry<String, Path> inner : mounts.entrySet()) {
                if (inner.getKey().startsWith(outer.getKey() + "/")) {
                    Path link = outer.getValue().resolve(inner.getKey().substring(outer.getKey().length() + 1));
                    if (Files.isDirectory(link) && !Files.isSymbolicLink(link)) {
                        Files.delete(link);   // the image's empty mount point
                    }
                    if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                        Files.createDirectories(link.getParent());
                        Files.createSymbolicLink(link, inner.getValue());
                    }
                }
            }
        }
        UnaryOperator<String> paths = mountedPaths(mounts);
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JDK_JAVA_OPTIONS", image.jdkJavaOptions());
        map(service.get("environment")).forEach((k, v) -> env.put(k, paths.apply(names.apply(String.valueOf(v)))));
        env.put("CLAWFLEET_HTTP_HOST", address);
        env.replaceAll((k, v) -> v.equals("0.0.0.0") ? address : v);
        List<String> args = service.get("command") == null ? null
                : list(service.get("command")).stream().map(String::valueOf).map(a -> a.equals("0.0.0.0") ? address : a).toList();
        return new Workload(name, address, local.commandLine(image, args, paths), env);
    }

    /** The services in an order where each comes after those it depends on. */
    private static List<String> startOrder(Map<String, Object> services, List<String> ours) {
        List<String> order = new ArrayList<>();
        Set<String> left = new LinkedHashSet<>(ours);
        while (!left.isEmpty()) {
            String next = left.stream().filter(n -> map(map(services.get(n)).get("depends_on")).keySet().stream()
                    .noneMatch(left::contains)).findFirst().orElseThrow(() -> new IllegalStateException("depends_on has a cycle: " + left));
            order.add(next);
            left.remove(next);
        }
        return order;
    }

    /**
     * The manifests set {@code CLAWFLEET_LOG_FORMAT=json}: the worker's log lines are JSON objects for a collector,
     * with the node, its roles and the message's context as fields, and none is a text line. (The JVM's own
     * warnings, printed before logging starts, are neither.)
     */
    private static void assertJsonLogs(Path log, String nodeId) throws IOException {
        List<String> lines = Files.readAllLines(log);
        assertThat(lines).as("text log lines in %s", log)
                .noneMatch(line -> line.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} +(TRACE|DEBUG|INFO|WARN|ERROR) .*"));
        List<JsonObject> objects = lines.stream().filter(line -> line.startsWith("{")).map(JsonObject::new).toList();
        assertThat(objects).as("JSON log lines in %s", log).anySatisfy(line -> {
            assertThat(line.getString("msg")).startsWith("partitions acquired");
            assertThat(line.getString("node")).isEqualTo(nodeId);
            assertThat(line.getJsonArray("roles").getList()).containsExactly("worker");
            assertThat(line.getString("count")).matches("[0-9]+");
            assertThat(line.getString("ts")).endsWith("Z");
        });
    }

    private static List<String> upstreamServers(Path conf) throws IOException {
        String text = Files.readString(conf);
        Matcher block = Pattern.compile("upstream\\s+\\w+\\s*\\{([^}]*)}").matcher(text);
        assertThat(block.find()).as("an upstream block in " + conf).isTrue();
        List<String> servers = new ArrayList<>();
        Matcher server = Pattern.compile("(?m)^\\s*server\\s+(\\S+?)[\\s;]").matcher(block.group(1));
        while (server.find()) {
            servers.add(server.group(1));
        }
        return servers;
    }

    private static String composeAddress(String fixed) {
        assertThat(fixed).as("a fixed address on the cluster network").startsWith("172.28.0.");
        return "127.28.0." + fixed.substring("172.28.0.".length());
    }

    private static long seconds(String duration) {
        Matcher m = Pattern.compile("(\\d+)s").matcher(duration);
        assertThat(m.matches()).as("a duration in seconds: " + duration).isTrue();
        return Long.parseLong(m.group(1));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Kubernetes

    @Test
    void theKubernetesManifestsRunAsLocalProcesses() throws Exception {
        Path rendered = renderDevOverlay();
        List<Map<String, Object>> documents = new ArrayList<>();
        for (Object document : yaml().loadAll(Files.readString(rendered))) {
            if (document != null) {
                documents.add(map(document));
            }
        }
        Map<String, Map<String, String>> configMaps = new LinkedHashMap<>();
        for (Map<String, Object> document : ofKind(documents, "ConfigMap")) {
            Map<String, String> data = new LinkedHashMap<>();
            map(document.get("data")).forEach((k, v) -> data.put(k, String.valueOf(v)));
            configMaps.put(name(document), data);
        }

        Vertx vertx = Vertx.vertx();
        MockLlmServer model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        Path root = Files.createDirectories(TestJar.logs().resolve("kubernetes"));
        try {
            DbUrl db = TestDatabases.server().createOwnedDatabase("clawfleet_k8s", "clawfleet", hex(24));
            // The secrets the README has the operator create, with values made here (the database URL is this one).
            Map<String, Map<String, String>> secrets = readmeSecrets(db);
            String apiKey = secrets.get("clawfleet-gateway").get("CLAWFLEET_API_KEY");
            String operatorKey = secrets.get("clawfleet-gateway").get("CLAWFLEET_OPERATOR_KEY");
            // The operator's edits for a trial: the model (README: "base/config.yaml's clawfleet-llm if needed"), and two
            // workers (kubectl scale statefulset/clawfleet-worker --replicas=2) so that one can hand off to the other.
            configMaps.get("clawfleet-llm").put("CLAWFLEET_LLM_BASE_URL", "http://127.0.0.1:" + model.port() + "/v1");
            configMaps.get("clawfleet-llm").put("CLAWFLEET_LLM_MODEL", "mock");
            // ... and shell_exec on (off by default) without approvals, in the settings every node reads.
            configMaps.get("clawfleet-config").putAll(SHELL_ON);
            Map<String, Integer> replicas = new LinkedHashMap<>();
            List<Map<String, Object>> workloads = new ArrayList<>();
            for (Map<String, Object> document : documents) {
                if (Set.of("Job", "Deployment", "StatefulSet").contains(kind(document))) {
                    workloads.add(document);
                    Object count = path(document, "spec", "replicas");
                    replicas.put(name(document), kind(document).equals("Job") ? 1 : count == null ? 1 : ((Number) count).intValue());
                }
            }
            replicas.put("clawfleet-worker", 2);

            // Pods: names as the controllers make them (StatefulSet: NAME-i), an address each (the pod IP).
            List<Pod> pods = new ArrayList<>();
            int next = 10;
            for (Map<String, Object> workload : workloads) {
                for (int i = 0; i < replicas.get(name(workload)); i++) {
                    String podName = kind(workload).equals("Job") ? name(workload) : name(workload) + "-" + i;
                    pods.add(new Pod(podName, "127.29.0." + next++, workload));
                }
            }
            // The headless service's endpoints (publishNotReadyAddresses): the pods its selector picks, which its name
            // resolves to in cluster DNS; here in a hosts file the node JVMs resolve names with.
            Map<String, Object> headless = ofKind(documents, "Service").stream().filter(s -> "None".equals(path(s, "spec", "clusterIP")))
                    .findFirst().orElseThrow();
            assertThat(path(headless, "spec", "publishNotReadyAddresses")).as("the headless service lists pods before they are ready").isEqualTo(true);
            List<String> endpoints = pods.stream().filter(p -> selects(Map.of("matchLabels", path(headless, "spec", "selector")), p.labels()))
                    .map(Pod::address).toList();
            Path dns = standInDns(root, name(headless), endpoints);

            try (LocalWorkloads local = new LocalWorkloads(root, TestJar.path())) {
                for (Pod pod : pods) {
                    local.addAddress(pod.address());
                }
                Map<String, Workload> mains = new LinkedHashMap<>();
                // kubectl apply -k: everything at once. Each pod's init containers run to completion first (in
                // parallel across pods), then its container; the migration Job runs beside the nodes.
                List<Running> inits = new ArrayList<>();
                for (Pod pod : pods) {
                    for (Map<String, Object> init : maps(path(pod.workload(), "spec", "template", "spec", "initContainers"))) {
                        Workload w = container(local, pod, init, configMaps, secrets, dns);
                        inits.add(local.start(new Workload(pod.name() + "-init-" + init.get("name"), w.address(), w.command(), w.env())));
                    }
                    Map<String, Object> main = maps(path(pod.workload(), "spec", "template", "spec", "containers")).getFirst();
                    mains.put(pod.name(), container(local, pod, main, configMaps, secrets, dns));
                }
                for (Running init : inits) {
                    local.awaitSuccess(init.name(), Duration.ofMinutes(2));
                }
                for (Workload main : mains.values()) {
                    local.start(main);
                }
                local.awaitSuccess("clawfleet-migrate", Duration.ofMinutes(3));
                List<String> nodes = mains.keySet().stream().filter(n -> !n.equals("clawfleet-migrate")).toList();
                local.awaitReady(nodes, Duration.ofMinutes(3));

                String gateway = local.get("clawfleet-gateway-0").url();
                // Pods started together may first form more than one cluster (a node that looked the service up
                // before the others listened is alone); Hazelcast's merge checks look it up again and join them.
                awaitMembers(local, gateway, operatorKey, nodes);

                assertThat(runThroughTheSandbox(gateway, apiKey)).as("a program run on the sandbox node").contains("sandbox:x:65534");
                assertJsonLogs(local.get("clawfleet-worker-0").log, "clawfleet-worker-0");

                Pod worker = pods.stream().filter(p -> p.name().equals("clawfleet-worker-0")).findFirst().orElseThrow();
                Map<String, Object> podSpec = map(path(worker.workload(), "spec", "template", "spec"));
                long grace = ((Number) podSpec.get("terminationGracePeriodSeconds")).longValue();
                List<String> preStop = list(path(maps(podSpec.get("containers")).getFirst(), "lifecycle", "preStop", "exec", "command"))
                        .stream().map(String::valueOf).toList();
                List<String> gateways = nodes.stream().filter(n -> n.startsWith("clawfleet-gateway-")).map(n -> local.get(n).url()).toList();
                stopAWorkerUnderLoad(local, gateways, apiKey, operatorKey, "clawfleet-worker-0", "clawfleet-worker-1", () -> {
                    // kubectl delete pod: the preStop hook, then SIGTERM, SIGKILL when the grace period is over
                    long start = System.nanoTime();
                    Process hook = new ProcessBuilder(preStop).inheritIO().start();
                    assertThat(hook.waitFor(grace, TimeUnit.SECONDS)).as("preStop within the grace period").isTrue();
                    local.get("clawfleet-worker-0").process.destroy();
                    return grace - TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
                });
            }
        } finally {
            result(model.stop());
            result(vertx.close());
        }
    }

    /** A pod of a workload: its name (metadata.name) and its address (status.podIP). */
    private record Pod(String name, String address, Map<String, Object> workload) {
        Map<String, String> labels() {
            Map<String, String> labels = new LinkedHashMap<>();
            map(path(workload, "spec", "template", "metadata", "labels")).forEach((k, v) -> labels.put(k, String.valueOf(v)));
            return labels;
        }
    }

    /** The kubelet's command line and environment for one container of a pod, put to this machine. */
    private static Workload container(LocalWorkloads local, Pod pod, Map<String, Object> container,
                                      Map<String, Map<String, String>> configMaps, Map<String, Map<String, String>> secrets,
                                      Path dns) throws IOException {
        Map<String, Object> spec = map(path(pod.workload(), "spec", "template", "spec"));
        // Volumes: a folder each per pod, shared by its containers; config maps and secrets written into it as files.
        Map<String, Path> mounts = new LinkedHashMap<>();
        for (Map<String, Object> mount : maps(container.get("volumeMounts"))) {
            String volumeName = (String) mount.get("name");
            Map<String, Object> volume = maps(spec.get("volumes")).stream().filter(v -> volumeName.equals(v.get("name")))
                    .findFirst().orElseThrow(() -> new AssertionError(pod.name() + ": no volume " + volumeName));
            Path folder = local.folder(pod.name(), "/volumes/" + volumeName);
            Map<String, String> files = volume.containsKey("configMap") ? configMaps.get((String) path(volume, "configMap", "name"))
                    : volume.containsKey("secret") ? secrets.get((String) path(volume, "secret", "secretName")) : Map.of();
            assertThat(files).as(pod.name() + ": the data of volume " + volumeName).isNotNull();
            for (Map.Entry<String, String> file : files.entrySet()) {
                Files.writeString(folder.resolve(file.getKey()), file.getValue());
            }
            mounts.put((String) mount.get("mountPath"), folder);
        }
        UnaryOperator<String> paths = mountedPaths(mounts);

        String imageName = ((String) container.get("image")).split(":")[0];
        Image image = Image.of(DEPLOY.resolve(switch (imageName) {
            case "clawfleet" -> "docker/Dockerfile";
            case "clawfleet-sandbox" -> "docker/Dockerfile.sandbox";
            default -> throw new AssertionError("an image not built here: " + imageName);
        }));
        // Environment: the image's, then envFrom, then env (the kubelet's precedence)
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JDK_JAVA_OPTIONS", image.jdkJavaOptions());
        for (Map<String, Object> from : maps(container.get("envFrom"))) {
            String configMap = (String) path(from, "configMapRef", "name");
            String secret = (String) path(from, "secretRef", "name");
            Map<String, String> source = configMap != null ? configMaps.get(configMap) : secrets.get(secret);
            if (source == null && !Boolean.TRUE.equals(path(from, configMap != null ? "configMapRef" : "secretRef", "optional"))) {
                throw new AssertionError(pod.name() + ": envFrom names " + (configMap != null ? configMap : secret) + ", which nobody creates");
            }
            if (source != null) {
                source.forEach((name, value) -> env.put(name, paths.apply(value)));
            }
        }
        for (Map<String, Object> variable : maps(container.get("env"))) {
            String value = valueOf(pod, variable, configMaps, secrets);
            if (value != null) {
                env.put((String) variable.get("name"), paths.apply(value));
            }
        }
        env.put("CLAWFLEET_HTTP_HOST", pod.address());
        env.replaceAll((k, v) -> v.equals("0.0.0.0") ? pod.address() : v);
        // Cluster DNS: the JVM resolves names with the stand-in hosts file.
        env.merge("JDK_JAVA_OPTIONS", "-Djdk.net.hosts.file=" + dns, (fromImage, dnsFile) -> fromImage + " " + dnsFile);

        List<String> command;
        if (container.get("command") != null) {
            command = new ArrayList<>();
            for (Object part : list(container.get("command"))) {
                command.add(paths.apply(String.valueOf(part)));
            }
            for (Object part : list(container.get("args"))) {
                command.add(paths.apply(String.valueOf(part)));
            }
        } else {
            List<String> args = container.get("args") == null ? null : list(container.get("args")).stream().map(String::valueOf).toList();
            command = local.commandLine(image, args, paths);
        }
        return new Workload(pod.name(), pod.address(), command, env);
    }

    /** One {@code env} entry's value, as the kubelet resolves it; null for a missing optional reference. */
    private static String valueOf(Pod pod, Map<String, Object> variable, Map<String, Map<String, String>> configMaps,
                                  Map<String, Map<String, String>> secrets) {
        if (variable.containsKey("value")) {
            return String.valueOf(variable.get("value"));
        }
        Map<String, Object> from = map(variable.get("valueFrom"));
        if (from.containsKey("fieldRef")) {
            String field = (String) path(from, "fieldRef", "fieldPath");
            return switch (field) {
                case "metadata.name" -> pod.name();
                case "status.podIP" -> pod.address();
                default -> throw new AssertionError(pod.name() + ": a field this test does not stand in for: " + field);
            };
        }
        String kind = from.containsKey("secretKeyRef") ? "secretKeyRef" : "configMapKeyRef";
        Map<String, Object> ref = map(from.get(kind));
        Map<String, String> source = (kind.equals("secretKeyRef") ? secrets : configMaps).get((String) ref.get("name"));
        String value = source == null ? null : source.get((String) ref.get("key"));
        if (value == null && !Boolean.TRUE.equals(ref.get("optional"))) {
            throw new AssertionError(pod.name() + ": " + variable.get("name") + " wants " + ref.get("name") + "/" + ref.get("key")
                    + ", which the README does not have the operator create (the kubelet would not start the pod)");
        }
        return value;
    }

    /**
     * The secrets of the README's {@code kubectl create secret generic} lines, with values made here: hex for the
     * cluster secret and keys, a random 256-bit master key file, this database's URL; lines marked optional left out.
     */
    private static Map<String, Map<String, String>> readmeSecrets(DbUrl db) throws IOException {
        Map<String, Map<String, String>> secrets = new LinkedHashMap<>();
        String readme = Files.readString(DEPLOY.resolve("k8s/README.md"));
        // The certificates the README has the operator make: made here with the same command's CA code, into a folder
        // of the test's, for the --from-file=NAME=<folder>/... of the secrets.
        Matcher certs = Pattern.compile("(?m)^\\./clawfleet certs init --dir (\\S+) --issue (\\S+)$").matcher(readme);
        assertThat(certs.find()).as("a clawfleet certs init line in deploy/k8s/README.md").isTrue();
        String certsDir = certs.group(1);
        Path madeCerts = Files.createTempDirectory("clawfleet-k8s-certs-");
        io.clawfleet.deploy.certs.ClusterCa ca = io.clawfleet.deploy.certs.ClusterCa.create(madeCerts, "clawfleet",
                io.clawfleet.deploy.certs.ClusterCa.CA_DAYS);
        for (String role : certs.group(2).split(",")) {
            ca.issue(role, Set.of(io.clawfleet.shared.config.ClawfleetConfig.Role.valueOf(role.toUpperCase(java.util.Locale.ROOT))),
                    List.of(), io.clawfleet.deploy.certs.ClusterCa.NODE_DAYS);
        }
        Matcher line = Pattern.compile("(?m)create secret generic (\\S+) (.*)$").matcher(readme);
        while (line.find()) {
            if (line.group(2).contains("# optional")) {
                continue;
            }
            Map<String, String> data = new LinkedHashMap<>();
            Matcher key = Pattern.compile("--from-(literal|file)=([A-Za-z0-9_.]+)=(\\S*)").matcher(line.group(2));
            while (key.find()) {
                String name = key.group(2);
                if (key.group(1).equals("file") && key.group(3).startsWith(certsDir + "/")) {
                    data.put(name, Files.readString(madeCerts.resolve(key.group(3).substring(certsDir.length() + 1))));
                    continue;
                }
                data.put(name, switch (name) {
                    case "CLAWFLEET_DB_URL" -> db.url();
                    case "master.key" -> Base64.getEncoder().encodeToString(bytes(32));
                    case "CLAWFLEET_LLM_API_KEY" -> "unused-by-the-mock-model";
                    default -> hex(24);
                });
            }
            secrets.put(line.group(1), data);
        }
        assertThat(secrets).as("secrets in deploy/k8s/README.md").containsKeys("clawfleet-cluster", "clawfleet-db", "clawfleet-gateway");
        return secrets;
    }

    /**
     * A hosts file in which the headless service's name has the endpoints' addresses, as cluster DNS answers it
     * (and this machine's own name and localhost, which the JVM resolves too).
     */
    private static Path standInDns(Path root, String service, List<String> endpoints) throws IOException {
        StringBuilder hosts = new StringBuilder("127.0.0.1 localhost " + java.net.InetAddress.getLocalHost().getHostName() + "\n");
        for (String address : endpoints) {
            hosts.append(address).append(' ').append(service).append('\n');
        }
        return Files.writeString(root.resolve("cluster-dns.hosts"), hosts).toAbsolutePath();
    }

    /** deploy/k8s/overlays/dev rendered now with the kubectl on PATH, else as check.sh left it, else skipped. */
    private static Path renderDevOverlay() throws IOException, InterruptedException {
        Path out = Files.createDirectories(DEPLOY.resolve("target/manifests-it")).resolve("dev.yaml");
        try {
            Process kubectl = new ProcessBuilder("kubectl", "kustomize", DEPLOY.resolve("k8s/overlays/dev").toString())
                    .redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            if (kubectl.waitFor(2, TimeUnit.MINUTES) && kubectl.exitValue() == 0) {
                return out;
            }
            throw new AssertionError("kubectl kustomize deploy/k8s/overlays/dev failed");
        } catch (IOException noKubectl) {
            Path checked = DEPLOY.resolve("target/manifests/dev.yaml");
            Assumptions.assumeTrue(Files.isRegularFile(checked),
                    "no kubectl on PATH and no manifests rendered by deploy/manifests-test/check.sh: nothing to run");
            return checked;
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // What both check

    private interface Stop {
        /** Stops the worker as the platform does; returns the seconds left before the platform would kill it. */
        long stop() throws Exception;
    }

    /**
     * Chats flow through the gateways; the first worker is stopped; it must exit within the time left, the second
     * must own every partition, and every message accepted must have been answered once, in order.
     */
    private static void stopAWorkerUnderLoad(LocalWorkloads local, List<String> gateways, String apiKey, String operatorKey,
                                             String stopped, String survivor, Stop stop) throws Exception {
        String gateway = gateways.getFirst();
        Await.until("partitions split between " + stopped + " and " + survivor, Duration.ofSeconds(90), () -> {
            JsonObject owners = owners(gateway, operatorKey);
            return owners.getInteger(stopped, 0) > 0 && owners.getInteger(survivor, 0) > 0;
        });
        AtomicInteger next = new AtomicInteger();
        ChatLoad load = new ChatLoad(() -> gateways.get(Math.floorMod(next.getAndIncrement(), gateways.size())), apiKey, "deploy");
        try {
            load.start(10, Integer.MAX_VALUE, 200);
            // 50 messages a second: what 6 to 7 node JVMs on the 2 cores of a test machine answer without a queue
            Await.until("the load to be flowing", Duration.ofSeconds(60), () -> load.sent() >= 50);
            int before = load.sent();
            int partitions = cluster(gateway, operatorKey).getInteger("partitionCount");
            long left = stop.stop();
            Process process = local.get(stopped).process;
            long started = System.nanoTime();
            boolean exited = process.waitFor(Math.max(left, 1), TimeUnit.SECONDS);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertThat(exited).as(stopped + " exits before the platform would kill it (" + left + " s)\n" + local.tails()).isTrue();
            System.out.printf("%s stopped in %d ms (exit %d)%n", stopped, tookMs, process.exitValue());
            Await.until(survivor + " owning every partition", Duration.ofSeconds(60), () -> {
                JsonObject owners = owners(gateway, operatorKey);
                return owners.size() == 1 && owners.getInteger(survivor, 0) == partitions;
            });
            Await.until("messages accepted after the stop", Duration.ofSeconds(60), () -> load.sent() > before + 50);
            load.stopSending();
            load.awaitSent(Duration.ofMinutes(1));
            ChatLoad.Verdict verdict = load.verify(Duration.ofMinutes(2));
            System.out.printf("%d messages in %d chats, reply p50 %d ms, p99 %d ms, longest %d ms%n", verdict.messages(),
                    verdict.chats(), verdict.p50LatencyMs(), verdict.p99LatencyMs(), verdict.maxLatencyMs());
            assertThat(verdict.messages()).isGreaterThan(150);
            assertThat(verdict.lost()).as("lost").isEmpty();
            assertThat(verdict.duplicated()).as("duplicated").isEmpty();
            assertThat(verdict.outOfOrder()).as("out of order").isEmpty();
        } finally {
            load.close();
        }
    }

    /**
     * A chat made admin by the operator asks the mock model for {@code shell_exec}, which only a sandbox node runs:
     * the reply carries the program's output, here the run's own {@code /etc/passwd} (its user, not this machine's). The gateway, the worker, the sandbox node and the bus between them as
     * the file wires them.
     */
    private static String runThroughTheSandbox(String gateway, String apiKey) throws Exception {
        String chat = "deploy-admin-" + UUID.randomUUID();
        reply(gateway, apiKey, chat, "hello");
        HttpResponse<String> role = call(gateway, apiKey, "PUT", "/api/v1/chats/api/" + chat + "/role", new JsonObject().put("role", "admin"));
        assertThat(role.statusCode()).as(role.body()).isEqualTo(200);
        return reply(gateway, apiKey, chat, "call:shell_exec " + new JsonObject().put("command", "cat /etc/passwd").encode());
    }

    /** Sends {@code text} to the chat and waits for the reply to it. */
    private static String reply(String gateway, String apiKey, String chat, String text) throws Exception {
        HttpResponse<String> sent = call(gateway, apiKey, "POST", "/api/v1/messages", new JsonObject().put("chatId", chat)
                .put("senderId", "u").put("messageId", UUID.randomUUID().toString()).put("text", text));
        assertThat(sent.statusCode()).as(sent.body()).isBetween(200, 202);
        String id = new JsonObject(sent.body()).getString("id");
        String[] reply = {null};
        Await.until("the reply to " + id, Duration.ofSeconds(90), () -> {
            try {
                new JsonObject(call(gateway, apiKey, "GET", "/api/v1/chats/" + chat + "/replies?wait=5", null).body())
                        .getJsonArray("replies").stream().map(JsonObject.class::cast).filter(r -> id.equals(r.getString("inReplyTo")))
                        .findFirst().ifPresent(r -> reply[0] = r.getString("text"));
            } catch (Exception e) {
                return false;
            }
            return reply[0] != null;
        });
        return reply[0];
    }

    private static HttpResponse<String> call(String gateway, String apiKey, String method, String path, JsonObject body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(gateway + path))
                .header("authorization", "Bearer " + apiKey).header("content-type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The operator's view of the cluster. */
    private static JsonObject cluster(String gateway, String operatorKey) throws IOException, InterruptedException {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create(gateway + "/api/v1/cluster"))
                .header("authorization", "Bearer " + operatorKey).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return new JsonObject(response.body());
    }

    /** Partitions per owner, or nothing while the gateway does not answer. */
    private static JsonObject owners(String gateway, String operatorKey) {
        try {
            return cluster(gateway, operatorKey).getJsonObject("partitionsByOwner", new JsonObject());
        } catch (Exception | AssertionError e) {
            return new JsonObject();
        }
    }

    /**
     * Waits up to 60 s until the gateway's view of the cluster has exactly these members, and says which if not. A node
     * whose member the cluster shut down meanwhile (status 3) is started again, as its platform would.
     */
    private static void awaitMembers(LocalWorkloads local, String gateway, String operatorKey, List<String> expected) {
        List<String> wanted = expected.stream().sorted().toList();
        List<List<String>> seen = new ArrayList<>(List.of(List.of()));
        try {
            Await.until("the members " + wanted, Duration.ofSeconds(60), () -> {
                try {
                    local.restartMembersLost();
                    seen.set(0, memberIds(cluster(gateway, operatorKey)));
                } catch (Exception | AssertionError e) {
                    return false;
                }
                return seen.getFirst().equals(wanted);
            });
        } catch (AssertionError timedOut) {
            throw new AssertionError("members of the cluster after 60 s: " + seen.getFirst() + ", expected " + wanted, timedOut);
        }
    }

    private static List<String> memberIds(JsonObject cluster) {
        return cluster.getJsonArray("members").stream().map(m -> ((JsonObject) m).getString("nodeId"))
                .sorted(Comparator.naturalOrder()).toList();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Small helpers

    /**
     * Puts each mount point, at the start of a value or after '=' or ':', to its folder; in one pass, so that a folder
     * (under /tmp) is not taken for a mount point (/tmp) in turn.
     */
    private static UnaryOperator<String> mountedPaths(Map<String, Path> mounts) {
        if (mounts.isEmpty()) {
            return UnaryOperator.identity();
        }
        List<String> longestFirst = new ArrayList<>(mounts.keySet());
        longestFirst.sort(Comparator.comparingInt(String::length).reversed());
        Pattern mountPoint = Pattern.compile("(?<=^|[=:])(" + String.join("|", longestFirst.stream().map(Pattern::quote).toList()) + ")(?=/|$)");
        return value -> mountPoint.matcher(value).replaceAll(m -> Matcher.quoteReplacement(mounts.get(m.group(1)).toAbsolutePath().toString()));
    }

    private interface ServicePort {
        /** The replacement of {@code name:port}, or null to keep it. */
        String replace(String name, String port);
    }

    private static String replaceServicePorts(String value, ServicePort replacement) {
        Matcher m = SERVICE_PORT.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String local = replacement.replace(m.group(1), m.group(2));
            m.appendReplacement(out, Matcher.quoteReplacement(local != null ? local : m.group()));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static byte[] bytes(int n) {
        byte[] bytes = new byte[n];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private static String hex(int n) {
        return HexFormat.of().formatHex(bytes(n));
    }

    private static List<Map<String, Object>> ofKind(List<Map<String, Object>> documents, String kind) {
        return documents.stream().filter(d -> kind.equals(kind(d))).toList();
    }
}
