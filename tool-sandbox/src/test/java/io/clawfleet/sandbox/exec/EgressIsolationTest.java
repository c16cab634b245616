package io.clawfleet.sandbox.exec;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.testing.TestDatabases;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Issue 22: a run the policy grants egress gets the internet, not the control plane. From such a run (bubblewrap
 * plus its own network namespace by pasta) the embedded PostgreSQL, every TCP port listening on the host's
 * loopback or on all of its addresses, the host's own addresses, the metadata service and private ranges are
 * out of reach, and no process of the host shows its environment. The same probe at the {@code process}
 * level, which shares the host's network, reaches the database and the test's own server: the probe works,
 * so its failures under bubblewrap mean something.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EgressIsolationTest {

    /** Connects to each {@code host:port} argument; prints OPEN or CLOSED with the error, one line each. */
    private static final String PROBE = """
            for target in "$@"; do
              host=${target%:*}; port=${target##*:}
              if timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/tmp/err; then
                echo "OPEN $target"
              else
                echo "CLOSED $target $(tr '\\n' ' ' </tmp/err)"
              fi
            done
            """;

    @TempDir
    Path temp;
    private Path work;

    @BeforeEach
    void workRoot() throws IOException {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        work = temp.resolve("runs");
        assumeTrue(Files.isExecutable(Path.of("/bin/bash")) || Files.isExecutable(Path.of("/usr/bin/bash")), "bash is needed");
    }

    @Test
    void aRunGrantedEgressReachesNeitherTheHostsServicesNorPrivateOrMetadataAddresses() throws Exception {
        // given the embedded PostgreSQL, a server of the test on all of the host's addresses, and whatever else listens
        DbUrl db = TestDatabases.server().url();
        try (ServerSocket server = new ServerSocket(0)) {
            Set<Integer> loopbackPorts = listeningPorts();
            assertThat(loopbackPorts).contains(db.port(), server.getLocalPort());
            List<String> targets = new ArrayList<>();
            for (int port : loopbackPorts) {
                targets.add("127.0.0.1:" + port);
                targets.add("::1:" + port);
            }
            for (String address : EgressNamespace.hostAddresses()) {
                targets.add(address + ":" + server.getLocalPort());
                targets.add(address + ":" + db.port());
            }
            List<String> unreachable = List.of("169.254.169.254:80", "10.0.0.1:80", "172.16.0.1:80", "192.168.0.1:80",
                    "100.64.0.1:80", "fd00:ec2::254:80");
            targets.addAll(unreachable);
            targets.add("fe80::1:80");
            String canary = Sandboxes.canary();
            String script = PROBE + psql(db) + "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; "
                    + "cat /proc/" + ProcessHandle.current().pid() + "/environ 2>/dev/null | tr '\\0' '\\n'; "
                    + "ls /proc | tr '\\n' ' '\n";

            // when a run granted egress probes them all
            EgressSandbox isolated = egressSandbox();
            long started = System.nanoTime();
            ProcessSandbox.Result result = isolated.sandbox().run(egressSpec(script, targets));
            long millis = (System.nanoTime() - started) / 1_000_000;

            // then nothing is open, psql cannot connect, the private and metadata ranges are refused by the
            // namespace's rules at once, and no environment but the run's own is readable
            assertThat(result.stdout()).as("took %d ms:\n%s\n%s", millis, result.stdout(), result.stderr())
                    .doesNotContain("OPEN ").doesNotContain("PSQL CONNECTED").doesNotContain(canary)
                    .doesNotContain("JAVA_HOME=");
            for (String target : unreachable) {
                assertThat(result.stdout()).contains("CLOSED " + target + " ");
                assertThat(line(result.stdout(), "CLOSED " + target + " ")).contains("Network is unreachable");
            }
            for (String target : targets) {
                assertThat(result.stdout()).contains("CLOSED " + target + " ");
            }

            // and the same probe where runs share the host's network reaches the database and the test's server
            ProcessSandbox shared = Sandboxes.sandbox(Isolation.PROCESS, work, Map.of());
            ProcessSandbox.Result control = shared.run(egressSpec(PROBE + psql(db),
                    List.of("127.0.0.1:" + db.port(), "127.0.0.1:" + server.getLocalPort())));
            assertThat(control.stdout()).as(control.stdout() + control.stderr())
                    .contains("OPEN 127.0.0.1:" + db.port()).contains("OPEN 127.0.0.1:" + server.getLocalPort());
            if (psqlPath() != null) {
                assertThat(control.stdout()).contains("PSQL CONNECTED");
            }
        }
    }

    @Test
    void aRunGrantedEgressHasItsOwnResolverAndADefaultRoute() throws Exception {
        // given a run granted egress / when it looks at its network
        EgressSandbox sandbox = egressSandbox();
        String ip = sandbox.host().egress().get(2);
        ProcessSandbox.Result result = sandbox.sandbox().run(egressSpec("cat /etc/resolv.conf; " + ip + " -4 route show default; "
                + ip + " -4 route get 1.1.1.1; " + ip + " rule del pref 100 && echo RULE-DELETED; "
                + "echo > /dev/tcp/" + EgressNamespace.DNS + "/53 || echo TCP53-REFUSED\n", List.of()));
        // then its resolver is pasta's forwarder, reachable by UDP only, internet addresses route out, and it cannot
        // remove the rules that keep it from the host
        assertThat(result.stdout()).as(result.stdout() + result.stderr())
                .contains("nameserver " + EgressNamespace.DNS).contains("default via").contains("1.1.1.1 via")
                .doesNotContain("RULE-DELETED").contains("TCP53-REFUSED");
    }

    @Test
    void whereNoNamespaceCanBeMadeARunGrantedEgressRunsWithoutNetworkAndIsTold() throws Exception {
        // given a host with bubblewrap but without pasta
        var config = Sandboxes.config(Map.of());
        HostSupport real = Sandboxes.host(Isolation.BUBBLEWRAP, config);
        HostSupport withoutPasta = new HostSupport(real.isolation(), real.reason(), real.bwrap(), real.prlimit(), real.setsid(),
                real.setpriv(), real.kill(), real.root(), real.tmpfsSize(), real.disableUserns(), null,
                "pasta (package passt) or ip (package iproute2) is not installed");
        try (ServerSocket server = new ServerSocket(0)) {
            // when a run granted egress connects to the host's loopback and to a public address
            ProcessSandbox.Result result = new ProcessSandbox(withoutPasta, config, work).run(egressSpec(PROBE,
                    List.of("127.0.0.1:" + server.getLocalPort(), "192.0.2.1:80")));
            // then it reaches neither (its network namespace has only its own loopback), and the result says why
            assertThat(result.stdout()).contains("CLOSED 127.0.0.1:" + server.getLocalPort() + " ")
                    .contains("CLOSED 192.0.2.1:80 ").doesNotContain("OPEN ");
            assertThat(line(result.stdout(), "CLOSED 192.0.2.1:80")).contains("Network is unreachable");
            assertThat(result.stderr()).contains("[sandbox: this run had no network although the policy grants it egress")
                    .contains("pasta (package passt)");
        }
    }

    @Test
    void aRunGrantedEgressDiesAtItsLimitWithEverythingItStartedPastaIncluded() throws Exception {
        // given a run granted egress that starts a background child and outlives its limit
        ProcessSandbox.Result result = egressSandbox().sandbox().run(new ProcessSandbox.Spec(List.of("sh", "-c",
                "sleep 313 & sleep 313"), Map.of(), "", Map.of(), null, true, 1_500, null));
        // then it is killed, and neither its processes nor its pasta are left behind
        assertThat(result.timedOut()).isTrue();
        io.clawfleet.shared.testing.Await.until("the run and its pasta gone", java.time.Duration.ofSeconds(10), () -> ProcessHandle.allProcesses()
                .noneMatch(p -> p.info().commandLine().orElse("").contains("sleep 313")
                        || p.parent().map(ProcessHandle.current()::equals).orElse(false)
                        && p.info().command().orElse("").endsWith("pasta")));
    }

    /**
     * No internet in tests: "outside" is a network namespace the test makes (root only), holding an HTTP server
     * and a DNS server on the address of the host's resolver, joined by a veth pair to a second namespace that
     * plays the sandbox host, where pasta runs (through a wrapper that enters it). Everything stays in them.
     */
    @Test
    void aRunGrantedEgressReachesAPublicAddressByNameThroughPastasDns() throws Exception {
        var config = Sandboxes.config(Map.of());
        HostSupport real = egressSandbox().host();
        assumeTrue(HostSupport.isRoot(), "making the test's own network namespaces (veth, addresses) needs root");
        String nsenter = HostSupport.find("nsenter");
        String unshare = HostSupport.find("unshare");
        assumeTrue(nsenter != null && unshare != null, "nsenter and unshare (util-linux) are needed");
        String resolver = Files.readAllLines(Path.of("/etc/resolv.conf")).stream().map(String::strip)
                .filter(l -> l.startsWith("nameserver ")).map(l -> l.substring(11).strip()).findFirst().orElse("");
        boolean dns = resolver.matches("[0-9.]+") && !resolver.startsWith("127.");
        String ip = real.egress().get(2);
        List<Process> started = new ArrayList<>();
        try {
            // given "the host" and "outside", joined by a veth pair, with a server on a public-style address outside
            Process host = start(started, List.of(unshare, "--net", "sleep", "300"));
            Process outside = start(started, List.of(unshare, "--net", "sleep", "300"));
            awaitOwnNetwork(host);
            awaitOwnNetwork(outside);
            String inHost = "--net=/proc/" + host.pid() + "/ns/net";
            String inOutside = "--net=/proc/" + outside.pid() + "/ns/net";
            sh(nsenter, inHost, ip, "link set lo up");
            sh(nsenter, inHost, ip, "link add v0 type veth peer name v1 netns " + outside.pid());
            sh(nsenter, inHost, ip, "addr add 198.51.100.1/24 dev v0");
            sh(nsenter, inHost, ip, "link set v0 up");
            sh(nsenter, inHost, ip, "route add default via 198.51.100.2");
            sh(nsenter, inOutside, ip, "link set lo up");
            sh(nsenter, inOutside, ip, "addr add 198.51.100.2/24 dev v1");
            sh(nsenter, inOutside, ip, "link set v1 up");
            sh(nsenter, inOutside, ip, "addr add 203.0.113.80/32 dev lo");
            if (dns) {
                sh(nsenter, inOutside, ip, "addr add " + resolver + "/32 dev lo");
            }
            Path source = Path.of(getClass().getResource("/egress/Outside.java").toURI());
            String java = ProcessHandle.current().info().command().orElseThrow();
            List<String> server = new ArrayList<>(List.of(nsenter, inOutside, "--", java, source.toString(), "203.0.113.80", "8080"));
            if (dns) {
                server.add(resolver);
            }
            Process web = start(started, server);
            assertThat(new String(web.getInputStream().readNBytes(10), StandardCharsets.US_ASCII))
                    .isEqualTo("listening\n");
            Path wrapper = temp.resolve("pasta-in-the-tests-host");
            Files.writeString(wrapper, "#!/bin/sh\nexec " + nsenter + " " + inHost + " -- " + real.setpriv()
                    + " --reuid=65534 --regid=65534 --clear-groups -- " + real.egress().get(1) + " \"$@\"\n");
            Files.setPosixFilePermissions(wrapper, PosixFilePermissions.fromString("rwx------"));
            HostSupport inTheTestsHost = new HostSupport(Isolation.BUBBLEWRAP, null, real.bwrap(), real.prlimit(), real.setsid(),
                    real.setpriv(), real.kill(), false, real.tmpfsSize(), real.disableUserns(),
                    List.of(real.setsid(), wrapper.toString(), ip, real.egress().get(3)), null);

            // when a run granted egress looks the name up and fetches from it
            String name = dns ? "outside.test" : "203.0.113.80";
            ProcessSandbox.Result result = new ProcessSandbox(inTheTestsHost, config, work).run(egressSpec(
                    (dns ? "getent hosts outside.test; " : "") + "exec 3<>/dev/tcp/" + name + "/8080 && "
                            + "printf 'GET / HTTP/1.0\\r\\nHost: outside.test\\r\\n\\r\\n' >&3 && cat <&3\n", List.of()));

            // then it gets the answer: egress works, by name when the host's resolver could be played here
            assertThat(result.stdout()).as(result.stdout() + result.stderr()).contains("hello from outside");
            if (dns) {
                assertThat(result.stdout()).contains("203.0.113.80");
            }
        } finally {
            started.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void aRunWhoseNetworkCanNoLongerBeSetUpFailsAsTheNodesFaultNotAsTheCommands() throws Exception {
        // given a node whose egress worked at start, and whose ip has stopped working since (a broken upgrade)
        var config = Sandboxes.config(Map.of());
        HostSupport real = egressSandbox().host();
        Path brokenIp = temp.resolve("ip");
        Files.writeString(brokenIp, "#!/bin/sh\necho 'RTNETLINK answers: Operation not permitted' >&2\nexit 2\n");
        Files.setPosixFilePermissions(brokenIp, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> programs = new ArrayList<>(real.egress());
        programs.set(2, brokenIp.toString());
        HostSupport broken = new HostSupport(real.isolation(), null, real.bwrap(), real.prlimit(), real.setsid(), real.setpriv(),
                real.kill(), real.root(), real.tmpfsSize(), real.disableUserns(), programs, null);
        // when a run granted egress starts / then it never ran, and the node's failure says why, so another node gets it
        assertThatThrownBy(() -> new ProcessSandbox(broken, config, work).run(egressSpec("echo ran", List.of())))
                .isInstanceOf(SetupFailure.class).hasMessageContaining("the sandbox no longer works on this node")
                .hasMessageContaining("could not be set");
    }

    private static Process start(List<Process> started, List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        started.add(process);
        return process;
    }

    private static void awaitOwnNetwork(Process process) throws Exception {
        io.clawfleet.shared.testing.Await.until("a network namespace of its own", java.time.Duration.ofSeconds(5), () -> {
            try {
                return !Files.readSymbolicLink(Path.of("/proc/" + process.pid() + "/ns/net")).equals(Files.readSymbolicLink(
                        Path.of("/proc/self/ns/net")));
            } catch (IOException e) {
                return false;
            }
        });
    }

    private static void sh(String nsenter, String ns, String ip, String args) throws Exception {
        List<String> command = new ArrayList<>(List.of(nsenter, ns, "--", ip));
        command.addAll(List.of(args.split(" ")));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor()).as("%s: %s", command, output).isZero();
    }

    private record EgressSandbox(ProcessSandbox sandbox, HostSupport host) {
    }

    private EgressSandbox egressSandbox() {
        var config = Sandboxes.config(Map.of());
        HostSupport host = Sandboxes.host(Isolation.BUBBLEWRAP, config);
        assumeTrue(host.isolatesEgress(), () -> "this host cannot give runs a network namespace of their own: "
                + host.egressReason());
        return new EgressSandbox(new ProcessSandbox(host, config, work), host);
    }

    private static ProcessSandbox.Spec egressSpec(String script, List<String> targets) {
        List<String> argv = new ArrayList<>(List.of("bash", "-c", script, "probe"));
        argv.addAll(targets);
        return new ProcessSandbox.Spec(argv, Map.of(), "", Map.of(), null, true, 60_000, null);
    }

    /** A psql line (with the database's password: reachability is what is tested) when psql is installed. */
    private static String psql(DbUrl db) {
        String psql = psqlPath();
        return psql == null ? "" : "PGPASSWORD='" + db.password() + "' PGCONNECT_TIMEOUT=3 " + psql + " -h 127.0.0.1 -p "
                + db.port() + " -U " + db.user() + " -d postgres -Atc 'select 1' >/dev/null 2>/tmp/psql"
                + " && echo 'PSQL CONNECTED' || echo \"PSQL FAILED $(tr '\\n' ' ' </tmp/psql)\"\n";
    }

    /** The real psql binary (Debian's /usr/bin/psql is a wrapper that needs files a run does not see). */
    private static String psqlPath() {
        try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
            return versions.map(v -> v.resolve("bin/psql")).filter(Files::isExecutable)
                    .max(Comparator.naturalOrder()).map(Path::toString).orElse(null);
        } catch (IOException e) {
            return null;
        }
    }

    private static String line(String text, String start) {
        return text.lines().filter(l -> l.startsWith(start)).findFirst().orElse("");
    }

    /** TCP ports listening on the host's loopback or on all its addresses, from /proc/net/tcp and tcp6. */
    private static Set<Integer> listeningPorts() throws IOException {
        Set<Integer> ports = new TreeSet<>();
        for (String file : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path path = Path.of(file);
            if (!Files.exists(path)) {
                continue;
            }
            for (String row : Files.readAllLines(path).subList(1, Files.readAllLines(path).size())) {
                String[] fields = row.trim().split("\\s+");
                if (!fields[3].equals("0A")) {
                    continue; // not LISTEN
                }
                String[] local = fields[1].split(":");
                String address = local[0];
                boolean loopbackOrAny = address.equals("0100007F") || address.matches("0+")
                        || address.equals("00000000000000000000000001000000");
                if (loopbackOrAny) {
                    ports.add(Integer.parseInt(local[1], 16));
                }
            }
        }
        return ports;
    }
}
