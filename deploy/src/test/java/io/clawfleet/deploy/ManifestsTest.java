package io.clawfleet.deploy;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static io.clawfleet.deploy.YamlTree.kind;
import static io.clawfleet.deploy.YamlTree.list;
import static io.clawfleet.deploy.YamlTree.map;
import static io.clawfleet.deploy.YamlTree.maps;
import static io.clawfleet.deploy.YamlTree.name;
import static io.clawfleet.deploy.YamlTree.path;
import static io.clawfleet.deploy.YamlTree.selects;
import static io.clawfleet.deploy.YamlTree.yaml;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Invariants of the deployment files: the Kubernetes manifests as {@code kubectl kustomize} renders them
 * ({@code deploy/manifests-test/check.sh} writes them to {@code deploy/target/manifests/}), the Compose file
 * and the Dockerfiles.
 */
class ManifestsTest {

    private static final Path DEPLOY = Files.isDirectory(Path.of("docker")) ? Path.of("") : Path.of("deploy");
    private static final Set<String> LONG_RUNNING = Set.of("Deployment", "StatefulSet");
    private static final Set<String> WORKLOADS = Set.of("Deployment", "StatefulSet", "Job");
    /** Settings that are not CLAWFLEET_ keys but that the image or the sandbox reads. */
    private static final Set<String> OTHER_VARIABLES = Set.of("JDK_JAVA_OPTIONS", "BRAVE_API_KEY");

    @Test
    void everyContainerHasResourcesAndAHardenedSecurityContextAndEveryServerContainerHasProbes() {
        for (Path file : renderedManifests()) {
            for (Map<String, Object> workload : workloads(file)) {
                String name = file.getFileName() + " " + kind(workload) + "/" + name(workload);
                Map<String, Object> pod = podSpec(workload);
                assertThat(pod.get("automountServiceAccountToken")).as(name + ": service-account token").isEqualTo(false);
                assertThat(pod).as(name + ": host namespaces").doesNotContainKeys("hostNetwork", "hostPID", "hostIPC");
                Map<String, Object> podSecurity = map(pod.get("securityContext"));
                assertThat(podSecurity.get("runAsNonRoot")).as(name + ": pod runAsNonRoot").isEqualTo(true);
                assertThat(map(podSecurity.get("seccompProfile")).get("type")).as(name + ": pod seccomp").isEqualTo("RuntimeDefault");
                List<Map<String, Object>> all = new ArrayList<>(maps(pod.get("containers")));
                all.addAll(maps(pod.get("initContainers")));
                for (Map<String, Object> container : all) {
                    String where = name + " container " + container.get("name");
                    Map<String, Object> security = map(container.get("securityContext"));
                    assertThat(security.get("runAsNonRoot")).as(where + ": runAsNonRoot").isEqualTo(true);
                    assertThat(security.get("allowPrivilegeEscalation")).as(where + ": allowPrivilegeEscalation").isEqualTo(false);
                    assertThat(security.get("readOnlyRootFilesystem")).as(where + ": readOnlyRootFilesystem").isEqualTo(true);
                    assertThat(security.get("privileged")).as(where + ": privileged").isNotEqualTo(true);
                    assertThat(list(map(security.get("capabilities")).get("drop"))).as(where + ": capabilities dropped").contains("ALL");
                    assertThat(map(security.get("capabilities"))).as(where + ": capabilities added").doesNotContainKey("add");
                    assertThat(map(map(security.get("seccompProfile"))).get("type")).as(where + ": seccomp").isEqualTo("RuntimeDefault");
                    Map<String, Object> resources = map(container.get("resources"));
                    for (String bound : List.of("requests", "limits")) {
                        assertThat(map(resources.get(bound))).as(where + ": resources." + bound).containsKeys("cpu", "memory");
                    }
                }
                if (LONG_RUNNING.contains(kind(workload))) {
                    for (Map<String, Object> container : maps(pod.get("containers"))) {
                        String where = name + " container " + container.get("name");
                        assertThat(path(container, "livenessProbe", "httpGet", "path")).as(where + ": liveness").isEqualTo("/livez");
                        assertThat(path(container, "readinessProbe", "httpGet", "path")).as(where + ": readiness").isEqualTo("/readyz");
                        assertThat(map(container.get("lifecycle"))).as(where + ": preStop").containsKey("preStop");
                    }
                    // The node drains for up to 30 s (Shutdown.DRAIN_SECONDS) after the preStop pause.
                    assertThat(((Number) pod.get("terminationGracePeriodSeconds")).longValue())
                            .as(name + ": terminationGracePeriodSeconds").isGreaterThan(Shutdown.DRAIN_SECONDS + 5);
                }
            }
        }
    }

