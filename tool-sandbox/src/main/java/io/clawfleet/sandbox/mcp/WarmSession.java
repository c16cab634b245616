package io.clawfleet.sandbox.mcp;

import io.clawfleet.sandbox.exec.LongRun;
import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.exec.SetupFailure;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One warm stdio MCP server of a {@link SessionKey}: started and initialized by its first call, then serving
 * calls one at a time over its stdin and stdout until it is stopped. A call waits for its turn at most until its
 * own deadline; a call that passes its deadline kills the session (the server may be stuck), and so does an answer
 * past the output cap or output that is not JSON-RPC. Whatever the server writes between calls (a notification) is
 * read with the next call's answer and counts against its cap. Stopped once, for the first reason given, and logged.
 */
final class WarmSession {

    /** Why a session stopped, as its log line says. */
    enum Stop {
        IDLE("idle"), MAX_LIFE("max-life"), CRASH("crash"), EVICTED("evicted"), TIMEOUT("timeout"), OUTPUT_CAP("output-cap"),
        BROKEN("broken"), NODE_STOP("node-stop");

        private final String id;

        Stop(String id) {
            this.id = id;
        }

        @Override
        public String toString() {
            return id;
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(WarmSession.class);
    /** How long a server that closed its output may take to exit, so its own exit code and last words are seen. */
    private static final long EXIT_GRACE_MS = 500;
    private static final ExecutorService EXCHANGES = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("mcp-session-call-", 0).factory());

    private final SessionKey key;
    private final ProcessSandbox processes;
    private final ProcessSandbox.Spec spec;
    private final long lifeMs;
    private final Runnable onStart;
    private final ReentrantLock turn = new ReentrantLock(true);
    private final AtomicReference<Stop> stopped = new AtomicReference<>();
    private final long created = System.nanoTime();
    private volatile LongRun run;
    private volatile long calls;
    /** Written only by the call holding {@link #turn}. */
    private McpChannel channel;
    /** Calls holding or waiting for this session; guarded by the pool ({@link WarmSessions}). */
    int users;
    /** When its last call ended ({@link System#nanoTime()}); guarded by the pool. */
    long lastUsed = created;

    /**
     * @param lifeMs  the server's hard wall clock (it is killed then, whatever it does)
     * @param onStart told each time the server process starts
     */
    WarmSession(SessionKey key, ProcessSandbox processes, ProcessSandbox.Spec spec, long lifeMs, Runnable onStart) {
        this.key = key;
        this.processes = processes;
        this.spec = spec;
        this.lifeMs = lifeMs;
        this.onStart = onStart;
    }

    /**
     * Blocking. Sends one request and reads its answer, starting the server first when this is the session's first call.
     *
     * @param deadline  {@link System#nanoTime()} past which the call gives up: its wait for its turn, the server's start
     *                  and the exchange together
     * @param timeoutMs the call's limit, as its answer states it
     * @return the answer; null when the request was never sent because the session had ended (a fresh one may take it)
     * @throws SetupFailure when the sandbox could not start the server, or no longer works on this node
     */
    McpAnswer call(String method, JsonObject params, long deadline, long timeoutMs) throws SetupFailure, InterruptedException {
        if (!turn.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            return notSent(method, timeoutMs);
        }
        try {
            if (stopped.get() != null) {
                return null;
            }
            if (run == null) {
                McpAnswer failed = start(deadline);
                if (failed != null || stopped.get() != null) {
                    return failed;
                }
            } else if (!run.alive()) {
                stop(Stop.CRASH);
                return null;
            } else if (deadline - System.nanoTime() <= 0) {
                // Its turn came as its time ran out.
                return notSent(method, timeoutMs);
            }
            return request(method, params, deadline);
        } finally {
            turn.unlock();
        }
    }

    private static McpAnswer notSent(String method, long timeoutMs) {
        return new McpAnswer(null, method, "was busy with another call of this bot for all of this call's " + timeoutMs
                + " ms; this call was not sent", true, false, -1, "");
    }

