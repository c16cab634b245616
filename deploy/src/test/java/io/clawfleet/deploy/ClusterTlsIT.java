package io.clawfleet.deploy;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.deploy.certs.ClusterCa;
import io.clawfleet.deploy.chaos.ClusterHarness;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.Codecs;
import io.clawfleet.shared.bus.PeerTags;
import io.clawfleet.shared.bus.RoleSignatures;
import io.clawfleet.shared.cluster.ClusterBootstrap;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.PartitionReleased;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.message.WorkerReady;
import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.PemKeyCertOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The event bus over mutual TLS (issue 21), on a cluster of separate JVMs (a gateway, a worker, a sandbox node), each
 * with a certificate for its roles from the harness's CA. Processes that join Hazelcast with the cluster's name and
 * members but without a good certificate (none, another CA's, an expired one) register for the addresses chat content
 * and tool calls travel on: they receive nothing while chats are answered, and nothing they send arrives. A process with
 * a valid <em>gateway</em> certificate and the cluster secret (a gateway taken over) cannot make the sandbox node run a
 * program; the same signed call from a worker's certificate runs, so the refusal is the role's. A process with a valid
 * <em>sandbox</em> certificate and the cluster secret (a sandbox host taken over) gets no connection to the gateway, and
 * the worker, which it may reach, refuses its handoff notices for their role and keeps its partitions.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(NodeLogsOnFailure.class)
class ClusterTlsIT {

    private Vertx vertx;
    private MockLlmServer model;
    private HttpServer target;
    private final AtomicInteger targetHits = new AtomicInteger();
    private ClusterHarness cluster;
    private final List<Vertx> intruders = new ArrayList<>();
    private final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
    private Path otherCa;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() throws Exception {
        vertx = Vertx.vertx();
        model = new MockLlmServer(vertx, 0);
        result(model.start("127.0.0.1", 0));
        target = result(vertx.createHttpServer().requestHandler(request -> {
            targetHits.incrementAndGet();
            request.response().end("fetched");
        }).listen(0, "127.0.0.1"));
        DbUrl db = TestDatabases.freshEmpty();
        cluster = new ClusterHarness(db, "http://127.0.0.1:" + model.port() + "/v1", TestJar.path(), TestJar.logs(), 3)
                .env("CLAWFLEET_SANDBOX_WEB_ALLOWED_PRIVATE_RANGES", "127.0.0.1/32")
                .env("CLAWFLEET_SANDBOX_WEB_ALLOWED_PORTS", Integer.toString(target.actualPort()));
        cluster.start("gateway-1", "gateway");
        cluster.start("worker-1", "worker");
        cluster.start("sandbox-1", "sandbox");
        cluster.awaitReady(Duration.ofSeconds(90));
        otherCa = Files.createTempDirectory("clawfleet-other-ca-");
        ClusterCa.create(otherCa, "other", ClusterCa.CA_DAYS).issue("rogue", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        // An expired worker certificate from the cluster's own CA.
        ClusterCa.open(cluster.caDir()).issue("expired", Set.of(Role.WORKER), List.of(),
                Instant.now().minus(Duration.ofDays(30)), Instant.now().minus(Duration.ofDays(1)));
    }

    @AfterAll
    void stop() throws Exception {
        for (Vertx intruder : intruders) {
            result(intruder.close(), Duration.ofSeconds(30));
        }
        if (cluster != null) {
            cluster.close();
        }
        result(vertx.close());
    }

    /** A process that joins the cluster's Hazelcast with its name and members, with the bus transport given. */
    private Vertx join(String name, UnaryOperator<EventBusOptions> transport) {
        return joinAs(name, transport, Map.of()).vertx();
    }

    /** As {@link #join}, publishing {@code attributes} as a node's member attributes. */
    private ClusterBootstrap.Started joinAs(String name, UnaryOperator<EventBusOptions> transport, Map<String, String> attributes) {
        ClawfleetConfig config = ConfigLoader.load(null, Map.of(), Map.of("roles", "scheduler", "cluster.name",
                cluster.clusterName(), "cluster.members", String.join(",", cluster.clusterMembers()), "cluster.host", "127.0.0.1",
                "cluster.port", Integer.toString(FreePorts.take())));
        ClusterBootstrap.Started started = result(ClusterBootstrap.join(config, new Member(name, Set.of(), null, attributes),
                transport, new VertxOptions(), null), Duration.ofSeconds(90));
        Codecs.registerAll(started.vertx().eventBus());
        intruders.add(started.vertx());
        return started;
    }

    /**
     * A process holding a node's certificate and the cluster secret, publishing its chain as a node does, with a
     * signer that tags what it sends for the members it sees: all a node taken over has.
     */
    private record Holder(Vertx vertx, BusSigner signer) {
    }

    private Holder holding(Path certs, Role role) {
        ClusterTls tls = ClusterTls.load(certs, null, Set.of(role), Clock.systemUTC());
        PeerTags peers = PeerTags.of(tls, System::currentTimeMillis);
        ClusterBootstrap.Started started = joinAs(certs.getFileName().toString(), tls::apply, peers.memberAttributes());
        BusSigner signer = BusSigner.forNode(cluster.clusterSecret()).withPeers(peers);
        started.vertx().runOnContext(v -> peers.watch(started.membership()));
        StreamChunk probe = new StreamChunk(0, 0, "");
        Await.until("the holder to tag what it sends gateway-1", Duration.ofSeconds(20), () -> signer
                .signTo(new DeliveryOptions(), BusSigner.CHUNK, "gateway-1", probe).getHeaders().contains(PeerTags.TAG));
        Await.until("gateway-1 to see the holder", Duration.ofSeconds(20), () -> clusterView(cluster.node("gateway-1"))
                .getJsonArray("members").stream().map(JsonObject.class::cast)
                .anyMatch(m -> m.getString("nodeId").equals(certs.getFileName().toString())));
        return new Holder(started.vertx(), signer);
    }

    /** An attacker's TLS: its own certificate, and it trusts any server. */
    private static UnaryOperator<EventBusOptions> presenting(Path certs) {
        return bus -> bus.setSsl(true).setClientAuth(ClientAuth.REQUIRED).setTrustAll(true)
                .setKeyCertOptions(new PemKeyCertOptions().setCertPath(certs.resolve("tls.crt").toString())
                        .setKeyPath(certs.resolve("tls.key").toString()));
    }

    /** What a node would use with this certificate: verified both ways, roles checked. */
    private UnaryOperator<EventBusOptions> node(Path certs, Set<Role> roles) {
        return ClusterTls.load(certs, null, roles, Clock.systemUTC())::apply;
    }

    /** Registers the intruder for every address chat content, tool calls and notices travel on, counting what arrives. */
    private List<io.vertx.core.eventbus.MessageConsumer<Object>> listenEverywhere(Vertx intruder, String name) {
        List<io.vertx.core.eventbus.MessageConsumer<Object>> consumers = new ArrayList<>();
        List<String> addresses = new ArrayList<>(List.of(Addresses.REPLY_READY, Addresses.stream("gateway-1"),
                Addresses.SANDBOX_EXECUTE, Addresses.sandboxExecute("sandbox-1"), Addresses.TENANT_CHANGED,
                Addresses.WORKSPACE_CHANGED, Addresses.PARTITION_RELEASED, Addresses.WORKER_READY));
        for (int p = 0; p < 64; p++) {
            addresses.add(Addresses.partitionWake(p));
        }
        for (String address : addresses) {
            io.vertx.core.eventbus.MessageConsumer<Object> consumer = intruder.eventBus().consumer(address, message -> {
                received.computeIfAbsent(name + " " + address, k -> new AtomicInteger()).incrementAndGet();
                if (message.replyAddress() != null) {
                    message.fail(500, "intruder");
                }
            });
            result(consumer.completion());
            consumers.add(consumer);
        }
        return consumers;
    }

    /** Closes intruders and waits until the gateway no longer counts them as members (their registrations are gone). */
    private void leave(List<Vertx> gone) {
        for (Vertx intruder : gone) {
            result(intruder.close(), Duration.ofSeconds(30));
            intruders.remove(intruder);
        }
        Await.until("the intruders to have left", Duration.ofSeconds(30),
                () -> clusterView(cluster.node("gateway-1")).getJsonArray("members").size() == 3);
    }

    @Test
    void membersWithoutAGoodCertificateReceiveNothingAndWhatTheySendArrivesNowhere() throws Exception {
        // given three intruders in the cluster's Hazelcast, registered where chat content and tool calls go
        Vertx plain = join("intruder-plain", bus -> bus);
        Vertx foreign = join("intruder-other-ca", presenting(otherCa.resolve("rogue")));
        Vertx expired = join("intruder-expired", presenting(cluster.caDir().resolve("expired")));
        List<io.vertx.core.eventbus.MessageConsumer<Object>> consumers = new ArrayList<>();
        consumers.addAll(listenEverywhere(plain, "plain"));
        consumers.addAll(listenEverywhere(foreign, "other-ca"));
        consumers.addAll(listenEverywhere(expired, "expired"));
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        Await.until("the gateway to see the intruders as members", Duration.ofSeconds(30),
                () -> clusterView(gateway).getJsonArray("members").size() >= 6);

        // when chats talk to the bot, through the gateway, the worker and back
        for (int i = 0; i < 12; i++) {
            String question = "question " + i + " " + UUID.randomUUID();
            HttpResponse<String> answer = chat("tls-chat-" + (i % 4), question);
            // then every one is answered
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            assertThat(answer.body()).contains(question.substring("question ".length()));
        }
        // and they received none of it
        assertThat(received).as("what the intruders received").isEmpty();

        // when the intruders send (their own consumers gone, so nothing is delivered back to themselves): a signed
        // tool call to the sandbox node, a chunk to the gateway
        for (var consumer : consumers) {
            result(consumer.unregister());
        }
        String secret = cluster.clusterSecret();
        BusSigner signer = BusSigner.forNode(secret);
        for (Vertx intruder : List.of(plain, foreign, expired)) {
            ToolCall call = fetchCall();
            Throwable failure = result(intruder.eventBus().request(Addresses.sandboxExecute("sandbox-1"), call,
                            signer.sign(new DeliveryOptions().setSendTimeout(8_000), BusSigner.CALL, "sandbox-1", call, ""))
                    .<Throwable>map(m -> null).otherwise(e -> e), Duration.ofSeconds(20));
            assertThat(failure).as("the intruder's call got an answer").isNotNull();
            intruder.eventBus().send(Addresses.stream("gateway-1"), new StreamChunk(1, 0, "forged"));
        }
        // then nothing ran, nothing reached a node's handlers (not even to be refused there), and nothing was received
        assertThat(targetHits.get()).isZero();
        assertThat(received).as("what the intruders received").isEmpty();
        assertThat(metrics(cluster.node("sandbox-1"))).doesNotContain("clawfleet_sandbox_runs_total{")
                .doesNotContain("clawfleet_bus_rejected_total{message=\"tool-call\"");
        assertThat(metrics(gateway)).doesNotContain("clawfleet_bus_rejected_total{message=\"stream-chunk\"");
        // and a last chat still goes through with the intruders there
        assertThat(chat("tls-chat-last", "still here").body()).contains("still here");
        JsonObject view = cluster.cluster(gateway);
        assertThat(view.getBoolean("insecureCluster")).isFalse();
        assertThat(view.getJsonArray("members").stream().map(JsonObject.class::cast)
                .filter(m -> Set.of("gateway-1", "worker-1", "sandbox-1").contains(m.getString("nodeId")))
                .map(m -> m.getJsonObject("attributes").getString("busTransport")).toList())
                .containsExactly("mtls", "mtls", "mtls");
        leave(List.of(plain, foreign, expired));
    }

    @Test
    void aGatewaysCertificateAndTheClusterSecretCannotMakeTheSandboxRunAProgramAWorkersCan() throws Exception {
        leave(List.copyOf(intruders));
        // given a process holding what a taken-over gateway holds: a valid gateway certificate and the cluster secret
        ClusterCa ca = ClusterCa.open(cluster.caDir());
        Path gatewayCerts = ca.issue("stolen-gateway", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS);
        Vertx stolen = join("stolen-gateway", node(gatewayCerts, Set.of(Role.GATEWAY)));
        BusSigner signer = BusSigner.forNode(cluster.clusterSecret());
        int hitsBefore = targetHits.get();

        // when it sends the sandbox node a signed call
        ToolCall call = fetchCall();
        Throwable failure = result(stolen.eventBus().request(Addresses.sandboxExecute("sandbox-1"), call,
                        signer.sign(new DeliveryOptions().setSendTimeout(8_000), BusSigner.CALL, "sandbox-1", call, ""))
                .<Throwable>map(m -> null).otherwise(e -> e), Duration.ofSeconds(20));

        // then the node does not let it connect (its signature is good, so only the handshake can have stopped it;
        // no other member registered for the node's address: the first test's intruders have left)
        assertThat(failure).as("the call from a gateway's certificate got an answer").isNotNull();
        assertThat(targetHits.get()).isEqualTo(hitsBefore);
        assertThat(metrics(cluster.node("sandbox-1"))).doesNotContain("clawfleet_bus_rejected_total{message=\"tool-call\"");

        // when a process with a worker's certificate sends the same kind of call
        Path workerCerts = ca.issue("second-worker", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        Vertx worker = join("second-worker", node(workerCerts, Set.of(Role.WORKER)));
        ToolCall allowed = fetchCall();
        ToolResult ran = result(worker.eventBus().<ToolResult>request(Addresses.sandboxExecute("sandbox-1"), allowed,
                signer.sign(new DeliveryOptions().setSendTimeout(20_000), BusSigner.CALL, "sandbox-1", allowed, "")),
                Duration.ofSeconds(30)).body();
        // then it runs: the test can tell a role refusal from a broken set-up
        assertThat(ran.output()).as(ran.toString()).contains("fetched");
        assertThat(targetHits.get()).isEqualTo(hitsBefore + 1);
    }

    @Test
    void aSandboxHostsCertificateAndTheClusterSecretReachNoGatewayAndMoveNoPartition() throws Exception {
        leave(List.copyOf(intruders));
        ClusterCa ca = ClusterCa.open(cluster.caDir());
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        ClusterHarness.Node worker = cluster.node("worker-1");
        BusSigner secret = BusSigner.forNode(cluster.clusterSecret());
        // given a process holding what a sandbox host taken over holds: a valid sandbox certificate (from the sandbox
        // nodes' CA) and the cluster secret; it trusts any server, so any refusal is the other side's
        Path sandboxCerts = ca.issue("stolen-sandbox", Set.of(Role.SANDBOX), List.of(), ClusterCa.NODE_DAYS);
        Vertx stolen = join("stolen-sandbox", presenting(sandboxCerts));
        RoleSignatures sandboxKey = RoleSignatures.of(ClusterTls.load(sandboxCerts, null, Set.of(Role.SANDBOX), Clock.systemUTC()),
                System::currentTimeMillis, BusSigner.DEFAULT_WINDOW_MS);
        Set<Integer> owned = ownedBy(gateway, "worker-1");
        assertThat(owned).isNotEmpty();
        long chunksRefused = rejectedCount(metrics(gateway), "stream-chunk");

        // when it sends the gateway a stream chunk (unsigned, so that one that arrived would be counted as refused)
        stolen.eventBus().send(Addresses.stream("gateway-1"), new StreamChunk(1, 0, "forged"));
        // and tells the worker, signed with its own key and with none, that the worker left and that a new worker is
        // ready: what would move partitions if a worker believed it
        PartitionReleased left = new PartitionReleased(0, 1, "worker-1", true);
        WorkerReady ghost = new WorkerReady("ghost-worker", true);
        stolen.eventBus().publish(Addresses.PARTITION_RELEASED, left,
                sandboxKey.sign(new DeliveryOptions(), Addresses.PARTITION_RELEASED, left));
        stolen.eventBus().publish(Addresses.WORKER_READY, ghost, sandboxKey.sign(new DeliveryOptions(), Addresses.WORKER_READY, ghost));
        stolen.eventBus().publish(Addresses.WORKER_READY, ghost);

        // then the worker refuses the notices for their role (they reached it: every role may connect to a worker) ...
        Await.until("the worker to refuse the sandbox host's handoff notices", Duration.ofSeconds(20), () -> {
            String scrape = metrics(worker);
            return rejected(scrape, "partition-released", "wrong_role") && rejected(scrape, "worker-ready", "wrong_role")
                    && rejected(scrape, "worker-ready", "missing");
        });
        // ... and keeps its partitions; the chunk never reached the gateway's handler (the handshake refused it)
        assertThat(ownedBy(gateway, "worker-1")).isEqualTo(owned);
        assertThat(rejectedCount(metrics(gateway), "stream-chunk")).isEqualTo(chunksRefused);
        assertThat(chat("tls-sandbox-host", "still answered").body()).contains("still answered");

        // when a process with a worker's certificate sends the gateway the same unsigned chunk
        Path workerCerts = ca.issue("chunk-worker", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS);
        Vertx asWorker = join("chunk-worker", presenting(workerCerts));
        asWorker.eventBus().send(Addresses.stream("gateway-1"), new StreamChunk(1, 0, "unsigned"));
        // then it arrives, and is refused there for its signature: the test tells the handshake's refusal from a chunk
        // that is merely dropped
        Await.until("the gateway to refuse the worker's unsigned chunk", Duration.ofSeconds(20),
                () -> rejectedCount(metrics(gateway), "stream-chunk") > chunksRefused);
        assertThat(rejected(metrics(gateway), "stream-chunk", "missing")).isTrue();
        leave(List.of(stolen, asWorker));
    }

    @Test
    void aGatewaysCertificateAndTheClusterSecretCannotSendAGatewayChunksOrReplyNoticesAWorkersCan() throws Exception {
        leave(List.copyOf(intruders));
        ClusterCa ca = ClusterCa.open(cluster.caDir());
        ClusterHarness.Node gateway = cluster.node("gateway-1");
        // given a real worker's replies and streams are taken: a streamed chat answered, no notice or chunk refused
        long chunksRefused = rejectedCount(metrics(gateway), "stream-chunk");
        assertThat(chat("tls-peer-before", "answered by the worker", true).body()).contains("answered by the worker");
        assertThat(rejectedCount(metrics(gateway), "reply-ready")).isZero();
        assertThat(rejectedCount(metrics(gateway), "stream-chunk")).isEqualTo(chunksRefused);
        // and the worker's tagged notice was served as the reply, without a read of the outbox (SECURITY.md rule 5)
        assertThat(metrics(gateway)).containsPattern("clawfleet_gateway_replies_pushed_total\\{[^}]*tenant=\"default\"[^}]*} [1-9]");
        // (every node publishes its chain for that, and the cluster view leaves it out)
        assertThat(clusterView(gateway).encode()).doesNotContain(PeerTags.CHAIN_ATTRIBUTE).contains("busTransport");

        // when a process with what a taken-over gateway holds (a gateway's certificate, published as a node publishes
        // it, and the cluster secret) sends gateway-1 a signed and tagged chunk and publishes a signed reply notice
        Holder stolen = holding(ca.issue("stolen-gateway-2", Set.of(Role.GATEWAY), List.of(), ClusterCa.NODE_DAYS), Role.GATEWAY);
        StreamChunk chunk = new StreamChunk(1, 0, "injected");
        stolen.vertx().eventBus().send(Addresses.stream("gateway-1"), chunk,
                stolen.signer().signTo(new DeliveryOptions(), BusSigner.CHUNK, "gateway-1", chunk));
        OutboundReply notice = new OutboundReply("forged-reply", BotRef.main("default"), "api", "tls-peer", 1, 1, 1, "",
                Instant.now());
        stolen.vertx().eventBus().publish(Addresses.REPLY_READY, notice,
                stolen.signer().signNotice(new DeliveryOptions(), BusSigner.REPLY, Addresses.REPLY_READY, notice, Role.GATEWAY));
        // then the gateway takes the connection (a gateway may connect to a gateway) and refuses both for the role
        Await.until("the gateway to refuse a gateway's chunk and notice", Duration.ofSeconds(20), () -> {
            String scrape = metrics(gateway);
            return rejected(scrape, "stream-chunk", "wrong_role") && rejected(scrape, "reply-ready", "wrong_role");
        });

        // when a process with a worker's certificate sends the same chunk signed and tagged, then one unsigned
        Holder worker = holding(ca.issue("tagging-worker", Set.of(Role.WORKER), List.of(), ClusterCa.NODE_DAYS), Role.WORKER);
        long refusedBefore = rejectedCount(metrics(gateway), "stream-chunk");
        worker.vertx().eventBus().send(Addresses.stream("gateway-1"), chunk,
                worker.signer().signTo(new DeliveryOptions(), BusSigner.CHUNK, "gateway-1", chunk));
        worker.vertx().eventBus().send(Addresses.stream("gateway-1"), new StreamChunk(1, 1, "unsigned"));
        // then only the unsigned one is refused (both went the same connection, in order): the tagged one was taken
        Await.until("the gateway to refuse the unsigned chunk", Duration.ofSeconds(20),
                () -> rejectedCount(metrics(gateway), "stream-chunk") > refusedBefore);
        assertThat(rejectedCount(metrics(gateway), "stream-chunk")).isEqualTo(refusedBefore + 1);
        assertThat(refusedBefore).isEqualTo(chunksRefused + 1);
        leave(List.copyOf(intruders));
    }

    /** The sum of {@code clawfleet_bus_rejected_total} for {@code message}, every reason. */
    private static long rejectedCount(String scrape, String message) {
        return (long) Prometheus.sum(scrape, "clawfleet_bus_rejected_total{", "message=\"" + message + "\"");
    }

    private static boolean rejected(String scrape, String message, String reason) {
        return scrape.lines().anyMatch(line -> line.startsWith("clawfleet_bus_rejected_total{")
                && line.contains("message=\"" + message + "\"") && line.contains("reason=\"" + reason + "\""));
    }

    /** The partitions the gateway's cluster view shows {@code node} owning. */
    private Set<Integer> ownedBy(ClusterHarness.Node gateway, String node) {
        return clusterView(gateway).getJsonArray("partitions").stream().map(JsonObject.class::cast)
                .filter(p -> node.equals(p.getString("owner"))).map(p -> p.getInteger("partition"))
                .collect(java.util.stream.Collectors.toSet());
    }

    private ToolCall fetchCall() {
        return new ToolCall(UUID.randomUUID().toString(), "default", 1, "web_fetch",
                new JsonObject().put("url", "http://127.0.0.1:" + target.actualPort() + "/steal").encode(), Map.of(), Map.of(), 10_000);
    }

    private HttpResponse<String> chat(String user, String question) throws Exception {
        return chat(user, question, false);
    }

    private HttpResponse<String> chat(String user, String question, boolean stream) throws Exception {
        JsonObject body = new JsonObject().put("model", "default").put("user", user).put("stream", stream)
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", question)));
        return http.send(HttpRequest.newBuilder(URI.create(cluster.node("gateway-1").url() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60))
                .header("authorization", "Bearer " + ClusterHarness.API_KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonObject clusterView(ClusterHarness.Node gateway) {
        try {
            return cluster.cluster(gateway);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private String metrics(ClusterHarness.Node node) {
        try {
            return cluster.metrics(node);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
