package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.message.SandboxFailures;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.worker.llm.CircuitBreaker;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * Sends a {@link ToolCall} to a live sandbox node and brings back its {@link ToolResult}. Nodes are
 * taken from the cluster membership (role {@code sandbox}), in random order, each on its own address
 * ({@code clawfleet.sandbox.execute.<nodeId>}) so a failed attempt can go to another node; nodes that
 * can serve the tool come first (one that cannot isolate programs refuses shell and skills), and nodes
 * that failed recently come after those that did not. A node that refuses a call unstarted (busy,
 * stopping, unable, broken before the run, gone; see {@link SandboxFailures}) passes it to the next.
 * A node that broke, died or went silent mid-run is left behind, and the call is run again on another
 * node only when the caller says that is safe (a run without network egress works on a private copy
 * of its files, so running it twice changes nothing outside). One circuit breaker per tool stops calls
 * after consecutive failed calls, so a broken sandbox tier costs the model one clear message instead
 * of every call's timeout (seed 000 §12.8).
 *
 * <p>Every attempt is signed for the node it goes to ({@link BusSigner}), and a result counts only when that
 * node signed it for that attempt: a process that joined the bus and answers in a node's place (or replays an
 * old answer) is a failed attempt, as if the node broke mid-run.
 */
public final class SandboxClient {

    /** The sandbox tier could not run the call; the message says why, for the model. */
    public static final class SandboxUnavailable extends RuntimeException {
        public SandboxUnavailable(String message) {
            super(message, null, false, false);
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(SandboxClient.class);
    private static final String ROLE = "sandbox";
    /** Values of the {@code isolation} attribute a sandbox node publishes; {@code none} runs no programs. */
    private static final String NO_ISOLATION = "none";
    private static final int MAX_ATTEMPTS = 3;
    static final int MAX_CIRCUITS = 1_024;

    private final Vertx vertx;
    private final Membership membership;
    private final Metrics metrics;
    private final BusSigner signer;
    private final int circuitFailures;
    private final long circuitCooldownMs;
    private final long replyMarginMs;
    private final LongSupplier clockMs;
    private final UnaryOperator<List<Member>> order;
    /**
     * Circuits by {@link #circuitKey}, least recently used dropped past {@link #MAX_CIRCUITS}: skills are
     * tenants' own, so their number has no bound. A dropped circuit starts closed again, which only costs
     * a failing skill a few more failed calls.
     */
    private final Map<String, CircuitBreaker> breakers = java.util.Collections.synchronizedMap(
            new java.util.LinkedHashMap<>(64, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, CircuitBreaker> eldest) {
                    return size() > MAX_CIRCUITS;
                }
            });
    /** Attempts waiting for a reply, by node: a node that leaves fails its attempts at once. */
    private final Map<String, Set<Promise<ToolResult>>> inFlight = new ConcurrentHashMap<>();
    /** Nodes that failed a call, until when they are tried after the others; only live sandbox nodes are kept. */
    private final Map<String, Long> troubledUntil = new ConcurrentHashMap<>();

    /**
     * @param replyMarginMs how much longer than the run's own limit and its queue timeout a reply may take (copying
     *                      files, starting the sandbox)
     */
    public SandboxClient(Vertx vertx, Membership membership, Metrics metrics, BusSigner signer, int circuitFailures,
                         long circuitCooldownMs, long replyMarginMs, LongSupplier clockMs) {
        this(vertx, membership, metrics, signer, circuitFailures, circuitCooldownMs, replyMarginMs, clockMs, nodes -> {
            List<Member> shuffled = new ArrayList<>(nodes);
            // Random order spreads the load; the bulkhead of each node turns the rest away.
            Collections.shuffle(shuffled);
            return shuffled;
        });
    }

    /** @param order the order in which nodes are tried before ranking (tests fix it; in service it is random) */
    public SandboxClient(Vertx vertx, Membership membership, Metrics metrics, BusSigner signer, int circuitFailures,
                         long circuitCooldownMs, long replyMarginMs, LongSupplier clockMs, UnaryOperator<List<Member>> order) {
        this.order = Objects.requireNonNull(order);
        this.vertx = Objects.requireNonNull(vertx);
        this.membership = Objects.requireNonNull(membership);
        this.metrics = Objects.requireNonNull(metrics);
        this.signer = Objects.requireNonNull(signer);
        this.circuitFailures = circuitFailures;
        this.circuitCooldownMs = circuitCooldownMs;
        this.replyMarginMs = replyMarginMs;
        this.clockMs = Objects.requireNonNull(clockMs);
        membership.onChange(change -> {
            if (!change.joined()) {
                nodeLeft(change.member().nodeId());
            }
        });
    }

