package io.clawfleet.deploy;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.tools.SandboxEndpoint;
import io.clawfleet.sandbox.tools.SandboxService;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.MicrometerMetrics;
import io.clawfleet.worker.sandbox.SandboxClient;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.http.HttpClient;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A worker's sandbox client against real sandbox nodes (their service and endpoint on one event bus)
 * when a node breaks: what the node could not do reaches the worker as a failure, which trips the
 * tool's circuit and sends the call to a healthy node, never as a result the model reads as the
 * command's own.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SandboxNodeFaultTest {

    @TempDir
    Path temp;
    private Vertx vertx;
    private WorkerExecutor blocking;
    private HttpClient http;
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final List<Member> members = new ArrayList<>();
    private ClawfleetConfig config;
    private final io.clawfleet.shared.bus.BusSigner signer = io.clawfleet.shared.bus.BusSigner.random();

    @BeforeEach
    void start() throws IOException {
        // Runs of a root node drop to another uid, which must be able to reach its run directory.
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwx--x--x"));
        vertx = Vertx.vertx();
        Codecs.registerAll(vertx.eventBus());
        blocking = vertx.createSharedWorkerExecutor("test-sandbox", 2);
        http = vertx.createHttpClient();
        config = ConfigLoader.load(null, Map.of(), Map.of("allowShell", "true"));
        assumeTrue(host().isolation() != Isolation.NONE, "this host cannot run processes");
    }

    @AfterEach
    void stop() {
        result(vertx.close());
    }

    private HostSupport host() {
        return HostSupport.detect("auto", config.sandbox().runAsUid(), config.sandbox().runAsGid());
    }

    /** A sandbox node on this event bus, making its run directories under {@code workRoot}. */
    private void node(String nodeId, Path workRoot) {
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        SandboxService service = new SandboxService(vertx, config, new ProcessSandbox(host(), sandbox, workRoot),
                new WebFetcher(vertx, http, sandbox.web(), WebFetcher.systemResolver(vertx)),
                new BraveSearch(http, sandbox.web(), Map.of()), blocking, Map.of(), new MicrometerMetrics(nodeId));
        result(vertx.eventBus().consumer(Addresses.sandboxExecute(nodeId), new SandboxEndpoint(service, () -> true, signer, nodeId,
                new MicrometerMetrics(nodeId))).completion());
        members.add(new Member(nodeId, Set.of("sandbox"), "http://127.0.0.1:1", Map.of("isolation", host().isolation().id())));
    }

    /** A node whose disk cannot hold a run directory (here: its work directory is under a file). */
    private void brokenNode(String nodeId) throws IOException {
        node(nodeId, Files.writeString(temp.resolve(nodeId + "-not-a-directory"), "x").resolve("runs"));
    }

    /** Nodes are tried in the order they were made, so the test knows which one a call reaches first. */
    private SandboxClient client() {
        return new SandboxClient(vertx, new FixedMembership(members), new MicrometerMetrics("worker"), signer, 2, 10_000, 5_000,
                clock::get, nodes -> nodes);
    }

    private static ToolCall echo(boolean network) {
        return new ToolCall(UUID.randomUUID().toString(), "acme", 1, "shell_exec",
                new JsonObject().put("command", "echo hello").encode(), Map.of(), Map.of(), 10_000, network);
    }

    @Test
    void aBrokenNodesFailuresOpenTheToolsCircuit() throws IOException {
        // given the only sandbox node is broken
        brokenNode("sb-broken");
        SandboxClient client = client();
        // when calls keep going out / then each fails saying the node could not start the run, and the circuit opens
        assertThat(failure(client.execute(echo(false), true))).hasMessageContaining("could not start on this sandbox node");
        assertThat(failure(client.execute(echo(false), true))).hasMessageContaining("could not start");
        assertThat(failure(client.execute(echo(false), true))).hasMessageContaining("shell_exec is paused");
    }

    @Test
    void aCallABrokenNodeCouldNotStartRunsOnAHealthyOneEvenWithEgress() throws IOException {
        // given a broken node asked first, and a healthy one
        brokenNode("sb-broken");
        node("sb-ok", temp.resolve("runs-ok"));
        // when a call that may use the network goes out / then the healthy node runs it: the broken one never started it
        ToolResult result = result(client().execute(echo(true), false));
        assertThat(result.status()).isEqualTo(ToolResult.OK);
        assertThat(result.output()).isEqualTo("hello\n");
    }

    /** The sandbox nodes of a test, and a worker as itself. */
    private record FixedMembership(List<Member> nodes) implements Membership {
        @Override
        public Member self() {
            return new Member("worker-1", Set.of("worker"), "http://127.0.0.1:2");
        }

        @Override
        public List<Member> members() {
            List<Member> all = new ArrayList<>(nodes);
            all.add(self());
            return all;
        }

        @Override
        public void onChange(Consumer<MembershipChange> listener) {
            // Nobody joins or leaves during a test.
        }
    }
}