    /** Starts and initializes the server: null when it is ready, else the answer of the call that started it. */
    private McpAnswer start(long deadline) throws SetupFailure, InterruptedException {
        LongRun started;
        try {
            started = processes.open(spec, lifeMs);
        } catch (SetupFailure | RuntimeException e) {
            // Never started: nothing to kill or log.
            stopped.compareAndSet(null, Stop.BROKEN);
            throw e;
        }
        run = started;
        if (stopped.get() != null) {
            // Stopped (the node stopping) while it started: stop() may not have seen it.
            started.close();
            return null;
        }
        onStart.run();
        LOG.info("mcp session started [tenant: {}, bot: {}, server: {}, pid: {}]", key.tenantId(), key.botId(), key.server(),
                started.pid());
        channel = new McpChannel(started.stdout(), started.stdin());
        started.newMessage();
        JsonObject initialized;
        try {
            initialized = within(deadline, channel::initialize);
        } catch (TimeoutException e) {
            stop(Stop.TIMEOUT);
            return new McpAnswer(null, "initialize", null, true, false, started.exitCode(), started.stderr());
        }
        if (initialized != null && !started.outputLimited()) {
            return null;
        }
        McpAnswer failed = broken("initialize");
        // A server that exits at once may have been stopped by the sandbox itself, not by its own fault.
        started.checkStarted();
        return failed;
    }

    private McpAnswer request(String method, JsonObject params, long deadline) throws InterruptedException {
        LongRun current = run;
        current.newMessage();
        long mark = current.stderrMark();
        long sentBefore = channel.sent();
        JsonObject result;
        try {
            result = within(deadline, () -> channel.exchange(method, params));
        } catch (TimeoutException e) {
            stop(Stop.TIMEOUT);
            return new McpAnswer(null, method, null, true, false, current.exitCode(), current.stderr());
        }
        if (result != null && !current.outputLimited()) {
            calls++;
            return new McpAnswer(result, method, null, false, false, -1, current.stderrSince(mark));
        }
        if (channel.sent() == sentBefore) {
            // Its input is gone (it died between calls): the request never reached it, so a fresh server may take it.
            stop(Stop.CRASH);
            return null;
        }
        if (!current.outputLimited() && channel.usable()) {
            // An error answer: the server is fine and stays.
            calls++;
            return new McpAnswer(null, method, channel.failure(), false, false, -1, current.stderrSince(mark));
        }
        return broken(method);
    }

    /** The answer of a call during which the server broke (exited, went past the cap, wrote nonsense); it is stopped. */
    private McpAnswer broken(String stage) throws InterruptedException {
        LongRun current = run;
        boolean limited = current.outputLimited();
        if (current.outputEnded() || !current.alive()) {
            current.awaitExit(EXIT_GRACE_MS);
        }
        int exit = current.exitCode();
        stop(limited ? Stop.OUTPUT_CAP : exit >= 0 ? Stop.CRASH : Stop.BROKEN);
        return new McpAnswer(null, stage, channel.failure(), false, limited, exit, current.stderr());
    }

    /** Runs one exchange on a virtual thread of its own, waiting for it until the deadline. */
    private JsonObject within(long deadline, Supplier<JsonObject> exchange) throws TimeoutException, InterruptedException {
        Future<JsonObject> future = EXCHANGES.submit(exchange::get);
        try {
            return future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            // A fault of this client, not of the server: the connection is in an unknown state.
            stop(Stop.BROKEN);
            throw e.getCause() instanceof RuntimeException failure ? failure : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            // Only the node stopping interrupts the thread of a call; the exchange in flight goes with the session.
            stop(Stop.NODE_STOP);
            throw e;
        }
    }

    /** Stops the session for {@code why} unless it was stopped already: kills the server and says so. */
    void stop(Stop why) {
        if (!stopped.compareAndSet(null, why)) {
            return;
        }
        LongRun current = run;
        if (current == null) {
            return;
        }
        current.close();
        LOG.info("mcp session stopped [tenant: {}, bot: {}, server: {}, reason: {}, age ms: {}, calls: {}]", key.tenantId(),
                key.botId(), key.server(), why, ageMs(), calls);
    }

    SessionKey key() {
        return key;
    }

    boolean stopped() {
        return stopped.get() != null;
    }

    /** Whether its server was started and has exited since. */
    boolean exited() {
        LongRun current = run;
        return current != null && !current.alive();
    }

    /** Whether its server runs (started, not stopped). */
    boolean running() {
        return run != null && stopped.get() == null;
    }

    /** Milliseconds since the session was made. */
    long ageMs() {
        return (System.nanoTime() - created) / 1_000_000;
    }

    long calls() {
        return calls;
    }

    /** The server's outermost process id, or -1 before it started. */
    long pid() {
        LongRun current = run;
        return current == null ? -1 : current.pid();
    }
}