    /** Live sandbox nodes, as the membership sees them now. */
    public List<Member> nodes() {
        return membership.members().stream().filter(m -> m.hasRole(ROLE)).toList();
    }

    /** Whether some live sandbox node says it has a web search key. */
    public boolean searchAvailable() {
        return nodes().stream().anyMatch(m -> "true".equals(m.attributes().get("webSearch")));
    }

    /**
     * @param retrySafe whether the call may run a second time on another node after one died mid-run
     * @return the node's result; a failure is a {@link SandboxUnavailable} saying why
     */
    public Future<ToolResult> execute(ToolCall call, boolean retrySafe) {
        String circuit = metricName(call.tool());
        CircuitBreaker breaker = breakers.computeIfAbsent(circuitKey(call),
                k -> new CircuitBreaker(circuitFailures, circuitCooldownMs, clockMs));
        if (!breaker.tryAcquire()) {
            metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "circuit_open");
            return Future.failedFuture(new SandboxUnavailable(call.tool() + " is paused: the sandbox failed it "
                    + circuitFailures + " times in a row; it is tried again within " + circuitCooldownMs / 1000 + " s"));
        }
        List<Member> candidates = preferred(sticky(call, order.apply(nodes())), call.tool());
        return attempt(call, retrySafe, candidates, 0, new Tally()).andThen(done -> {
            if (done.succeeded()) {
                breaker.onSuccess();
                metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "replied");
            } else {
                if (breaker.onFailure()) {
                    LOG.warn("sandbox circuit opened [circuit: {}, failures: {}]", circuitKey(call), circuitFailures);
                }
                metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "failed");
            }
        });
    }

    /**
     * An MCP server's calls go to the same node while it lives, so they find the warm session it keeps for the
     * tenant, bot and server there: the nodes ranked by a hash of that key with each node's id (rendezvous hashing),
     * so a node joining or leaving moves only the sessions it takes or held, and the next node in the ranking is the
     * one a session moves to when its node dies. Other calls keep the order given.
     */
    static List<Member> sticky(ToolCall call, List<Member> nodes) {
        String server = io.clawfleet.shared.workspace.McpServers.serverOf(call.tool());
        if (server == null || nodes.size() < 2) {
            return nodes;
        }
        String key = call.tenantId() + '\u0000' + call.botId() + '\u0000' + server + '\u0000';
        List<Member> ranked = new ArrayList<>(nodes);
        ranked.sort(java.util.Comparator.comparingLong((Member m) -> mix((key + m.nodeId()).hashCode())).reversed());
        return ranked;
    }

    /** Spreads a hash code over the whole long range (SplitMix64's finalizer), so ranks do not follow the names. */
    private static long mix(long value) {
        long z = value + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /**
     * Nodes in the order to try them: those that can serve the tool before those that cannot, and among
     * each, those that have not failed lately before those that have; otherwise in the order given.
     */
    private List<Member> preferred(List<Member> nodes, String tool) {
        long now = clockMs.getAsLong();
        troubledUntil.values().removeIf(until -> until <= now);
        boolean runsPrograms = !tool.equals("web_fetch") && !tool.equals("web_search");
        List<Member> ranked = new ArrayList<>(nodes);
        ranked.sort(java.util.Comparator.comparingInt(m -> {
            int rank = runsPrograms && NO_ISOLATION.equals(m.attributes().get("isolation")) ? 2 : 0;
            return rank + (troubledUntil.getOrDefault(m.nodeId(), 0L) > now ? 1 : 0);
        }));
        return ranked;
    }

    private void troubled(String nodeId) {
        if (membership.members().stream().anyMatch(m -> m.nodeId().equals(nodeId))) {
            troubledUntil.put(nodeId, clockMs.getAsLong() + circuitCooldownMs);
        }
    }

    /** What the attempts so far ran into, for the message when none succeeds. */
    private static final class Tally {
        /** Refused for want of room. */
        int busy;
        /** Refused or failed for any other reason. */
        int lost;
        String lastProblem;
    }

    private Future<ToolResult> attempt(ToolCall call, boolean retrySafe, List<Member> candidates, int index, Tally tally) {
        if (index >= candidates.size() || index >= MAX_ATTEMPTS) {
            return Future.failedFuture(new SandboxUnavailable(exhausted(call, candidates.size(), tally)));
        }
        String nodeId = candidates.get(index).nodeId();
        return send(nodeId, call).recover(failure -> {
            Failure kind = classify(failure);
            tally.lastProblem = "node " + nodeId + ": " + kind.describe(failure);
            LOG.warn("sandbox attempt failed [tool: {}, node: {}, attempt: {}]: {}", call.tool(), nodeId, index + 1,
                    kind.describe(failure));
            switch (kind) {
                case NOT_STARTED -> {
                    if (busy(failure)) {
                        tally.busy++;
                    } else {
                        tally.lost++;
                    }
                    return attempt(call, retrySafe, candidates, index + 1, tally);
                }
                case BROKEN_NOT_STARTED -> {
                    tally.lost++;
                    troubled(nodeId);
                    return attempt(call, retrySafe, candidates, index + 1, tally);
                }
                default -> {
                    tally.lost++;
                    troubled(nodeId);
                    if (kind == Failure.LOST) {
                        metrics.increment("clawfleet.sandbox.lost", "tool", metricName(call.tool()));
                    }
                    if (!retrySafe) {
                        return Future.failedFuture(new SandboxUnavailable((kind == Failure.LOST
                                ? "the sandbox node running " + call.tool() + " stopped answering ("
                                : "sandbox node " + nodeId + " broke while running " + call.tool() + " (") + kind.describe(failure)
                                + "); it was not run again because running it twice may not be safe (it may have changed "
                                + "something or reached the network). Check the result before trying again"));
                    }
                    return attempt(call, retrySafe, candidates, index + 1, tally);
                }
            }
        });
    }

    private Future<ToolResult> send(String nodeId, ToolCall call) {
        Promise<ToolResult> reply = Promise.promise();
        Set<Promise<ToolResult>> waiting = inFlight.computeIfAbsent(nodeId, k -> ConcurrentHashMap.newKeySet());
        waiting.add(reply);
        // Checked after registering, so a departure is seen either here or by the listener. A node that
        // left after the candidates were listed gets nothing.
        if (membership.members().stream().noneMatch(m -> m.nodeId().equals(nodeId))) {
            waiting.remove(reply);
            return Future.failedFuture(new NodeLost(nodeId));
        }
        // Past this the node has either dropped the call from its queue or run it to its limit: a call given up
        // here is never still waiting there to run later, after another node ran it too.
        DeliveryOptions options = signer.sign(new DeliveryOptions().setSendTimeout(call.queueTimeoutMs() + call.timeoutMs() + replyMarginMs),
                BusSigner.CALL, nodeId, call, "");
        String signature = options.getHeaders().get(BusSigner.SIGNATURE);
        vertx.eventBus().<ToolResult>request(Addresses.sandboxExecute(nodeId), call, options)
                .onComplete(done -> {
                    if (done.succeeded()) {
                        String problem = untrusted(done.result(), nodeId, call, signature);
                        if (problem == null) {
                            reply.tryComplete(done.result().body());
                        } else {
                            reply.tryFail(new UntrustedReply(nodeId, problem));
                        }
                    } else {
                        reply.tryFail(done.cause());
                    }
                });
        return reply.future().andThen(done -> waiting.remove(reply));
    }

    /** Why a reply is not the answer of {@code nodeId} to this attempt, or null when it is. */
    private String untrusted(Message<ToolResult> reply, String nodeId, ToolCall call, String callSignature) {
        BusSigner.Verdict verdict = signer.verify(reply.headers(), BusSigner.RESULT, nodeId, reply.body(), callSignature);
        String problem = verdict != BusSigner.Verdict.VALID ? verdict.id()
                : !reply.body().callId().equals(call.callId()) ? "other_call" : null;
        if (problem != null) {
            LOG.warn("sandbox result refused, not applied [tenant: {}, chat: {}, tool: {}, node: {}, reason: {}]", call.tenantId(),
                    call.chatId(), call.tool(), nodeId, problem);
            metrics.increment("clawfleet.bus.rejected", "message", BusSigner.RESULT, "reason", problem);
        }
        return problem;
    }

    /** The reply was not signed by the node the attempt went to, for that attempt. */
    private static final class UntrustedReply extends RuntimeException {
        UntrustedReply(String nodeId, String problem) {
            super("the reply in the name of sandbox node " + nodeId + " was not signed by it for this call (" + problem + ")",
                    null, false, false);
        }
    }

    private void nodeLeft(String nodeId) {
        troubledUntil.remove(nodeId);
        Set<Promise<ToolResult>> waiting = inFlight.remove(nodeId);
        if (waiting != null) {
            waiting.forEach(p -> p.tryFail(new NodeLost(nodeId)));
        }
    }

    /** The node left the cluster while the call was out. */
    private static final class NodeLost extends RuntimeException {
        NodeLost(String nodeId) {
            super("sandbox node " + nodeId + " left the cluster", null, false, false);
        }
    }

    private enum Failure {
        /** The node refused before starting the run (busy, stopping, unable, no longer listening). */
        NOT_STARTED,
        /** The node broke before the run started (its disk, its sandbox program). */
        BROKEN_NOT_STARTED,
        /** The node broke while the run was in progress: it may have had its effects. */
        BROKEN,
        /** The node may have started and then died or went silent. */
        LOST;

        String describe(Throwable failure) {
            if (failure instanceof ReplyException reply) {
                return switch (reply.failureType()) {
                    case TIMEOUT -> "no reply in time";
                    case NO_HANDLERS -> "not listening";
                    default -> String.valueOf(reply.getMessage());
                };
            }
            return String.valueOf(failure.getMessage());
        }
    }

    /** Busy, stopping or its queue too slow: the node works, it has no room now. */
    private static boolean busy(Throwable failure) {
        return failure instanceof ReplyException reply && reply.failureType() != io.vertx.core.eventbus.ReplyFailure.NO_HANDLERS
                && (reply.failureCode() == SandboxFailures.BUSY || reply.failureCode() == SandboxFailures.STOPPING
                || reply.failureCode() == SandboxFailures.EXPIRED);
    }

    private static Failure classify(Throwable failure) {
        if (failure instanceof NodeLost) {
            return Failure.LOST;
        }
        if (failure instanceof ReplyException reply) {
            return switch (reply.failureType()) {
                case NO_HANDLERS -> Failure.NOT_STARTED;
                case TIMEOUT -> Failure.LOST;
                case RECIPIENT_FAILURE, ERROR -> reply.failureCode() == SandboxFailures.BROKEN_BEFORE_START ? Failure.BROKEN_NOT_STARTED
                        : SandboxFailures.notStarted(reply.failureCode()) ? Failure.NOT_STARTED : Failure.BROKEN;
            };
        }
        return Failure.BROKEN;
    }

    private static String exhausted(ToolCall call, int nodes, Tally tally) {
        if (nodes == 0) {
            return "no sandbox node is running, so " + call.tool() + " cannot run; start a node with the sandbox role "
                    + "(docs/SANDBOX.md)";
        }
        if (tally.busy > 0 && tally.lost == 0) {
            return "every sandbox node is busy; try " + call.tool() + " again in a moment";
        }
        return call.tool() + " could not be run on any sandbox node (last: " + tally.lastProblem + ")";
    }

    /**
     * A built-in tool has one circuit for the cluster: when the sandbox tier cannot run it, it cannot for
     * anyone. A code skill has one per tenant and skill, an MCP server one per tenant and server: one tenant's
     * skill or server that breaks nodes (or whose runs they cannot hold) pauses that skill or server only.
     */
    static String circuitKey(ToolCall call) {
        String tool = call.tool();
        String server = io.clawfleet.shared.workspace.McpServers.serverOf(tool);
        if (server != null) {
            return "mcp:" + call.tenantId() + ":" + call.botId() + ":" + server;
        }
        return switch (tool) {
            case "shell_exec", "web_fetch", "web_search" -> tool;
            default -> {
                int separator = tool.indexOf(io.clawfleet.shared.workspace.CodeSkill.SEPARATOR);
                yield "skill:" + call.tenantId() + ":" + (separator > 0 ? tool.substring(0, separator) : tool);
            }
        };
    }

    /** How many circuits are kept (bounded by {@link #MAX_CIRCUITS}). */
    int circuits() {
        return breakers.size();
    }

    /** Skill and MCP tools share a metric name each: tenants' tool names must not grow metric series without bound. */
    static String metricName(String tool) {
        return switch (tool) {
            case "shell_exec", "web_fetch", "web_search" -> tool;
            default -> tool.startsWith(io.clawfleet.shared.workspace.McpServers.PREFIX) ? "mcp" : "code_skill";
        };
    }
}