    @Test
    void everyNetworkPolicyAndEveryPodPeerInOneSelectsPodsOfAWorkload() {
        for (Path file : renderedManifests()) {
            List<Map<String, String>> pods = workloads(file).stream().map(ManifestsTest::podLabels).toList();
            for (Map<String, Object> policy : ofKind(file, "NetworkPolicy")) {
                String name = file.getFileName() + " NetworkPolicy/" + name(policy);
                Map<String, Object> spec = map(policy.get("spec"));
                assertThat(pods).as(name + ": podSelector " + spec.get("podSelector"))
                        .anyMatch(labels -> selects(map(spec.get("podSelector")), labels));
                for (String direction : List.of("ingress", "egress")) {
                    for (Map<String, Object> rule : maps(spec.get(direction))) {
                        for (Map<String, Object> peer : maps(rule.get(direction.equals("ingress") ? "from" : "to"))) {
                            if (peer.containsKey("podSelector") && !peer.containsKey("namespaceSelector")) {
                                assertThat(pods).as(name + ": " + direction + " peer " + peer)
                                        .anyMatch(labels -> selects(map(peer.get("podSelector")), labels));
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void sandboxPodsTakeCallsOnlyFromWorkersAndReachNeitherTheDatabaseNorPrivateOrMetadataAddresses() {
        for (Path file : renderedManifests()) {
            Map<String, String> sandbox = podLabels(workload(file, "clawfleet-sandbox"));
            Map<String, String> worker = podLabels(workload(file, "clawfleet-worker"));
            List<Map<String, Object>> policies = ofKind(file, "NetworkPolicy").stream()
                    .map(policy -> map(policy.get("spec")))
                    .filter(spec -> selects(map(spec.get("podSelector")), sandbox)).toList();
            assertThat(policies).as(file + ": a policy limits the sandbox's egress")
                    .anyMatch(spec -> list(spec.get("policyTypes")).contains("Egress"));
            for (Map<String, Object> spec : policies) {
                for (Map<String, Object> rule : maps(spec.get("ingress"))) {
                    List<Map<String, Object>> from = maps(rule.get("from"));
                    assertThat(from).as(file + ": sandbox ingress names its sources").isNotEmpty();
                    if (ports(rule).contains(5801) || ports(rule).isEmpty()) {
                        assertThat(from).as(file + ": only workers reach the sandbox's event bus")
                                .allMatch(peer -> !peer.containsKey("namespaceSelector") && !peer.containsKey("ipBlock")
                                        && selects(map(peer.get("podSelector")), worker)
                                        && !selects(map(peer.get("podSelector")), podLabels(workload(file, "clawfleet-gateway"))));
                    }
                }
                for (Map<String, Object> rule : maps(spec.get("egress"))) {
                    List<Integer> ports = ports(rule);
                    assertThat(ports).as(file + ": every sandbox egress rule names its ports").isNotEmpty().doesNotContain(5432, 8080);
                    for (Map<String, Object> peer : maps(rule.get("to"))) {
                        if (peer.containsKey("ipBlock")) {
                            Map<String, Object> block = map(peer.get("ipBlock"));
                            assertThat(ports).as(file + ": sandbox to addresses: web ports only").isSubsetOf(80, 443);
                            if ("0.0.0.0/0".equals(block.get("cidr"))) {
                                assertThat(list(block.get("except"))).as(file + ": private, link-local (metadata) ranges excluded")
                                        .contains("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8");
                            }
                        } else if (peer.containsKey("namespaceSelector")) {
                            assertThat(ports).as(file + ": sandbox to other namespaces: DNS only").containsOnly(53);
                        } else {
                            assertThat(ports).as(file + ": sandbox to pods: cluster ports only").isSubsetOf(5701, 5801);
                            assertThat(podLabelsOf(file)).as(file + ": sandbox egress peer selects cluster members only")
                                    .filteredOn(labels -> selects(map(peer.get("podSelector")), labels))
                                    .allMatch(labels -> "true".equals(labels.get("clawfleet.io/cluster-member")));
                        }
                    }
                }
            }
            List<String> variables = env(podSpec(workload(file, "clawfleet-sandbox")));
            assertThat(variables).as(file + ": the sandbox holds no database, model or master key")
                    .doesNotContain("CLAWFLEET_DB_URL", "CLAWFLEET_LLM_API_KEY", "CLAWFLEET_MASTER_KEY", "CLAWFLEET_MASTER_KEY_FILE");
        }
    }

    @Test
    void disruptionBudgetsSelectPodsAndCoverEveryNodeRole() {
        for (Path file : renderedManifests()) {
            List<Map<String, Object>> budgets = ofKind(file, "PodDisruptionBudget");
            for (Map<String, Object> workload : workloads(file)) {
                if (LONG_RUNNING.contains(kind(workload))) {
                    assertThat(budgets).as(file + ": a budget for " + name(workload))
                            .anyMatch(budget -> selects(map(map(budget.get("spec")).get("selector")), podLabels(workload)));
                }
            }
            List<Map<String, String>> pods = workloads(file).stream().map(ManifestsTest::podLabels).toList();
            for (Map<String, Object> budget : budgets) {
                assertThat(pods).as(file + ": PodDisruptionBudget/" + name(budget) + " selects pods")
                        .anyMatch(labels -> selects(map(map(budget.get("spec")).get("selector")), labels));
            }
        }
    }

    @Test
    void theMigrationJobRunsMigrateAgainstTheDatabaseAndSandboxesHaveTheirOwnPoolInProduction() {
        for (Path file : renderedManifests()) {
            Map<String, Object> job = ofKind(file, "Job").stream().filter(j -> name(j).equals("clawfleet-migrate"))
                    .findFirst().orElseThrow(() -> new AssertionError(file + ": no Job clawfleet-migrate"));
            Map<String, Object> container = maps(podSpec(job).get("containers")).getFirst();
            assertThat(list(container.get("args"))).as(file + ": migrate job args").containsExactly("migrate");
            assertThat(env(podSpec(job))).as(file + ": migrate job env").contains("CLAWFLEET_DB_URL");
        }
        Path prod = DEPLOY.resolve("target/manifests/prod.yaml");
        Assumptions.assumeTrue(Files.isRegularFile(prod), "no rendered prod overlay");
        Map<String, Object> sandbox = podSpec(workload(prod, "clawfleet-sandbox"));
        assertThat(map(sandbox.get("nodeSelector"))).containsEntry("clawfleet.io/pool", "sandbox");
        assertThat(maps(sandbox.get("tolerations"))).anyMatch(t -> "clawfleet.io/pool".equals(t.get("key")));
    }

    @Test
    void everyVariableTheFilesSetIsASettingClawfleetReads() throws IOException {
        String configuration = Files.readString(DEPLOY.resolve("../docs/CONFIGURATION.md"));
        List<String> variables = new ArrayList<>();
        for (Path file : renderedManifests()) {
            for (Map<String, Object> workload : workloads(file)) {
                variables.addAll(env(podSpec(workload)));
            }
            ofKind(file, "ConfigMap").forEach(c -> variables.addAll(map(c.get("data")).keySet()));
        }
        for (Map<String, Object> service : maps(composeServices().values().stream().toList())) {
            variables.addAll(map(service.get("environment")).keySet());
        }
        assertThat(variables.stream().filter(v -> v.startsWith("CLAWFLEET_") || OTHER_VARIABLES.contains(v)).toList())
                .as("every variable set is a documented setting").isNotEmpty()
                .allMatch(v -> OTHER_VARIABLES.contains(v) || configuration.contains("`" + v + "`"));
    }

    /**
     * Hazelcast's Kubernetes DNS discovery: every long-running node pod is given (through a config map it reads) the
     * name of a headless service that selects it and lists pods before they are ready (a node is ready only after it
     * has joined), and no seed list competes with it.
     */
    @Test
    void everyNodePodFindsTheOthersThroughAHeadlessServiceThatSelectsIt() {
        for (Path file : renderedManifests()) {
            Map<String, Map<String, Object>> configMaps = new java.util.HashMap<>();
            ofKind(file, "ConfigMap").forEach(c -> configMaps.put(name(c), map(c.get("data"))));
            for (Map<String, Object> workload : workloads(file)) {
                if (!LONG_RUNNING.contains(kind(workload))) {
                    continue;
                }
                String where = file.getFileName() + " " + kind(workload) + "/" + name(workload);
                Map<String, Object> container = maps(podSpec(workload).get("containers")).getFirst();
                Map<String, Object> settings = new java.util.HashMap<>();
                for (Map<String, Object> from : maps(container.get("envFrom"))) {
                    settings.putAll(configMaps.getOrDefault((String) path(from, "configMapRef", "name"), Map.of()));
                }
                maps(container.get("env")).forEach(v -> settings.put((String) v.get("name"), v.get("value")));
                Object dns = settings.get("CLAWFLEET_CLUSTER_KUBERNETES_SERVICE_DNS");
                assertThat(dns).as(where + ": CLAWFLEET_CLUSTER_KUBERNETES_SERVICE_DNS").isNotNull();
                assertThat(settings).as(where + ": no other way to find members")
                        .doesNotContainKeys("CLAWFLEET_CLUSTER_MEMBERS", "CLAWFLEET_CLUSTER_MULTICAST", "CLAWFLEET_CLUSTER_KUBERNETES_SERVICE_NAME");
                Map<String, Object> service = ofKind(file, "Service").stream().filter(s -> name(s).equals(dns)).findFirst()
                        .orElseThrow(() -> new AssertionError(where + ": no Service " + dns));
                assertThat(path(service, "spec", "clusterIP")).as(dns + ": headless").isEqualTo("None");
                assertThat(path(service, "spec", "publishNotReadyAddresses")).as(dns + ": lists pods not ready yet").isEqualTo(true);
                assertThat(selects(Map.of("matchLabels", path(service, "spec", "selector")), podLabels(workload))).as(dns + " selects " + where).isTrue();
                assertThat(ports(map(service.get("spec")))).as(dns + ": the member port").contains(5701);
            }
        }
    }

    @Test
    void composeNodesStartAfterTheMigrationJoinBySeedAddressesAndKeepTheSandboxOffTheDatabase() {
        Map<String, Object> services = composeServices();
        Map<String, Object> sandbox = map(services.get("sandbox"));
        assertThat(map(sandbox.get("networks"))).as("sandbox networks").doesNotContainKey("db");
        assertThat(map(sandbox.get("environment"))).as("sandbox environment")
                .doesNotContainKeys("CLAWFLEET_DB_URL", "CLAWFLEET_LLM_API_KEY", "CLAWFLEET_MASTER_KEY");
        assertThat(map(map(services.get("postgres")).get("networks"))).as("postgres networks").containsOnlyKeys("db");
        int nodes = 0;
        for (var entry : services.entrySet()) {
            Map<String, Object> service = map(entry.getValue());
            Map<String, Object> env = map(service.get("environment"));
            if (!env.containsKey("CLAWFLEET_ROLES")) {
                continue;
            }
            nodes++;
            String host = (String) env.get("CLAWFLEET_CLUSTER_HOST");
            // Hazelcast drops seed host names that resolve to another address than its own interface.
            assertThat(((String) env.get("CLAWFLEET_CLUSTER_MEMBERS")).split(","))
                    .as(entry.getKey() + ": seeds are addresses").allMatch(seed -> seed.matches("\\d+\\.\\d+\\.\\d+\\.\\d+:\\d+"))
                    .contains(host + ":5701");
            assertThat(map(map(service.get("networks")).get("cluster")).get("ipv4_address")).as(entry.getKey() + ": address")
                    .isEqualTo(host);
            if (!entry.getKey().equals("sandbox")) {
                assertThat(path(service, "depends_on", "migrate", "condition")).as(entry.getKey() + ": waits for migrate")
                        .isEqualTo("service_completed_successfully");
            }
        }
        assertThat(nodes).as("gateways, workers, scheduler, sandbox").isEqualTo(6);
    }

    @Test
    void bothImagesAreBuiltAlikeAndStartTheJvmAsTheLauncherDoes() throws IOException {
        String node = Files.readString(DEPLOY.resolve("docker/Dockerfile"));
        String sandbox = Files.readString(DEPLOY.resolve("docker/Dockerfile.sandbox"));
        assertThat(between(sandbox, "# ---- build", "# ---- end of the build stage")).as("build stages")
                .isEqualTo(between(node, "# ---- build", "# ---- end of the build stage"));
        assertThat(between(sandbox, "ENTRYPOINT", "CMD")).as("entrypoints").isEqualTo(between(node, "ENTRYPOINT", "CMD"));
        String pom = Files.readString(DEPLOY.resolve("../pom.xml"));
        Matcher flags = Pattern.compile("<jdk.open.flags>(.*)</jdk.open.flags>").matcher(pom);
        assertThat(flags.find()).as("jdk.open.flags in the root pom").isTrue();
        String entrypoint = between(node, "ENTRYPOINT", "CMD").replaceAll("\"\\s*,\\s*\\\\?\\s*\"", " ");
        for (String flag : flags.group(1).split(" (?=--)")) {
            assertThat(entrypoint).as("the image's JVM flags").contains(flag);
        }
        assertThat(entrypoint).contains("--enable-native-access=ALL-UNNAMED", "-Dhazelcast.phone.home.enabled=false",
                "-Dhazelcast.logging.type=slf4j", "-jar /opt/clawfleet/clawfleet.jar");
        assertThat(node).contains("HEALTHCHECK", "/livez", "USER 10001:10001", "MaxRAMPercentage");
    }

    // ---- reading the files

    private static List<Path> renderedManifests() {
        Path dir = DEPLOY.resolve("target/manifests");
        List<Path> files;
        try (Stream<Path> listing = Files.isDirectory(dir) ? Files.list(dir) : Stream.empty()) {
            files = listing.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Assumptions.assumeFalse(files.isEmpty(), "no rendered manifests in deploy/target/manifests: run "
                + "'bash deploy/manifests-test/check.sh' first (it needs kubectl, or pip to install it)");
        return files;
    }

    private static List<Map<String, Object>> documents(Path file) {
        try {
            List<Map<String, Object>> documents = new ArrayList<>();
            for (Object document : yaml().loadAll(Files.readString(file))) {
                if (document != null) {
                    documents.add(map(document));
                }
            }
            return documents;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, Object> composeServices() {
        try {
            return map(map(yaml().load(Files.readString(DEPLOY.resolve("compose/compose.yaml")))).get("services"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<Map<String, Object>> ofKind(Path file, String kind) {
        return documents(file).stream().filter(d -> kind.equals(d.get("kind"))).toList();
    }

    private static List<Map<String, Object>> workloads(Path file) {
        List<Map<String, Object>> workloads = documents(file).stream().filter(d -> WORKLOADS.contains(kind(d))).toList();
        assertThat(workloads).as(file + ": workloads").isNotEmpty();
        return workloads;
    }

    private static Map<String, Object> workload(Path file, String name) {
        return workloads(file).stream().filter(w -> name(w).equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError(file + ": no workload " + name));
    }

    private static List<Map<String, String>> podLabelsOf(Path file) {
        return workloads(file).stream().map(ManifestsTest::podLabels).toList();
    }

    private static Map<String, Object> podSpec(Map<String, Object> workload) {
        return map(map(map(workload.get("spec")).get("template")).get("spec"));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> podLabels(Map<String, Object> workload) {
        return (Map<String, String>) (Map<?, ?>) map(map(map(map(workload.get("spec")).get("template")).get("metadata")).get("labels"));
    }

    private static List<String> env(Map<String, Object> pod) {
        List<String> names = new ArrayList<>();
        for (Map<String, Object> container : maps(pod.get("containers"))) {
            maps(container.get("env")).forEach(variable -> names.add((String) variable.get("name")));
        }
        return names;
    }

    private static List<Integer> ports(Map<String, Object> rule) {
        return maps(rule.get("ports")).stream().map(p -> ((Number) p.get("port")).intValue()).toList();
    }

    private static String between(String text, String from, String to) {
        int start = text.indexOf(from);
        int end = text.indexOf(to, start + from.length());
        assertThat(start).as("'" + from + "' in the file").isNotNegative();
        assertThat(end).as("'" + to + "' after '" + from + "'").isPositive();
        return text.substring(start, end);
    }
}
