package io.clawfleet.sandbox;

import io.clawfleet.sandbox.exec.HostSupport;
import io.clawfleet.sandbox.exec.Isolation;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.tools.SandboxEndpoint;
import io.clawfleet.sandbox.tools.SandboxService;
import io.clawfleet.sandbox.web.BraveSearch;
import io.clawfleet.sandbox.web.WebFetcher;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Wiring of the sandbox role: finds what isolation this host offers (published with the node's
 * membership and in {@code /readyz}), and serves {@link ToolCall}s on {@code clawfleet.sandbox.execute}
 * and on this node's own {@code clawfleet.sandbox.execute.<nodeId>}, running only calls a worker signed for this
 * node with the cluster secret ({@link SandboxEndpoint}). Holds no database and no model keys.
 *
 * <p>Replies: a {@code tool-result-v1}; or a failure with a code of {@link io.clawfleet.shared.message.SandboxFailures}
 * (see {@link SandboxEndpoint}).
 */
public final class SandboxRole implements NodeRole {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxRole.class);
    private static final long DRAIN_MS = 5_000;

    private final AtomicBoolean serving = new AtomicBoolean();
    private final List<MessageConsumer<ToolCall>> consumers = new ArrayList<>();
    private HostSupport host;
    private SandboxService service;
    private HttpClient http;
    private WorkerExecutor blocking;
    private Vertx vertx;

    @Override
    public String name() {
        return "sandbox";
    }

    @Override
    public synchronized Map<String, String> memberAttributes(ClawfleetConfig config) {
        if (host == null) {
            ClawfleetConfig.Sandbox sandbox = config.sandbox();
            host = HostSupport.detect(sandbox.isolation(), sandbox.runAsUid(), sandbox.runAsGid());
        }
        String searchKey = System.getenv(config.sandbox().web().braveApiKeyEnv());
        // Workers offer web_search only while some sandbox node can answer it.
        return Map.of("isolation", host.isolation().id(),
                "webSearch", Boolean.toString(searchKey != null && !searchKey.isBlank()));
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        vertx = ctx.vertx();
        ClawfleetConfig config = ctx.config();
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        memberAttributes(config);
        warnAboutIsolation();
        warnAboutSecrets(config);
        Path workRoot;
        try {
            workRoot = workRoot(sandbox, ctx.nodeId());
        } catch (IOException | IllegalStateException e) {
            return Future.failedFuture(new IllegalStateException("the sandbox work directory is not usable: " + e.getMessage(), e));
        }
        ProcessSandbox processes;
        try {
            // sandbox.cgroups=required refuses a host without cgroup v2 delegation here, before anything is opened
            processes = new ProcessSandbox(host, sandbox, workRoot);
        } catch (IllegalStateException e) {
            return Future.failedFuture(e);
        }
        http = vertx.createHttpClient(new HttpClientOptions().setDecompressionSupported(true).setKeepAlive(false)
                .setVerifyHost(true).setForceSni(true).setConnectTimeout((int) Math.min(sandbox.web().timeoutMs(), 10_000)));
        blocking = vertx.createSharedWorkerExecutor("clawfleet-sandbox-" + ctx.nodeId(), sandbox.maxConcurrentWorkers(),
                sandbox.maxTimeoutMs() + 60_000, TimeUnit.MILLISECONDS);
        Map<String, String> environment = System.getenv();
        BraveSearch search = new BraveSearch(http, sandbox.web(), environment);
        service = new SandboxService(vertx, config, processes,
                new WebFetcher(vertx, http, sandbox.web(), WebFetcher.systemResolver(vertx)), search, blocking, environment,
                ctx.metrics(), ctx.tracing());
        ctx.metrics().gauge("clawfleet.sandbox.running", service::running);
        ctx.metrics().gauge("clawfleet.sandbox.queued", service::queued);
        ctx.readiness().detail("sandbox", () -> {
            var facts = new java.util.LinkedHashMap<String, Object>(host.describe());
            facts.putAll(processes.cgroups().describe());
            JsonObject detail = new JsonObject(facts)
                    .put("running", service.running()).put("queued", service.queued()).put("mcpSessions", service.mcpSessions())
                    .put("maxConcurrentWorkers", sandbox.maxConcurrentWorkers())
                    .put("shell", config.security().allowShell()).put("webSearch", search.configured());
            return detail;
        });
        ctx.readiness().register("sandbox", serving::get);
        SandboxEndpoint endpoint = new SandboxEndpoint(service, serving::get, ctx.signer(), ctx.nodeId(), ctx.metrics());
        return Consumers.<ToolCall>register(vertx, Addresses.SANDBOX_EXECUTE, endpoint)
                .compose(any -> {
                    consumers.add(any);
                    return Consumers.<ToolCall>register(vertx, Addresses.sandboxExecute(ctx.nodeId()), endpoint);
                })
                .onSuccess(own -> {
                    consumers.add(own);
                    serving.set(true);
                    LOG.info("sandbox serving [node: {}, isolation: {}, seccomp: {}, cgroups: {}, slots: {}, shell: {}]",
                            ctx.nodeId(),
                            host.isolation().id(), host.isolation() != io.clawfleet.sandbox.exec.Isolation.BUBBLEWRAP ? "none"
                                    : io.clawfleet.sandbox.exec.SeccompFilter.supported() ? "on"
                                    : "none (no filter for " + System.getProperty("os.arch") + ")",
                            processes.cgroups().enabled() ? "on" : "off (" + processes.cgroups().reason() + ")",
                            sandbox.maxConcurrentWorkers(), config.security().allowShell() ? "enabled" : "disabled");
                })
                .mapEmpty();
    }

    private void warnAboutIsolation() {
        String warning = isolationWarning(host);
        if (host.isolation() == Isolation.BUBBLEWRAP) {
            LOG.info(warning);
        } else {
            LOG.warn(warning);
        }
        String egress = egressWarning(host);
        if (egress != null) {
            if (host.isolatesEgress()) {
                LOG.info(egress);
            } else {
                LOG.warn(egress);
            }
        }
    }

    /** What the node says at start about runs the policy grants egress (bubblewrap level only), or null. */
    static String egressWarning(HostSupport host) {
        if (host.isolation() != Isolation.BUBBLEWRAP) {
            return null;
        }
        return host.isolatesEgress()
                ? "sandbox egress: runs granted egress get a network namespace of their own (pasta); private, link-local "
                + "and metadata ranges, the host's addresses and its loopback are out of their reach"
                : "sandbox egress unavailable: " + host.egressReason() + ". Runs the policy grants egress (sandbox.egress) "
                + "run without network; install passt and iproute2 to give them internet access (docs/SANDBOX.md)";
    }

    /** What the node says at start about the isolation it found: loud unless it is bubblewrap. */
    static String isolationWarning(HostSupport host) {
        return switch (host.isolation()) {
            case PROCESS -> """

                    ************************************************************************************
                    SANDBOX WITHOUT BUBBLEWRAP: %s.
                    Runs get rlimits, timeouts, a filtered environment and a private copy of their files,
                    but they share the host's filesystem, network and processes%s. A daemon a run starts
                    with setsid can outlive it. Do not run untrusted tools on this host like this:
                    install bubblewrap and set sandbox.isolation=bubblewrap (docs/SANDBOX.md).
                    ************************************************************************************""".formatted(
                    host.reason(), host.root() ? "" : ", and they run as this node's\n"
                            + "user: they can read this node's environment (/proc/<pid>/environ) and signal it");
            case NONE -> "sandbox cannot run programs here: " + host.reason() + ". shell_exec and code skills will be refused; "
                    + "web_fetch and web_search work";
            case BUBBLEWRAP -> "sandbox isolation: bubblewrap" + (host.root() ? " (runs drop root with setpriv)" : "");
        };
    }

    /**
     * A node that is only a sandbox needs no database and no model keys (DESIGN.md); holding them anyway
     * puts them on the host most exposed to untrusted code, so the operator is told.
     */
    private static void warnAboutSecrets(ClawfleetConfig config) {
        List<String> held = secretsHeld(config);
        if (!held.isEmpty()) {
            LOG.warn("this sandbox-only node is configured with {}, which it never uses: remove it from the sandbox host "
                    + "(docs/SANDBOX.md)", String.join(" and ", held));
        }
    }

    /** The secrets a sandbox-only node holds though it never uses them; nothing for a node with other roles. */
    static List<String> secretsHeld(ClawfleetConfig config) {
        List<String> held = new ArrayList<>();
        if (!config.roles().equals(java.util.Set.of(ClawfleetConfig.Role.SANDBOX))) {
            return held;
        }
        if (config.db().url() != null) {
            held.add("a database URL (CLAWFLEET_DB_URL)");
        }
        if (config.llm().apiKey() != null || config.llm().providers().values().stream().anyMatch(p -> p.apiKey() != null)) {
            held.add("a model API key");
        }
        return held;
    }

    /** This node's own folder of run directories; runs a killed node left behind are removed. */
    private Path workRoot(ClawfleetConfig.Sandbox sandbox, String nodeId) throws IOException {
        Path base = sandbox.workDir() != null ? Path.of(sandbox.workDir())
                : Path.of(System.getProperty("java.io.tmpdir"), "clawfleet-sandbox");
        Path root = base.toAbsolutePath().resolve(nodeId);
        Files.createDirectories(root);
        if (host.root()) {
            // Runs drop to another uid, which must be able to reach its run directory.
            for (Path dir = root.getParent(); dir != null; dir = dir.getParent()) {
                if (!Files.getPosixFilePermissions(dir).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                    throw new IllegalStateException(dir + " cannot be traversed by uid " + sandbox.runAsUid()
                            + "; choose a sandbox.workDir under a folder others may traverse, such as /var/tmp");
                }
            }
        }
        removeLeftovers(root);
        return root;
    }

    /**
     * Removes the run directories a killed node left. Tidiness, not a precondition: a leftover that cannot be
     * removed (a program made part of it unwritable, another process removes it at the same time) is
     * logged and the node starts anyway, since every new run gets a fresh directory of its own.
     */
    static void removeLeftovers(Path root) throws IOException {
        List<Path> leftovers;
        try (var entries = Files.list(root)) {
            leftovers = entries.filter(p -> p.getFileName().toString().startsWith("run-")).toList();
        }
        for (Path dir : leftovers) {
            try {
                deleteTree(dir);
            } catch (IOException e) {
                LOG.warn("a run directory a stopped node left cannot be removed; it stays [path: {}, error: {}]", dir, e.toString());
            }
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
                // A program may have taken its own folders' permissions away; the node owns them and gives them back.
                if (!Files.isSymbolicLink(d)) {
                    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE;
                }
                throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null && !(e instanceof NoSuchFileException)) {
                    throw e;
                }
                Files.deleteIfExists(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    public Isolation isolation() {
        return host == null ? null : host.isolation();
    }

    @Override
    public Future<Void> stop() {
        serving.set(false);
        if (vertx == null) {
            return Future.succeededFuture();
        }
        Future<Void> unregistered = Future.all(consumers.stream().map(MessageConsumer::unregister).toList()).mapEmpty();
        return unregistered.eventually(this::drain).eventually(() -> {
            service.stop();
            return Future.all(blocking.close(), http.close());
        }).mapEmpty();
    }

    /** Lets runs in progress finish for a few seconds; the rest are killed (workers retry them where safe). */
    private Future<Void> drain() {
        Promise<Void> drained = Promise.promise();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MS);
        vertx.setPeriodic(100, id -> {
            if (service.running() == 0 || System.nanoTime() > deadline) {
                vertx.cancelTimer(id);
                drained.tryComplete();
            }
        });
        return drained.future();
    }
}
