package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.worker.llm.CircuitBreaker;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
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
 * ({@code clawfleet.sandbox.execute.<nodeId>}) so a failed attempt can go to another node. A node that
 * is busy (429), stopping (503) or gone (no handler) never started the run: the next node is asked.
 * A node that died or went silent mid-run is left behind, and the call is run again on another node
 * only when the caller says that is safe (a run without network egress works on a private copy of its
 * files, so running it twice changes nothing outside). One circuit breaker per tool stops calls after
 * consecutive sandbox failures, so a broken sandbox tier costs the model one clear message instead of
 * every call's timeout (seed 000 §12.8).
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
    private static final int BUSY = 429;
    private static final int STOPPING = 503;
    private static final int MAX_ATTEMPTS = 3;

    private final Vertx vertx;
    private final Membership membership;
    private final Metrics metrics;
    private final int circuitFailures;
    private final long circuitCooldownMs;
    private final long replyMarginMs;
    private final LongSupplier clockMs;
    private final UnaryOperator<List<Member>> order;
    private final Map<String, CircuitBreaker> breakers = new ConcurrentHashMap<>();
    /** Attempts waiting for a reply, by node: a node that leaves fails its attempts at once. */
    private final Map<String, Set<Promise<ToolResult>>> inFlight = new ConcurrentHashMap<>();

    /**
     * @param replyMarginMs how much longer than the run's own limit a reply may take (copying files, starting the sandbox)
     */
    public SandboxClient(Vertx vertx, Membership membership, Metrics metrics, int circuitFailures, long circuitCooldownMs,
                         long replyMarginMs, LongSupplier clockMs) {
        this(vertx, membership, metrics, circuitFailures, circuitCooldownMs, replyMarginMs, clockMs, nodes -> {
            List<Member> shuffled = new ArrayList<>(nodes);
            // Random order spreads the load; the bulkhead of each node turns the rest away.
            Collections.shuffle(shuffled);
            return shuffled;
        });
    }

    /** @param order the order in which nodes are tried (tests fix it) */
    SandboxClient(Vertx vertx, Membership membership, Metrics metrics, int circuitFailures, long circuitCooldownMs,
                  long replyMarginMs, LongSupplier clockMs, UnaryOperator<List<Member>> order) {
        this.order = Objects.requireNonNull(order);
        this.vertx = Objects.requireNonNull(vertx);
        this.membership = Objects.requireNonNull(membership);
        this.metrics = Objects.requireNonNull(metrics);
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
        String circuit = circuitName(call.tool());
        CircuitBreaker breaker = breakers.computeIfAbsent(circuit,
                k -> new CircuitBreaker(circuitFailures, circuitCooldownMs, clockMs));
        if (!breaker.tryAcquire()) {
            metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "circuit_open");
            return Future.failedFuture(new SandboxUnavailable(call.tool() + " is paused: the sandbox failed it "
                    + circuitFailures + " times in a row; it is tried again within " + circuitCooldownMs / 1000 + " s"));
        }
        List<Member> candidates = order.apply(nodes());
        return attempt(call, retrySafe, candidates, 0, new Tally()).andThen(done -> {
            if (done.succeeded()) {
                breaker.onSuccess();
                metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "replied");
            } else {
                if (breaker.onFailure()) {
                    LOG.warn("sandbox circuit opened [tool: {}, failures: {}]", circuit, circuitFailures);
                }
                metrics.increment("clawfleet.sandbox.calls", "tool", circuit, "outcome", "failed");
            }
        });
    }

    /** What the attempts so far ran into, for the message when none succeeds. */
    private static final class Tally {
        int busy;
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
                    tally.busy++;
                    return attempt(call, retrySafe, candidates, index + 1, tally);
                }
                case LOST -> {
                    tally.lost++;
                    metrics.increment("clawfleet.sandbox.lost", "tool", circuitName(call.tool()));
                    if (!retrySafe) {
                        return Future.failedFuture(new SandboxUnavailable("the sandbox node running " + call.tool()
                                + " stopped answering (" + kind.describe(failure) + "); it was not run again because it "
                                + "may have reached the network. Check the result before trying again"));
                    }
                    return attempt(call, retrySafe, candidates, index + 1, tally);
                }
                default -> {
                    return Future.failedFuture(new SandboxUnavailable(call.tool() + " failed on sandbox node " + nodeId
                            + ": " + kind.describe(failure)));
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
        DeliveryOptions options = new DeliveryOptions().setSendTimeout(call.timeoutMs() + replyMarginMs);
        vertx.eventBus().<ToolResult>request(Addresses.sandboxExecute(nodeId), call, options)
                .onComplete(done -> {
                    if (done.succeeded()) {
                        reply.tryComplete(done.result().body());
                    } else {
                        reply.tryFail(done.cause());
                    }
                });
        return reply.future().andThen(done -> waiting.remove(reply));
    }

    private void nodeLeft(String nodeId) {
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
        /** The node refused before starting the run (busy, stopping, no longer listening). */
        NOT_STARTED,
        /** The node may have started and then died or went silent. */
        LOST,
        /** The node answered with an error of its own. */
        FAILED;

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

    private static Failure classify(Throwable failure) {
        if (failure instanceof NodeLost) {
            return Failure.LOST;
        }
        if (failure instanceof ReplyException reply) {
            return switch (reply.failureType()) {
                case NO_HANDLERS -> Failure.NOT_STARTED;
                case TIMEOUT -> Failure.LOST;
                case RECIPIENT_FAILURE, ERROR -> reply.failureCode() == BUSY || reply.failureCode() == STOPPING
                        ? Failure.NOT_STARTED : Failure.FAILED;
            };
        }
        return Failure.FAILED;
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

    /** Skill tools share one circuit: tool names of tenants' skills must not grow a map without bound. */
    static String circuitName(String tool) {
        return switch (tool) {
            case "shell_exec", "web_fetch", "web_search" -> tool;
            default -> "code_skill";
        };
    }
}
