package io.clawfleet.scheduler;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.TaskFiringStore;
import io.clawfleet.shared.store.TaskFiringStore.Fired;
import io.clawfleet.shared.tracing.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The clock of a scheduler node. Every tick it fires what is due, one claim (one short transaction)
 * at a time, a bounded batch at a time, and wakes the owner of each chat a firing entered. Everything runs on the role's event loop, and nothing blocks it: the claims are
 * reactive SQL. Exactly-once does not depend on this class but on {@link TaskFiringStore}: any
 * number of these may run on any number of nodes.
 */
public final class TaskScheduler {

    private static final Logger LOG = LoggerFactory.getLogger(TaskScheduler.class);
    private static final long STOP_TIMEOUT_MS = 10_000;
    /** How long a task whose chat was found held is left for other schedulers and later ticks. */
    private static final long PASS_OVER_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final Vertx vertx;
    private final String nodeId;
    private final TaskFiringStore firings;
    private final ClawfleetConfig.Scheduler config;
    private final Metrics metrics;
    private final Clock clock;
    private final Tracing tracing;
    private long timer = -1;
    private boolean busy;
    private boolean stopping;
    private Promise<Void> idle;
    /** Task id to the System.nanoTime() until which this node does not claim it. */
    private final Map<String, Long> passingOver = new HashMap<>();

    public TaskScheduler(Vertx vertx, String nodeId, TaskFiringStore firings, ClawfleetConfig.Scheduler config,
                         Metrics metrics, Clock clock) {
        this(vertx, nodeId, firings, config, metrics, clock, Tracing.off());
    }

    /** As above, each firing a span {@code clawfleet task fire} whose trace the task's message and turn go on. */
    public TaskScheduler(Vertx vertx, String nodeId, TaskFiringStore firings, ClawfleetConfig.Scheduler config,
                         Metrics metrics, Clock clock, Tracing tracing) {
        this.tracing = Objects.requireNonNull(tracing);
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.firings = Objects.requireNonNull(firings);
        this.config = Objects.requireNonNull(config);
        this.metrics = Objects.requireNonNull(metrics);
        this.clock = Objects.requireNonNull(clock);
    }

    /** Starts ticking; call on the context the scheduler is to run on. */
    public void start() {
        timer = vertx.setPeriodic(config.tickMs(), id -> tick());
        LOG.info("scheduler started [node: {}, tick: {} ms, batch: {}]", nodeId, config.tickMs(), config.batchSize());
    }

    /** Stops ticking and completes when the claim in flight, if any, has committed or failed (at most 10 s). */
    public Future<Void> stop() {
        stopping = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        if (!busy) {
            return Future.succeededFuture();
        }
        idle = Promise.promise();
        return idle.future().timeout(STOP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private void tick() {
        if (busy || stopping) {
            return;
        }
        busy = true;
        batch(0);
    }

    private void batch(int fired) {
        if (stopping) {
            done();
        } else if (fired == config.batchSize()) {
            // More may be due (a backlog after downtime): go on at once, but as a new task on the loop.
            vertx.runOnContext(v -> batch(0));
        } else {
            long started = System.nanoTime();
            Future<Optional<Fired>> claim;
            // The span starts once a task is claimed (a tick with nothing due makes none) and ends with the commit.
            Span[] span = {null};
            try {
                claim = firings.fireNext(clock.instant(), passingOver(), task -> {
                    if (!tracing.on()) {
                        return null;
                    }
                    span[0] = tracing.tracer().spanBuilder("clawfleet task fire").setSpanKind(SpanKind.PRODUCER)
                            .setAttribute(Tracing.TENANT, task.tenantId()).setAttribute(Tracing.BOT, task.botId())
                            .setAttribute(Tracing.CHANNEL, task.channel()).setAttribute(Tracing.CHAT, task.chatKey())
                            .setAttribute(Tracing.NODE, nodeId).setAttribute("clawfleet.task", task.id()).startSpan();
                    return tracing.traceparent(span[0]);
                });
            } catch (RuntimeException e) {
                claim = Future.failedFuture(e);
            }
            claim.onComplete(result -> {
                if (span[0] != null) {
                    if (result.failed()) {
                        span[0].setStatus(StatusCode.ERROR, String.valueOf(result.cause().getMessage()));
                    } else {
                        result.result().ifPresent(done -> span[0].setAttribute("clawfleet.task.run", done.runStatus()));
                    }
                    span[0].end();
                }
                metrics.recordMillis("clawfleet.scheduler.claim", (System.nanoTime() - started) / 1e6, "node", nodeId);
                if (result.failed() && result.cause() instanceof TaskFiringStore.TaskHeldException held) {
                    // Its chat is held by a long transaction: fire what else is due, come back to it later.
                    metrics.increment("clawfleet.scheduler.held", "node", nodeId);
                    LOG.warn("passing over a task for {} s [node: {}]: {}", TimeUnit.NANOSECONDS.toSeconds(PASS_OVER_NANOS), nodeId,
                            held.getMessage());
                    passingOver.put(held.taskId(), System.nanoTime() + PASS_OVER_NANOS);
                    batch(fired + 1);
                    return;
                }
                if (result.failed()) {
                    metrics.increment("clawfleet.scheduler.failures", "node", nodeId);
                    LOG.warn("claiming due tasks failed, retrying next tick [node: {}]: {}", nodeId, result.cause().toString());
                    done();
                    return;
                }
                Optional<Fired> next = result.result();
                if (next.isEmpty()) {
                    done();
                    return;
                }
                try {
                    announce(next.get());
                } catch (RuntimeException e) {
                    // The firing is committed; the owner's inbox sweep finds its message. What must not happen is
                    // this node staying "busy" for good and never firing again while /readyz says it is fine.
                    LOG.warn("waking the owner of a fired task's chat failed [node: {}, task: {}]", nodeId, next.get().task().id(), e);
                }
                batch(fired + 1);
            });
        }
    }

    private Set<String> passingOver() {
        long now = System.nanoTime();
        passingOver.values().removeIf(until -> until - now <= 0);
        return passingOver.keySet();
    }

    private void done() {
        busy = false;
        if (idle != null) {
            idle.tryComplete();
        }
    }

    /** After the commit: wake the chat's owner (best effort; its inbox sweep finds the message anyway). */
    private void announce(Fired fired) {
        metrics.increment("clawfleet.scheduler.firings", "node", nodeId, "status", fired.runStatus());
        if (fired.message() != null) {
            vertx.eventBus().publish(Addresses.partitionWake(fired.message().partition()), new WakeUp(fired.message()));
        }
        if (fired.error() == null) {
            LOG.debug("task fired [tenant: {}, task: {}, due: {}, node: {}]", fired.task().tenantId(), fired.task().id(),
                    fired.task().dueAt(), nodeId);
        } else {
            LOG.info("task run {} [tenant: {}, task: {}, due: {}, node: {}]: {}", fired.runStatus(), fired.task().tenantId(),
                    fired.task().id(), fired.task().dueAt(), nodeId, fired.error());
        }
    }
}
